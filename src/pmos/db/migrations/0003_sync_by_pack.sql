-- pmos database schema, version 3: a sync that costs what it sends.
--
-- `pmos sync` now streams each record's stored JSON text into pmos_incoming
-- (digest bytea, record text) unparsed, removes the rows the kit's table
-- already holds (a join on the primary key, under the kit's advisory lock),
-- and calls pmos_store_<table>, which parses each record into jsonb once
-- (OFFSET 0 keeps the planner from parsing it again for every typed column)
-- and inserts it. Nothing is left in pmos_incoming that the table holds, so
-- the insert has no ON CONFLICT clause: its speculative insertion cost about
-- a sixth of the server's time, and a row the unique key refuses now means a
-- broken sync, reported, not skipped.

-- The packs whose records a kit's completed syncs copied, by the SHA-256
-- that names each pack (a pack's name is the hash of its bytes, so a pack of
-- that name holds exactly those records forever), and the pmos version whose
-- `pmos ledger verify` checked the pack line by line in that sync. A sync
-- reads no pack the kit has here, and only hashes (rather than verifies
-- line by line) one that its own pmos version verified: a second sync of an
-- unchanged kit costs a hash of its files. A pmos upgrade verifies every pack
-- once more (its checks may be new). Written in the sync's own transaction.
CREATE TABLE synced_packs (
    kit integer NOT NULL REFERENCES kits,
    pack bytea NOT NULL CHECK (length(pack) = 32),
    verified_by text NOT NULL,
    PRIMARY KEY (kit, pack, verified_by)
);

CREATE OR REPLACE FUNCTION pmos_store_runs(kit_key integer) RETURNS bigint
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
    FROM (SELECT digest, record::jsonb AS record FROM pmos_incoming OFFSET 0) incoming;
    GET DIAGNOSTICS added = ROW_COUNT;
    RETURN added;
END $$;

CREATE OR REPLACE FUNCTION pmos_store_evals(kit_key integer) RETURNS bigint
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
    FROM (SELECT digest, record::jsonb AS record FROM pmos_incoming OFFSET 0) incoming;
    GET DIAGNOSTICS added = ROW_COUNT;
    RETURN added;
END $$;

CREATE OR REPLACE FUNCTION pmos_store_acceptances(kit_key integer) RETURNS bigint
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
    FROM (SELECT digest, record::jsonb AS record FROM pmos_incoming OFFSET 0) incoming;
    GET DIAGNOSTICS added = ROW_COUNT;
    RETURN added;
END $$;

CREATE OR REPLACE FUNCTION pmos_store_assessments(kit_key integer) RETURNS bigint
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
    FROM (SELECT digest, record::jsonb AS record FROM pmos_incoming OFFSET 0) incoming;
    GET DIAGNOSTICS added = ROW_COUNT;
    RETURN added;
END $$;

CREATE OR REPLACE FUNCTION pmos_store_task_evals(kit_key integer) RETURNS bigint
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
    FROM (SELECT digest, record::jsonb AS record FROM pmos_incoming OFFSET 0) incoming;
    GET DIAGNOSTICS added = ROW_COUNT;
    RETURN added;
END $$;

CREATE OR REPLACE FUNCTION pmos_store_followups(kit_key integer) RETURNS bigint
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
    FROM (SELECT digest, record::jsonb AS record FROM pmos_incoming OFFSET 0) incoming;
    GET DIAGNOSTICS added = ROW_COUNT;
    RETURN added;
END $$;

CREATE OR REPLACE FUNCTION pmos_store_tasks(kit_key integer) RETURNS bigint
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
    FROM (SELECT digest, record::jsonb AS record FROM pmos_incoming OFFSET 0) incoming;
    GET DIAGNOSTICS added = ROW_COUNT;
    RETURN added;
END $$;
