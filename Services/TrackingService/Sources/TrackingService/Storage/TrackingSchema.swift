import GrocerContracts
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
        """,
      // PostgreSQL's REAL has 4 bytes (epoch seconds would lose minutes) and its INTEGER 4.
      postgres: """
        CREATE TABLE tracking (
          order_id TEXT PRIMARY KEY,
          user_id TEXT NOT NULL,
          hub TEXT NOT NULL,
          status TEXT NOT NULL,
          note TEXT,
          resume_stage TEXT,
          rider_id TEXT,
          rider_name TEXT,
          fix_lat DOUBLE PRECISION,
          fix_lng DOUBLE PRECISION,
          fix_recorded_at DOUBLE PRECISION,
          dest_lat DOUBLE PRECISION,
          dest_lng DOUBLE PRECISION,
          eta_earliest DOUBLE PRECISION,
          eta_latest DOUBLE PRECISION,
          version BIGINT NOT NULL,
          generated_at DOUBLE PRECISION NOT NULL,
          placed_at DOUBLE PRECISION NOT NULL,
          stage_since DOUBLE PRECISION NOT NULL,
          finished_at DOUBLE PRECISION,
          la_token TEXT,
          la_token_version BIGINT NOT NULL DEFAULT 0
        );
        CREATE INDEX tracking_by_user ON tracking(user_id, placed_at);
        CREATE INDEX tracking_running_late ON tracking(eta_latest) WHERE finished_at IS NULL;
        """),
    // Events written before subjects named their kind and not yet relayed: an order's tracking
    // and its Live Activity token had one subject (the order id) and two counters.
    .prefixingOutboxSubjects(
      version: 2,
      kinds: [(TrackingEventType.updated, "tracking"), (TrackingEventType.liveActivityToken, "liveActivity")]),
    // What the lock screen shows, from NotifyGateway's push outcomes (`LiveActivityDelivery`).
    Migration(
      version: 3, name: "live activity delivery",
      sql: """
        ALTER TABLE tracking ADD COLUMN la_pushed_at REAL;
        ALTER TABLE tracking ADD COLUMN la_stale_at REAL;
        ALTER TABLE tracking ADD COLUMN la_ended INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE tracking ADD COLUMN la_failed_at REAL;
        ALTER TABLE tracking ADD COLUMN la_gone INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE tracking ADD COLUMN la_outcome_at REAL;
        ALTER TABLE tracking ADD COLUMN la_outcome_version INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE tracking ADD COLUMN la_revision INTEGER NOT NULL DEFAULT 0;
        """,
      // PostgreSQL's REAL has 4 bytes and its INTEGER 4, as in version 1.
      postgres: """
        ALTER TABLE tracking ADD COLUMN la_pushed_at DOUBLE PRECISION;
        ALTER TABLE tracking ADD COLUMN la_stale_at DOUBLE PRECISION;
        ALTER TABLE tracking ADD COLUMN la_ended BIGINT NOT NULL DEFAULT 0;
        ALTER TABLE tracking ADD COLUMN la_failed_at DOUBLE PRECISION;
        ALTER TABLE tracking ADD COLUMN la_gone BIGINT NOT NULL DEFAULT 0;
        ALTER TABLE tracking ADD COLUMN la_outcome_at DOUBLE PRECISION;
        ALTER TABLE tracking ADD COLUMN la_outcome_version BIGINT NOT NULL DEFAULT 0;
        ALTER TABLE tracking ADD COLUMN la_revision BIGINT NOT NULL DEFAULT 0;
        """),
    // Each hub's current notice (`hub.notice`), shown in its running orders' snapshots.
    Migration(
      version: 4, name: "hub notices",
      sql: """
        CREATE TABLE hub_notices (
          hub TEXT PRIMARY KEY,
          notice_id TEXT NOT NULL,
          title TEXT NOT NULL,
          body TEXT NOT NULL,
          posted_at REAL NOT NULL,
          expires_at REAL NOT NULL,
          sequence INTEGER NOT NULL
        );
        """,
      postgres: """
        CREATE TABLE hub_notices (
          hub TEXT PRIMARY KEY,
          notice_id TEXT NOT NULL,
          title TEXT NOT NULL,
          body TEXT NOT NULL,
          posted_at DOUBLE PRECISION NOT NULL,
          expires_at DOUBLE PRECISION NOT NULL,
          sequence BIGINT NOT NULL
        );
        """),
  ]
}
