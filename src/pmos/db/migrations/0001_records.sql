-- pmos database schema, version 1: kits, syncs and one table per ledger kind.
--
-- Every record is stored once per kit, keyed by its content digest (the
-- digest pmos.store.digest computes; the same record synced from two clones
-- of one kit is one row), with its full JSON in `record` (jsonb). The columns
-- queries filter and order by are typed from `record` by the database itself,
-- in this file only: `pmos sync` sends (digest, record) pairs with COPY into a
-- temporary table `pmos_incoming` and calls the kind's pmos_store_<table>
-- function, which moves them in with INSERT ... ON CONFLICT DO NOTHING and
-- fills the typed columns. (Extracting the columns in that INSERT costs the
-- server a third less than generated columns.) The record tables have no
-- foreign key to kits: a per-row check would cost a lookup per record of a
-- million-record sync, and only pmos sync writes them, with the kit's key.

-- Typing: a timestamp (RFC 3339, always with an offset; sync sessions run in
-- UTC besides) becomes a timestamptz; a number or a boolean is typed only
-- when the JSON value has that type, so a record with an unexpected field
-- type is stored, with NULL in that column, rather than failing the sync.

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
    record_id text,
    recorded_at timestamptz,
    run_id text,
    initiative_id text,
    builder_model text,
    PRIMARY KEY (kit, digest)
);

CREATE FUNCTION pmos_store_runs(kit_key integer) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE added bigint;
BEGIN
    INSERT INTO runs (kit, digest, record,
        record_id, recorded_at, run_id, initiative_id, builder_model)
    SELECT kit_key, digest, record,
        record->>'record_id',
        (record->>'recorded_at')::timestamptz,
        record->>'run_id',
        record->>'initiative_id',
        record->>'builder_model'
    FROM pmos_incoming
    ON CONFLICT DO NOTHING;
    GET DIAGNOSTICS added = ROW_COUNT;
    RETURN added;
END $$;

CREATE TABLE evals (
    kit integer NOT NULL,
    digest bytea NOT NULL CHECK (length(digest) = 32),
    record jsonb NOT NULL,
    record_id text,
    recorded_at timestamptz,
    run_id text,
    initiative_id text,
    evaluator_model text,
    verdict text,
    score double precision,
    form text,
    skipped_reason text,
    PRIMARY KEY (kit, digest)
);

CREATE FUNCTION pmos_store_evals(kit_key integer) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE added bigint;
BEGIN
    INSERT INTO evals (kit, digest, record,
        record_id, recorded_at, run_id, initiative_id, evaluator_model, verdict, score,
        form, skipped_reason)
    SELECT kit_key, digest, record,
        record->>'record_id',
        (record->>'recorded_at')::timestamptz,
        record->>'run_id',
        record->>'initiative_id',
        record->>'evaluator_model',
        record->>'verdict',
        CASE WHEN jsonb_typeof(record->'score') = 'number' THEN (record->>'score')::double precision END,
        record->>'form',
        record->>'skipped_reason'
    FROM pmos_incoming
    ON CONFLICT DO NOTHING;
    GET DIAGNOSTICS added = ROW_COUNT;
    RETURN added;
END $$;

CREATE TABLE acceptances (
    kit integer NOT NULL,
    digest bytea NOT NULL CHECK (length(digest) = 32),
    record jsonb NOT NULL,
    record_id text,
    recorded_at timestamptz,
    run_id text,
    initiative_id text,
    label text,
    labelled_by text,
    gate_verdict text,
    gate_record_id text,
    PRIMARY KEY (kit, digest)
);

CREATE FUNCTION pmos_store_acceptances(kit_key integer) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE added bigint;
BEGIN
    INSERT INTO acceptances (kit, digest, record,
        record_id, recorded_at, run_id, initiative_id, label, labelled_by,
        gate_verdict, gate_record_id)
    SELECT kit_key, digest, record,
        record->>'record_id',
        (record->>'recorded_at')::timestamptz,
        record->>'run_id',
        record->>'initiative_id',
        record->>'label',
        record->>'by',
        record->>'gate_verdict',
        record->>'gate_record_id'
    FROM pmos_incoming
    ON CONFLICT DO NOTHING;
    GET DIAGNOSTICS added = ROW_COUNT;
    RETURN added;
