import GrocerContracts
import GrocerStorage

/// OrderService's tables, numbered; a released migration is never edited, only followed.
///
/// `attempts` is the idempotency record: one row per (user, key), inserted atomically before
/// anything else happens, with the body's fingerprint and, once there is one, the answer to
/// replay. `orders` holds the saga: `step` is the last recovery point reached, so a restart
/// carries each unfinished order on from there.
enum OrderSchema {
  static let migrations: [Migration] = [
    Migration(
      version: 1, name: "attempts and orders",
      sql: """
        CREATE TABLE attempts (
          user_id TEXT NOT NULL,
          idempotency_key TEXT NOT NULL,
          fingerprint TEXT NOT NULL,
          order_id TEXT NOT NULL UNIQUE,
          response_status INTEGER,
          response_body BLOB,
          response_type TEXT,
          created_at REAL NOT NULL,
          expires_at REAL NOT NULL,
          PRIMARY KEY (user_id, idempotency_key)
        ) WITHOUT ROWID;
        CREATE INDEX attempts_by_expiry ON attempts(expires_at);
        CREATE TABLE orders (
          order_id TEXT PRIMARY KEY,
          user_id TEXT NOT NULL,
          idempotency_key TEXT NOT NULL,
          hub TEXT NOT NULL,
          cart_version INTEGER NOT NULL,
          payment_method TEXT NOT NULL,
          payment_token TEXT,
          deliver_lat REAL,
          deliver_lng REAL,
          correlation_id TEXT,
          step TEXT NOT NULL,
          status TEXT NOT NULL,
          cart BLOB,
          reservation_expires_at REAL,
          payment_id TEXT,
          action_type TEXT,
          action_url TEXT,
          message TEXT,
          charging_since REAL,
          action_deadline REAL,
          next_attempt_at REAL NOT NULL,
          retries INTEGER NOT NULL DEFAULT 0,
          created_at REAL NOT NULL,
          updated_at REAL NOT NULL
        );
        CREATE INDEX orders_unfinished ON orders(next_attempt_at)
          WHERE step IN ('received', 'priced', 'reserved', 'charging', 'needsAction');
        CREATE UNIQUE INDEX orders_by_payment ON orders(payment_id) WHERE payment_id IS NOT NULL;
        CREATE INDEX orders_by_user ON orders(user_id, created_at);
        """,
      // PostgreSQL: 8-byte numbers (its REAL and INTEGER are 4), BYTEA for bytes, no WITHOUT ROWID.
      postgres: """
        CREATE TABLE attempts (
          user_id TEXT NOT NULL,
          idempotency_key TEXT NOT NULL,
          fingerprint TEXT NOT NULL,
          order_id TEXT NOT NULL UNIQUE,
          response_status BIGINT,
          response_body BYTEA,
          response_type TEXT,
          created_at DOUBLE PRECISION NOT NULL,
          expires_at DOUBLE PRECISION NOT NULL,
          PRIMARY KEY (user_id, idempotency_key)
        );
        CREATE INDEX attempts_by_expiry ON attempts(expires_at);
        CREATE TABLE orders (
          order_id TEXT PRIMARY KEY,
          user_id TEXT NOT NULL,
          idempotency_key TEXT NOT NULL,
          hub TEXT NOT NULL,
          cart_version BIGINT NOT NULL,
          payment_method TEXT NOT NULL,
          payment_token TEXT,
          deliver_lat DOUBLE PRECISION,
          deliver_lng DOUBLE PRECISION,
          correlation_id TEXT,
          step TEXT NOT NULL,
          status TEXT NOT NULL,
          cart BYTEA,
          reservation_expires_at DOUBLE PRECISION,
          payment_id TEXT,
          action_type TEXT,
          action_url TEXT,
          message TEXT,
          charging_since DOUBLE PRECISION,
          action_deadline DOUBLE PRECISION,
          next_attempt_at DOUBLE PRECISION NOT NULL,
          retries BIGINT NOT NULL DEFAULT 0,
          created_at DOUBLE PRECISION NOT NULL,
          updated_at DOUBLE PRECISION NOT NULL
        );
        CREATE INDEX orders_unfinished ON orders(next_attempt_at)
          WHERE step IN ('received', 'priced', 'reserved', 'charging', 'needsAction');
        CREATE UNIQUE INDEX orders_by_payment ON orders(payment_id) WHERE payment_id IS NOT NULL;
        CREATE INDEX orders_by_user ON orders(user_id, created_at);
        """),
    // Who drives an order's saga now, and until when that claim holds: replicas on one database
    // never drive one order at once (`OrderStore.claim`).
    Migration(
      version: 2, name: "drive claims",
      sql: """
        ALTER TABLE orders ADD COLUMN driver TEXT;
        ALTER TABLE orders ADD COLUMN driven_until REAL;
        """,
      postgres: """
        ALTER TABLE orders ADD COLUMN driver TEXT;
        ALTER TABLE orders ADD COLUMN driven_until DOUBLE PRECISION;
        """),
    // Events written before subjects named their kind and not yet relayed leave as `order/<id>`.
    .prefixingOutboxSubjects(
      version: 3,
      kinds: [OrderEventType.confirmed, OrderEventType.declined, OrderEventType.cancelled].map {
        ($0, "order")
      }),
  ]
}
