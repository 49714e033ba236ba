//! The catalog tables of the evidence domain (bundles, frozen packets,
//! exports), registered with the CAS as a [`Schema`].
//!
//! The migrations keep the order in which they first shipped, so catalogs
//! made before the CAS and the domain were separated open unchanged (their
//! `application_id` is 0).

use coffer_store::catalog::{Schema, OBJECTS_MIGRATION, REFS_MIGRATION};

/// Bundles and their artifacts.
const BUNDLES_MIGRATION: &str = r#"
-- One row per ingested bundle (one attempt of one run), denormalized for queries.
CREATE TABLE bundles (
    bundle_id       TEXT    PRIMARY KEY,
    manifest_digest TEXT    NOT NULL UNIQUE REFERENCES objects (digest),
    run_id          TEXT    NOT NULL,
    attempt_id      TEXT    NOT NULL UNIQUE,
    attempt_number  INTEGER NOT NULL CHECK (attempt_number >= 1),
    retry_of        TEXT,
    task_id         TEXT    NOT NULL,
    fixture_id      TEXT    NOT NULL,
    model_provider  TEXT    NOT NULL,
    model_id        TEXT    NOT NULL,
    harness_id      TEXT    NOT NULL,
    harness_version TEXT    NOT NULL,
    assessment_mode TEXT    NOT NULL,
    terminal_state  TEXT    NOT NULL,
    failure_class   TEXT    NOT NULL,
    stop_reason     TEXT    NOT NULL,
    qualification   TEXT    NOT NULL,
    ingested_ms     INTEGER NOT NULL
) STRICT;
CREATE INDEX bundles_by_task ON bundles (task_id);
CREATE INDEX bundles_by_run ON bundles (run_id);

CREATE TABLE bundle_artifacts (
    bundle_id     TEXT    NOT NULL REFERENCES bundles (bundle_id),
    artifact_id   TEXT    NOT NULL,
    relative_path TEXT    NOT NULL,
    digest        TEXT    NOT NULL REFERENCES objects (digest),
    size          INTEGER NOT NULL,
    kind          TEXT    NOT NULL,
    authority     TEXT    NOT NULL,
    sharing_class TEXT    NOT NULL,
    media_type    TEXT    NOT NULL,
    PRIMARY KEY (bundle_id, artifact_id)
) STRICT, WITHOUT ROWID;
CREATE INDEX bundle_artifacts_by_digest ON bundle_artifacts (digest);

CREATE TRIGGER bundles_insert_only BEFORE UPDATE ON bundles
BEGIN SELECT RAISE(ABORT, 'bundles rows are insert-only'); END;
CREATE TRIGGER bundles_never_deleted BEFORE DELETE ON bundles
BEGIN SELECT RAISE(ABORT, 'bundles rows are never deleted'); END;
CREATE TRIGGER bundle_artifacts_insert_only BEFORE UPDATE ON bundle_artifacts
BEGIN SELECT RAISE(ABORT, 'bundle_artifacts rows are insert-only'); END;
CREATE TRIGGER bundle_artifacts_never_deleted BEFORE DELETE ON bundle_artifacts
BEGIN SELECT RAISE(ABORT, 'bundle_artifacts rows are never deleted'); END;
"#;

/// Frozen fixtures and freeze records.
const FREEZES_MIGRATION: &str = r#"
-- The tree object (sorted member list) of each frozen fixture archive.
CREATE TABLE fixture_trees (
    archive_digest TEXT PRIMARY KEY REFERENCES objects (digest),
    tree_digest    TEXT NOT NULL REFERENCES objects (digest)
) STRICT, WITHOUT ROWID;

-- Freeze records, stored as objects; one row per distinct record.
CREATE TABLE freezes (
    record_digest    TEXT PRIMARY KEY REFERENCES objects (digest),
    packet_id        TEXT NOT NULL,
    packet_locator   TEXT NOT NULL,
    aggregate_digest TEXT NOT NULL,
    fixture_digest   TEXT NOT NULL,
    frozen_at        TEXT NOT NULL
) STRICT, WITHOUT ROWID;
CREATE INDEX freezes_by_packet ON freezes (packet_id);

CREATE TRIGGER fixture_trees_insert_only BEFORE UPDATE ON fixture_trees
BEGIN SELECT RAISE(ABORT, 'fixture_trees rows are insert-only'); END;
CREATE TRIGGER freezes_insert_only BEFORE UPDATE ON freezes
BEGIN SELECT RAISE(ABORT, 'freezes rows are insert-only'); END;
"#;

/// Published exports and their `sanitized_from` edges.
const EXPORTS_MIGRATION: &str = r#"
-- Published exports: one row per (export manifest, destination).
CREATE TABLE exports (
    manifest_digest        TEXT NOT NULL REFERENCES objects (digest),
    dest                   TEXT NOT NULL,
    source_bundle_id       TEXT NOT NULL,
    source_manifest_digest TEXT NOT NULL,
    sharing_class          TEXT NOT NULL,
    policy_digest          TEXT NOT NULL,
    created_ms             INTEGER NOT NULL,
    PRIMARY KEY (manifest_digest, dest)
) STRICT, WITHOUT ROWID;

-- The sanitized_from edges: each exported artifact and its source.
CREATE TABLE export_artifacts (
    manifest_digest TEXT NOT NULL,
    artifact_id     TEXT NOT NULL,
    relative_path   TEXT NOT NULL,
    digest          TEXT NOT NULL REFERENCES objects (digest),
    source_digest   TEXT NOT NULL,
    PRIMARY KEY (manifest_digest, artifact_id)
) STRICT, WITHOUT ROWID;
CREATE INDEX export_artifacts_by_source ON export_artifacts (source_digest);
CREATE INDEX export_artifacts_by_digest ON export_artifacts (digest);