END $$;

CREATE TABLE assessments (
    kit integer NOT NULL,
    digest bytea NOT NULL CHECK (length(digest) = 32),
    record jsonb NOT NULL,
    record_id text,
    recorded_at timestamptz,
    task_id text,
    run_id text,
    trigger text,
    attempt double precision,
    passed boolean,
    PRIMARY KEY (kit, digest)
);

CREATE FUNCTION pmos_store_assessments(kit_key integer) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE added bigint;
BEGIN
    INSERT INTO assessments (kit, digest, record,
        record_id, recorded_at, task_id, run_id, trigger, attempt, passed)
    SELECT kit_key, digest, record,
        record->>'record_id',
        (record->>'recorded_at')::timestamptz,
        record->>'task_id',
        record->>'run_id',
        record->>'trigger',
        CASE WHEN jsonb_typeof(record->'attempt') = 'number' THEN (record->>'attempt')::double precision END,
        CASE WHEN jsonb_typeof(record->'passed') = 'boolean' THEN (record->>'passed')::boolean END
    FROM pmos_incoming
    ON CONFLICT DO NOTHING;
    GET DIAGNOSTICS added = ROW_COUNT;
    RETURN added;
END $$;

CREATE TABLE task_evals (
    kit integer NOT NULL,
    digest bytea NOT NULL CHECK (length(digest) = 32),
    record jsonb NOT NULL,
    record_id text,
    recorded_at timestamptz,
    task_id text,
    run_id text,
    overall_score double precision,
    band text,
    PRIMARY KEY (kit, digest)
);

CREATE FUNCTION pmos_store_task_evals(kit_key integer) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE added bigint;
BEGIN
    INSERT INTO task_evals (kit, digest, record,
        record_id, recorded_at, task_id, run_id, overall_score, band)
    SELECT kit_key, digest, record,
        record->>'record_id',
        (record->>'recorded_at')::timestamptz,
        record->>'task_id',
        record->>'run_id',
        CASE WHEN jsonb_typeof(record->'overallScore') = 'number' THEN (record->>'overallScore')::double precision END,
        record->>'band'
    FROM pmos_incoming
    ON CONFLICT DO NOTHING;
    GET DIAGNOSTICS added = ROW_COUNT;
    RETURN added;
END $$;

CREATE TABLE followups (
    kit integer NOT NULL,
    digest bytea NOT NULL CHECK (length(digest) = 32),
    record jsonb NOT NULL,
    record_id text,
    recorded_at timestamptz,
    run_id text,
    task_id text,
    severity text,
    state text,
    title text,
    PRIMARY KEY (kit, digest)
);

CREATE FUNCTION pmos_store_followups(kit_key integer) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE added bigint;
BEGIN
    INSERT INTO followups (kit, digest, record,
        record_id, recorded_at, run_id, task_id, severity, state, title)
    SELECT kit_key, digest, record,
        record->>'record_id',
        (record->>'recorded_at')::timestamptz,
        record->>'run_id',
        record->>'task_id',
        record->>'severity',
        record->>'state',
        record->>'title'
    FROM pmos_incoming
    ON CONFLICT DO NOTHING;
    GET DIAGNOSTICS added = ROW_COUNT;
    RETURN added;
END $$;

CREATE TABLE tasks (
    kit integer NOT NULL,
    digest bytea NOT NULL CHECK (length(digest) = 32),
    record jsonb NOT NULL,
    record_id text,
    recorded_at timestamptz,
    task_id text,
    event text,
    state text,
    title text,
    parent_run_id text,
    PRIMARY KEY (kit, digest)
);

CREATE FUNCTION pmos_store_tasks(kit_key integer) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE added bigint;
BEGIN
    INSERT INTO tasks (kit, digest, record,
        record_id, recorded_at, task_id, event, state, title, parent_run_id)
    SELECT kit_key, digest, record,
        record->>'record_id',
        (record->>'recorded_at')::timestamptz,
        record->>'task_id',
        record->>'event',
        record->>'state',
        record->>'title',
        record->>'parent_run_id'
    FROM pmos_incoming
    ON CONFLICT DO NOTHING;
    GET DIAGNOSTICS added = ROW_COUNT;
    RETURN added;
END $$;
