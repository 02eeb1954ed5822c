-- pmos database schema, version 1: kits, syncs and one table per ledger kind.
--
-- Every record is stored once per kit, keyed by its content digest (the
-- digest pmos.store.digest computes; the same record synced from two clones
-- of one kit is one row), with its full JSON in `record` (jsonb). The columns
-- queries filter and order by are generated from `record` by the database
-- itself, so this file is the one place that says how a field is typed: a
-- sync only sends (digest, record). The record tables have no foreign key to
-- kits: a per-row check would cost a lookup per record of a million-record
-- sync, and only pmos sync writes them, with the kit's key.

-- A stored timestamp (RFC 3339) as an instant. The cast is only STABLE
-- because a timestamp without an offset is read in the session's time zone;
-- RFC 3339 requires the offset (the schemas check it when a record is
-- written, and pmos sync sets the zone to UTC besides), so the result does
-- not vary and the function may type a generated column. (A SET clause
-- pinning the zone here would cost a settings save and restore per row.)
CREATE FUNCTION pmos_instant(stamp text) RETURNS timestamptz
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN stamp::timestamptz;

-- Numbers and booleans are typed only when the JSON value has that type, so
-- a record with an unexpected field type is stored (with NULL there) rather
-- than failing the sync. The expressions are written out in each column: a
-- SQL function for them would cost a call per row.

-- One row per kit: its stable id (see README, "Kit identity"), the normalised
-- repository URL and the kit's folder inside the repository.
CREATE TABLE kits (
    kit integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    kit_id text NOT NULL UNIQUE CHECK (kit_id <> ''),
    repository text,
    path text,
    added_at timestamptz NOT NULL DEFAULT now()
);

-- One row per completed sync, written in the sync's own transaction: when it
-- ran, which pmos did it, the kit's calibration settings (pmos.yaml with its
-- defaults filled in; the views and `pmos metrics --db --kit K` use the
-- latest), and per ledger kind how many records the kit had and how many
-- were new to the database.
CREATE TABLE syncs (
    sync bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    kit integer NOT NULL REFERENCES kits,
    synced_at timestamptz NOT NULL DEFAULT now(),
    pmos_version text NOT NULL,
    settings jsonb NOT NULL,
    records jsonb NOT NULL,
    added jsonb NOT NULL
);
CREATE INDEX syncs_kit ON syncs (kit, sync);

-- The settings used across kits (the overall rows of the views and
-- `pmos metrics --db` over several kits). `pmos db migrate` fills the row
-- with pmos's defaults; the database owner may UPDATE it.
CREATE TABLE team_settings (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    settings jsonb NOT NULL
);

CREATE TABLE runs (
    kit integer NOT NULL,
    digest bytea NOT NULL CHECK (length(digest) = 32),
    record jsonb NOT NULL,
    record_id text GENERATED ALWAYS AS (record->>'record_id') STORED,
    recorded_at timestamptz GENERATED ALWAYS AS (pmos_instant(record->>'recorded_at')) STORED,
    run_id text GENERATED ALWAYS AS (record->>'run_id') STORED,
    initiative_id text GENERATED ALWAYS AS (record->>'initiative_id') STORED,
    builder_model text GENERATED ALWAYS AS (record->>'builder_model') STORED,
    PRIMARY KEY (kit, digest)
);
CREATE INDEX runs_run ON runs (kit, run_id, recorded_at, record_id);

CREATE TABLE evals (
    kit integer NOT NULL,
    digest bytea NOT NULL CHECK (length(digest) = 32),
    record jsonb NOT NULL,
    record_id text GENERATED ALWAYS AS (record->>'record_id') STORED,
    recorded_at timestamptz GENERATED ALWAYS AS (pmos_instant(record->>'recorded_at')) STORED,
    run_id text GENERATED ALWAYS AS (record->>'run_id') STORED,
    initiative_id text GENERATED ALWAYS AS (record->>'initiative_id') STORED,
    evaluator_model text GENERATED ALWAYS AS (record->>'evaluator_model') STORED,
    verdict text GENERATED ALWAYS AS (record->>'verdict') STORED,
    score double precision GENERATED ALWAYS AS (
        CASE WHEN jsonb_typeof(record->'score') = 'number' THEN (record->>'score')::double precision END
    ) STORED,
    form text GENERATED ALWAYS AS (record->>'form') STORED,
    skipped_reason text GENERATED ALWAYS AS (record->>'skipped_reason') STORED,
    PRIMARY KEY (kit, digest)
);
CREATE INDEX evals_run ON evals (kit, run_id, recorded_at, record_id);

