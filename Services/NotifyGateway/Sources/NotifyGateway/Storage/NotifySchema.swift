import GrocerStorage

/// NotifyGateway's tables, numbered; a released migration is never edited, only followed.
///
/// `activities` is one Live Activity per order: its push token, what its card shows as far as
/// we know, its priority-10 budget window, whether it ended. `pending` holds, per order, only
/// the newest tracking snapshot not yet handled (a newer one replaces it: coalescing).
/// `alerts` queues alert pushes, one row per device.
enum NotifySchema {
  static let migrations: [Migration] = [
    Migration(
      version: 1, name: "devices, activities, pending updates, alerts",
      sql: """
        CREATE TABLE devices (
          token TEXT PRIMARY KEY,
          user_id TEXT NOT NULL,
          created_at REAL NOT NULL
        );
        CREATE INDEX devices_by_user ON devices(user_id);
        CREATE TABLE activities (
          order_id TEXT PRIMARY KEY,
          user_id TEXT NOT NULL,
          token TEXT,
          last_version INTEGER NOT NULL DEFAULT 0,
          shown TEXT,
          ended INTEGER NOT NULL DEFAULT 0,
          window_start REAL,
          high_used INTEGER NOT NULL DEFAULT 0,
          started_at REAL NOT NULL
        );
        CREATE TABLE pending (
          order_id TEXT PRIMARY KEY,
          user_id TEXT NOT NULL,
          version INTEGER NOT NULL,
          snapshot TEXT NOT NULL,
          occurred_at REAL NOT NULL,
          enqueued_at REAL NOT NULL,
          attempts INTEGER NOT NULL DEFAULT 0,
          not_before REAL NOT NULL,
          expires_at REAL NOT NULL
        );
        CREATE INDEX pending_due ON pending(not_before);
        CREATE TABLE alerts (
          seq INTEGER PRIMARY KEY AUTOINCREMENT,
          token TEXT NOT NULL,
          order_id TEXT NOT NULL,
          title TEXT NOT NULL,
          body TEXT NOT NULL,
          occurred_at REAL NOT NULL,
          attempts INTEGER NOT NULL DEFAULT 0,
          not_before REAL NOT NULL,
          expires_at REAL NOT NULL
        );
        CREATE INDEX alerts_due ON alerts(not_before);
        """),
    Migration(
      version: 2, name: "token versions, alert owners, sliding budget, expiry indexes",
      sql: """
        ALTER TABLE activities ADD COLUMN token_version INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE activities ADD COLUMN high_times TEXT;
        ALTER TABLE alerts ADD COLUMN user_id TEXT;
        CREATE INDEX pending_expiry ON pending(expires_at);
        CREATE INDEX alerts_expiry ON alerts(expires_at);
        """),
    Migration(
      version: 3, name: "the last push's timestamp per activity",
      sql: """
        ALTER TABLE activities ADD COLUMN last_timestamp INTEGER NOT NULL DEFAULT 0;
        """),
  ]
}