CREATE TRIGGER exports_insert_only BEFORE UPDATE ON exports
BEGIN SELECT RAISE(ABORT, 'exports rows are insert-only'); END;
CREATE TRIGGER export_artifacts_insert_only BEFORE UPDATE ON export_artifacts
BEGIN SELECT RAISE(ABORT, 'export_artifacts rows are insert-only'); END;
"#;

/// Labels of bundles: catalog metadata, not part of the immutable bundle.
/// Each change is a row (a value set, or NULL for a removal) with its
/// time; a bundle's labels are the latest change of each key. The rows go
/// into the batch's record like any recorded table's, so `catalog
/// rebuild` and `mirror` keep them.
const LABELS_MIGRATION: &str = r#"
CREATE TABLE bundle_label_changes (
    bundle_id  TEXT    NOT NULL REFERENCES bundles (bundle_id),
    key        TEXT    NOT NULL,
    value      TEXT,
    changed_ms INTEGER NOT NULL,
    PRIMARY KEY (bundle_id, key, changed_ms)
) STRICT, WITHOUT ROWID;

CREATE TRIGGER bundle_label_changes_insert_only BEFORE UPDATE ON bundle_label_changes
BEGIN SELECT RAISE(ABORT, 'bundle_label_changes rows are insert-only'); END;
CREATE TRIGGER bundle_label_changes_never_deleted BEFORE DELETE ON bundle_label_changes
BEGIN SELECT RAISE(ABORT, 'bundle_label_changes rows are never deleted'); END;
"#;

/// Facts of bundles that queries need (`bundle::facts`), and the read-only
/// views that are the catalog's documented query interface
/// (docs/QUERY.md). The facts are derived from stored objects, so their
/// tables are not recorded: `catalog rebuild` and `mirror` derive them
/// again. Views are the stable names; the tables under them may change.
const FACTS_MIGRATION: &str = r#"
CREATE TABLE bundle_facts (
    bundle_id            TEXT    PRIMARY KEY REFERENCES bundles (bundle_id),
    verifier             TEXT    NOT NULL,
    assertions_passed    INTEGER,
    assertions_total     INTEGER,
    configuration_digest TEXT,
    fixture_digest       TEXT,
    events               INTEGER NOT NULL,
    duration_ms          INTEGER,
    problem              TEXT
) STRICT, WITHOUT ROWID;
CREATE INDEX bundle_facts_by_fixture ON bundle_facts (fixture_digest);

CREATE TABLE bundle_touched (
    bundle_id TEXT NOT NULL REFERENCES bundles (bundle_id),
    path      TEXT NOT NULL,
    PRIMARY KEY (bundle_id, path)
) STRICT, WITHOUT ROWID;
CREATE INDEX bundle_touched_by_path ON bundle_touched (path);

CREATE VIEW v_labels AS
SELECT c.bundle_id, c.key, c.value, c.changed_ms
FROM bundle_label_changes c
WHERE c.value IS NOT NULL
  AND c.changed_ms = (SELECT MAX(d.changed_ms) FROM bundle_label_changes d
                      WHERE d.bundle_id = c.bundle_id AND d.key = c.key);

CREATE VIEW v_bundles AS
SELECT b.bundle_id, b.run_id, b.attempt_id, b.attempt_number, b.retry_of,
       b.task_id, b.fixture_id, f.fixture_digest, f.configuration_digest,
       b.model_provider, b.model_id, b.model_provider || '/' || b.model_id AS model,
       b.harness_id, b.harness_version, b.assessment_mode, b.terminal_state,
       b.failure_class, b.stop_reason, b.qualification,
       f.verifier, f.assertions_passed, f.assertions_total, f.events, f.duration_ms,
       b.manifest_digest, b.ingested_ms,
       strftime('%Y-%m-%dT%H:%M:%SZ', b.ingested_ms / 1000, 'unixepoch') AS ingested_at,
       (SELECT json_group_object(l.key, l.value) FROM v_labels l
        WHERE l.bundle_id = b.bundle_id) AS labels
FROM bundles b LEFT JOIN bundle_facts f ON f.bundle_id = b.bundle_id;

CREATE VIEW v_artifacts AS
SELECT bundle_id, artifact_id, relative_path, digest, size, kind, authority,
       sharing_class, media_type
FROM bundle_artifacts;

CREATE VIEW v_touched AS SELECT bundle_id, path FROM bundle_touched;

CREATE VIEW v_exports AS
SELECT manifest_digest, dest, source_bundle_id, source_manifest_digest,
       sharing_class, policy_digest, created_ms
FROM exports;

CREATE VIEW v_packets AS
SELECT packet_id, packet_locator, record_digest, aggregate_digest, fixture_digest,
       frozen_at
FROM freezes;
"#;

/// The catalog schema of an evidence store.
pub static SCHEMA: Schema = Schema {
    application_id: 0,
    migrations: &[
        OBJECTS_MIGRATION,
        BUNDLES_MIGRATION,
        FREEZES_MIGRATION,
        EXPORTS_MIGRATION,
        REFS_MIGRATION,
        LABELS_MIGRATION,
        FACTS_MIGRATION,
    ],
    recorded: &[
        "objects",
        "roots",
        "bundles",
        "bundle_artifacts",
        "fixture_trees",
        "freezes",
        "exports",
        "export_artifacts",
        "bundle_label_changes",
    ],
};
