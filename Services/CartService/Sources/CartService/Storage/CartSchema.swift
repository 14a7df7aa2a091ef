import GrocerStorage

/// CartService's tables, numbered; a released migration is never edited, only followed.
///
/// `hubs` and `products` are the local copy of StockService's catalogue (fed by its events and,
/// when empty, by the catalogue request); `version` is the event `sequence` last applied, so an
/// older or replayed event changes nothing.
enum CartSchema {
  static let migrations: [Migration] = [
    Migration(
      version: 1, name: "catalogue copy, carts, promotions",
      sql: """
        CREATE TABLE hubs (
          id TEXT PRIMARY KEY,
          body TEXT NOT NULL,
          version INTEGER NOT NULL
        );
        CREATE TABLE products (
          hub TEXT NOT NULL,
          sku TEXT NOT NULL,
          name TEXT NOT NULL,
          currency TEXT NOT NULL,
          price INTEGER NOT NULL,
          deposit INTEGER,
          available INTEGER NOT NULL,
          version INTEGER NOT NULL,
          PRIMARY KEY (hub, sku)
        ) WITHOUT ROWID;
        CREATE TABLE carts (
          user_id TEXT NOT NULL,
          hub TEXT NOT NULL,
          version INTEGER NOT NULL,
          promo_code TEXT,
          checkout_version INTEGER,
          checkout_at REAL,
          updated_at REAL NOT NULL,
          PRIMARY KEY (user_id, hub)
        ) WITHOUT ROWID;
        CREATE INDEX carts_by_hub ON carts(hub);
        CREATE INDEX carts_by_promo ON carts(promo_code) WHERE promo_code IS NOT NULL;
        CREATE TABLE cart_lines (
          user_id TEXT NOT NULL,
          hub TEXT NOT NULL,
          sku TEXT NOT NULL,
          quantity INTEGER NOT NULL CHECK (quantity BETWEEN 1 AND 99),
          position INTEGER NOT NULL,
          PRIMARY KEY (user_id, hub, sku)
        ) WITHOUT ROWID;
        CREATE INDEX cart_lines_by_product ON cart_lines(hub, sku);
        CREATE TABLE cart_adjustments (
          user_id TEXT NOT NULL,
          hub TEXT NOT NULL,
          version INTEGER NOT NULL,
          seq INTEGER NOT NULL,
          kind TEXT NOT NULL,
          sku TEXT,
          quantity INTEGER,
          from_units INTEGER,
          to_units INTEGER,
          currency TEXT,
          code TEXT,
          PRIMARY KEY (user_id, hub, version, seq)
        ) WITHOUT ROWID;
        CREATE TABLE promos (
          code TEXT PRIMARY KEY,
          body TEXT NOT NULL,
          valid_until REAL,
          version INTEGER NOT NULL
        );
        CREATE TABLE catalogue_sync (
          id INTEGER PRIMARY KEY CHECK (id = 1),
          completed_at REAL NOT NULL
        );
        """,
      // PostgreSQL: 8-byte numbers (its REAL and INTEGER are 4), no WITHOUT ROWID.
      postgres: """
        CREATE TABLE hubs (
          id TEXT PRIMARY KEY,
          body TEXT NOT NULL,
          version BIGINT NOT NULL
        );
        CREATE TABLE products (
          hub TEXT NOT NULL,
          sku TEXT NOT NULL,
          name TEXT NOT NULL,
          currency TEXT NOT NULL,
          price BIGINT NOT NULL,
          deposit BIGINT,
          available BIGINT NOT NULL,
          version BIGINT NOT NULL,
          PRIMARY KEY (hub, sku)
        );
        CREATE TABLE carts (
          user_id TEXT NOT NULL,
          hub TEXT NOT NULL,
          version BIGINT NOT NULL,
          promo_code TEXT,
          checkout_version BIGINT,
          checkout_at DOUBLE PRECISION,
          updated_at DOUBLE PRECISION NOT NULL,
          PRIMARY KEY (user_id, hub)
        );
        CREATE INDEX carts_by_hub ON carts(hub);
        CREATE INDEX carts_by_promo ON carts(promo_code) WHERE promo_code IS NOT NULL;
        CREATE TABLE cart_lines (
          user_id TEXT NOT NULL,
          hub TEXT NOT NULL,
          sku TEXT NOT NULL,
          quantity BIGINT NOT NULL CHECK (quantity BETWEEN 1 AND 99),
          position BIGINT NOT NULL,
          PRIMARY KEY (user_id, hub, sku)
        );
        CREATE INDEX cart_lines_by_product ON cart_lines(hub, sku);
        CREATE TABLE cart_adjustments (
          user_id TEXT NOT NULL,
          hub TEXT NOT NULL,
          version BIGINT NOT NULL,
          seq BIGINT NOT NULL,
          kind TEXT NOT NULL,
          sku TEXT,
          quantity BIGINT,
          from_units BIGINT,
          to_units BIGINT,
          currency TEXT,
          code TEXT,
          PRIMARY KEY (user_id, hub, version, seq)
        );
        CREATE TABLE promos (
          code TEXT PRIMARY KEY,
          body TEXT NOT NULL,
          valid_until DOUBLE PRECISION,
          version BIGINT NOT NULL
        );
        CREATE TABLE catalogue_sync (
          id BIGINT PRIMARY KEY CHECK (id = 1),
          completed_at DOUBLE PRECISION NOT NULL
        );
        """),
    // A count change reads only the lines holding more than the new count (`StockChange.holdersAbove`):
    // with the quantity in the index that is a range seek, not a walk over every cart line of a
    // busy product (measured: ~30% of CartService's CPU under the order benchmark went to it).
    Migration(
      version: 2, name: "cart lines by product and quantity",
      sql: """
        DROP INDEX cart_lines_by_product;
        CREATE INDEX cart_lines_by_product ON cart_lines(hub, sku, quantity);
        """),
  ]
}