CREATE TABLE acceptances (
    kit integer NOT NULL,
    digest bytea NOT NULL CHECK (length(digest) = 32),
    record jsonb NOT NULL,
    record_id text GENERATED ALWAYS AS (record->>'record_id') STORED,
    recorded_at timestamptz GENERATED ALWAYS AS (pmos_instant(record->>'recorded_at')) STORED,
    run_id text GENERATED ALWAYS AS (record->>'run_id') STORED,
    initiative_id text GENERATED ALWAYS AS (record->>'initiative_id') STORED,
    label text GENERATED ALWAYS AS (record->>'label') STORED,
    labelled_by text GENERATED ALWAYS AS (record->>'by') STORED,
    gate_verdict text GENERATED ALWAYS AS (record->>'gate_verdict') STORED,
    gate_record_id text GENERATED ALWAYS AS (record->>'gate_record_id') STORED,
    PRIMARY KEY (kit, digest)
);
CREATE INDEX acceptances_run ON acceptances (kit, run_id, recorded_at, record_id);

CREATE TABLE assessments (
    kit integer NOT NULL,
    digest bytea NOT NULL CHECK (length(digest) = 32),
    record jsonb NOT NULL,
    record_id text GENERATED ALWAYS AS (record->>'record_id') STORED,
    recorded_at timestamptz GENERATED ALWAYS AS (pmos_instant(record->>'recorded_at')) STORED,
    task_id text GENERATED ALWAYS AS (record->>'task_id') STORED,
    run_id text GENERATED ALWAYS AS (record->>'run_id') STORED,
    trigger text GENERATED ALWAYS AS (record->>'trigger') STORED,
    attempt double precision GENERATED ALWAYS AS (
        CASE WHEN jsonb_typeof(record->'attempt') = 'number' THEN (record->>'attempt')::double precision END
    ) STORED,
    passed boolean GENERATED ALWAYS AS (
        CASE WHEN jsonb_typeof(record->'passed') = 'boolean' THEN (record->>'passed')::boolean END
    ) STORED,
    PRIMARY KEY (kit, digest)
);

CREATE TABLE task_evals (
    kit integer NOT NULL,
    digest bytea NOT NULL CHECK (length(digest) = 32),
    record jsonb NOT NULL,
    record_id text GENERATED ALWAYS AS (record->>'record_id') STORED,
    recorded_at timestamptz GENERATED ALWAYS AS (pmos_instant(record->>'recorded_at')) STORED,
    task_id text GENERATED ALWAYS AS (record->>'task_id') STORED,
    run_id text GENERATED ALWAYS AS (record->>'run_id') STORED,
    overall_score double precision GENERATED ALWAYS AS (
        CASE WHEN jsonb_typeof(record->'overallScore') = 'number' THEN (record->>'overallScore')::double precision END
    ) STORED,
    band text GENERATED ALWAYS AS (record->>'band') STORED,
    PRIMARY KEY (kit, digest)
);

CREATE TABLE followups (
    kit integer NOT NULL,
    digest bytea NOT NULL CHECK (length(digest) = 32),
    record jsonb NOT NULL,
    record_id text GENERATED ALWAYS AS (record->>'record_id') STORED,
    recorded_at timestamptz GENERATED ALWAYS AS (pmos_instant(record->>'recorded_at')) STORED,
    run_id text GENERATED ALWAYS AS (record->>'run_id') STORED,
    task_id text GENERATED ALWAYS AS (record->>'task_id') STORED,
    severity text GENERATED ALWAYS AS (record->>'severity') STORED,
    state text GENERATED ALWAYS AS (record->>'state') STORED,
    title text GENERATED ALWAYS AS (record->>'title') STORED,
    PRIMARY KEY (kit, digest)
);

CREATE TABLE tasks (
    kit integer NOT NULL,
    digest bytea NOT NULL CHECK (length(digest) = 32),
    record jsonb NOT NULL,
    record_id text GENERATED ALWAYS AS (record->>'record_id') STORED,
    recorded_at timestamptz GENERATED ALWAYS AS (pmos_instant(record->>'recorded_at')) STORED,
    task_id text GENERATED ALWAYS AS (record->>'task_id') STORED,
    event text GENERATED ALWAYS AS (record->>'event') STORED,
    state text GENERATED ALWAYS AS (record->>'state') STORED,
    title text GENERATED ALWAYS AS (record->>'title') STORED,
    parent_run_id text GENERATED ALWAYS AS (record->>'parent_run_id') STORED,
    PRIMARY KEY (kit, digest)
);
