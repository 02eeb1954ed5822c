-- pmos database schema, version 4: pmos types the columns, COPY fills the tables.
--
-- `pmos sync` now types each record's columns itself (pmos.db.columns states
-- the rule, and is the one place it lives) and COPYs the finished rows
-- straight into the record tables: the server parses each record's JSON
-- once, into `record`, and extracts nothing from it. The staging table and
-- the pmos_store_<table> functions that re-parsed and re-inserted every
-- record (most of a sync's server time) are gone.
--
-- Every record table gains `recorded_at_text`, the record's timestamp as
-- stored: readers order records by that text and the record id, exactly as
-- file mode orders them (`recorded_at`, the timestamptz, stays for SQL that
-- compares instants). `pmos metrics --db` and `pmos queue --db` now read
-- only typed columns, never the jsonb, and so do the views below.
--
-- Rows synced before this version are filled in from their jsonb here (a
-- text column of a record that breaks its schema, a number where a string
-- belongs, held the number's text before; pmos now stores NULL there).

ALTER TABLE runs ADD COLUMN recorded_at_text text;
UPDATE runs SET recorded_at_text = record->>'recorded_at';
ALTER TABLE evals ADD COLUMN recorded_at_text text;
UPDATE evals SET recorded_at_text = record->>'recorded_at';
ALTER TABLE acceptances ADD COLUMN recorded_at_text text;
UPDATE acceptances SET recorded_at_text = record->>'recorded_at';
ALTER TABLE assessments ADD COLUMN recorded_at_text text;
UPDATE assessments SET recorded_at_text = record->>'recorded_at';
ALTER TABLE task_evals ADD COLUMN recorded_at_text text;
UPDATE task_evals SET recorded_at_text = record->>'recorded_at';
ALTER TABLE followups ADD COLUMN recorded_at_text text;
UPDATE followups SET recorded_at_text = record->>'recorded_at';
ALTER TABLE tasks ADD COLUMN recorded_at_text text;
UPDATE tasks SET recorded_at_text = record->>'recorded_at';

DROP FUNCTION pmos_store_runs(integer);
DROP FUNCTION pmos_store_evals(integer);
DROP FUNCTION pmos_store_acceptances(integer);
DROP FUNCTION pmos_store_assessments(integer);
DROP FUNCTION pmos_store_task_evals(integer);
DROP FUNCTION pmos_store_followups(integer);
DROP FUNCTION pmos_store_tasks(integer);

-- The per-run views read the stored timestamp text from its column.

-- Per run: its latest judged (non-SKIPPED) verdict.
CREATE OR REPLACE VIEW v_latest_judged AS
SELECT DISTINCT ON (kit, run_id)
    kit, run_id, record_id, recorded_at, recorded_at_text,
    verdict, verdict IN ('PASS', 'PASS-WITH-FINDINGS') AS gate_pass,
    evaluator_model, initiative_id, score, form
FROM evals
WHERE verdict <> 'SKIPPED'
ORDER BY kit, run_id, recorded_at DESC, record_id DESC;

-- Per run: its latest SKIPPED verdict.
CREATE OR REPLACE VIEW v_latest_skip AS
SELECT DISTINCT ON (kit, run_id)
    kit, run_id, record_id, recorded_at, recorded_at_text,
    evaluator_model, initiative_id, skipped_reason
FROM evals
WHERE verdict = 'SKIPPED'
ORDER BY kit, run_id, recorded_at DESC, record_id DESC;

-- Per run: its first verdict (a run that was never registered is aged from it).
CREATE OR REPLACE VIEW v_first_verdict AS
SELECT DISTINCT ON (kit, run_id)
    kit, run_id, record_id, recorded_at, recorded_at_text,
    initiative_id
FROM evals
ORDER BY kit, run_id, recorded_at, record_id;

-- Per run: its latest PM label.
CREATE OR REPLACE VIEW v_latest_label AS
SELECT DISTINCT ON (kit, run_id)
    kit, run_id, record_id, recorded_at, recorded_at_text,
    label, label = 'pass' AS pm_pass, gate_record_id, gate_verdict, initiative_id
FROM acceptances
ORDER BY kit, run_id, recorded_at DESC, record_id DESC;

-- Per run: its first registration.
CREATE OR REPLACE VIEW v_registration AS
SELECT DISTINCT ON (kit, run_id)
    kit, run_id, record_id, recorded_at, recorded_at_text,
    initiative_id, builder_model
FROM runs
ORDER BY kit, run_id, recorded_at, record_id;
