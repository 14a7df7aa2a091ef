import GrocerStorage

/// StockService's tables, numbered; a released migration is never edited, only followed.
///
/// `held` is the sum of open reservations per product, kept in the same transaction as the
/// reservation rows, so "available = on_hand − held" is one read on the hot path.
enum StockSchema {
  static let migrations: [Migration] = [
    Migration(
      version: 1, name: "hubs, products, reservations",
      sql: """
        CREATE TABLE hubs (
          id TEXT PRIMARY KEY,
          body TEXT NOT NULL,
          version INTEGER NOT NULL,
          updated_at REAL NOT NULL
        );
        CREATE TABLE products (
          hub TEXT NOT NULL REFERENCES hubs(id),
          sku TEXT NOT NULL,
          name TEXT NOT NULL,
          currency TEXT NOT NULL,
          price INTEGER NOT NULL,
          deposit INTEGER,
          unit_price TEXT,
          on_hand INTEGER NOT NULL DEFAULT 0 CHECK (on_hand >= 0),
          held INTEGER NOT NULL DEFAULT 0 CHECK (held >= 0),
          version INTEGER NOT NULL,
          updated_at REAL NOT NULL,
          PRIMARY KEY (hub, sku)
        ) WITHOUT ROWID;
        CREATE TABLE reservations (
          order_id TEXT PRIMARY KEY,
          hub TEXT NOT NULL,
          lines TEXT NOT NULL,
          status TEXT NOT NULL,
          created_at REAL NOT NULL,
          expires_at REAL NOT NULL,
          finished_at REAL
        );
        CREATE INDEX reservations_open ON reservations(status, expires_at);
        CREATE TABLE reservation_lines (
          order_id TEXT NOT NULL REFERENCES reservations(order_id),
          sku TEXT NOT NULL,
          quantity INTEGER NOT NULL,
          PRIMARY KEY (order_id, sku)
        ) WITHOUT ROWID;
        CREATE TABLE stock_adjustments (
          id INTEGER PRIMARY KEY AUTOINCREMENT,
          hub TEXT NOT NULL,
          sku TEXT NOT NULL,
          delta INTEGER NOT NULL,
          reason TEXT NOT NULL,
          actor TEXT NOT NULL,
          at REAL NOT NULL
        );
        """),
    Migration(
      version: 2, name: "why a reservation was released",
      sql: """
        ALTER TABLE reservations ADD COLUMN release_reason TEXT;
        """),
  ]
}
