import GrocerStorage

/// TrackingService's tables, numbered; a released migration is never edited, only followed.
///
/// One row per order: its stage (`status`, `note`, `resume_stage`), the assigned rider and the
/// newest fix, the destination, the current ETA, and `version`, raised by one on every accepted
/// change in the same transaction as the change's `tracking.updated` outbox row.
package enum TrackingSchema {
  package static let migrations: [Migration] = [
    Migration(
      version: 1, name: "tracking",
      sql: """
        CREATE TABLE tracking (
          order_id TEXT PRIMARY KEY,
          user_id TEXT NOT NULL,
          hub TEXT NOT NULL,
          status TEXT NOT NULL,
          note TEXT,
          resume_stage TEXT,
          rider_id TEXT,
          rider_name TEXT,
          fix_lat REAL,
          fix_lng REAL,
          fix_recorded_at REAL,
          dest_lat REAL,
          dest_lng REAL,
          eta_earliest REAL,
          eta_latest REAL,
          version INTEGER NOT NULL,
          generated_at REAL NOT NULL,
          placed_at REAL NOT NULL,
          stage_since REAL NOT NULL,
          finished_at REAL,
          la_token TEXT,
          la_token_version INTEGER NOT NULL DEFAULT 0
        );
        CREATE INDEX tracking_by_user ON tracking(user_id, placed_at);
        CREATE INDEX tracking_running_late ON tracking(eta_latest) WHERE finished_at IS NULL;
        """)
  ]
}
