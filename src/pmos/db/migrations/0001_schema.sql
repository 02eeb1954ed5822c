-- pmos database schema, version 1: kits, syncs, one table per ledger kind, the
-- figures pmos computed for each kit, and the row-level security that lets a
-- kit's role write only that kit's rows.
--
-- This is the first migration of a schema that had never been released: the
-- drafts before it were squashed into this file. From here on a change to the
-- schema is a NEW migration file (0002_..., 0003_...); a released migration is
-- never edited (`pmos db migrate` refuses one whose checksum changed).
--
-- ONE RULE, COMPUTED ONCE. The database computes no figure. `pmos sync`
-- computes, with the same Python code as `pmos metrics` and `pmos queue`, the
-- kit's calibration report, its pairs and its queue, and writes them beside
-- the records (`syncs.metrics`, `syncs.queue`, `calibration_pairs`). The
-- views below only select, expand and count those rows; which verdicts count
-- as a pass, how labels pair with verdicts, the kappa formula and the queue's
-- rules live only in pmos.calibration. `pmos metrics --db` and `pmos queue
-- --db` hand the record rows to that same Python code.
--
-- Every record is stored once per kit, keyed by its content digest, with its
-- full JSON in `record` (jsonb) and the fields queries filter and order by in
-- typed columns, which pmos fills (pmos.db.columns states the typing rule).
-- `recorded_at_text` is the timestamp as the record stores it: readers order
-- by it, as file mode does. Every `recorded_at` is checked by pmos to lie in
-- years 1970-9999 (pmos.timestamps.stamp_problem), the same check `pmos
-- ledger verify` makes, so a record the kit accepts is one the column holds.

-- One row per kit: its id (see README, "Kit identity"), the normalised
-- repository URL, the kit's folder in it, and the database role bound to it
-- by `pmos db grant --kit ID` (the only role, besides the owner, that may
-- write the kit's rows).
CREATE TABLE kits (
    kit integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    kit_id text NOT NULL UNIQUE CHECK (kit_id <> ''),
    repository text,
    path text,
    role name UNIQUE,
    added_at timestamptz NOT NULL DEFAULT now()
);

-- One row per completed sync, written in the sync's own transaction: when it
-- ran, which pmos did it, the kit's settings (its pmos.yaml as committed on
-- the default branch, defaults filled in), per ledger kind the records the
-- kit had and those new to the database, and the kit's calibration report
-- (`pmos metrics --json`) and queue (`pmos queue --json`) as pmos computed
-- them at that sync (NULL when nothing changed since the previous report).
CREATE TABLE syncs (
    sync bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    kit integer NOT NULL REFERENCES kits,
    synced_at timestamptz NOT NULL DEFAULT now(),
    pmos_version text NOT NULL,
    settings jsonb NOT NULL,
    records jsonb NOT NULL,
    added jsonb NOT NULL,
    metrics jsonb,
    queue jsonb
);
CREATE INDEX syncs_kit ON syncs (kit, sync);

-- The settings used across kits (`pmos metrics --db` over several kits).
-- `pmos db migrate` fills the row with pmos's defaults; the owner may UPDATE it.
CREATE TABLE team_settings (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    settings jsonb NOT NULL
);

-- The packs whose records a kit's completed syncs copied, by the SHA-256 that
-- names each pack, and the pmos version whose `pmos ledger verify` checked the
-- pack line by line in that sync: a sync reads no pack the kit has here.
CREATE TABLE synced_packs (
    kit integer NOT NULL REFERENCES kits,
    pack bytea NOT NULL CHECK (length(pack) = 32),
    verified_by text NOT NULL,
    PRIMARY KEY (kit, pack, verified_by)
);

-- The pairs of a sync's report, one per labelled run in it: the judged verdict
-- its label judges (pass or not, its evaluator model, score and form) and the
-- label. Computed by pmos's pairing rule (pmos.calibration.pairs).
CREATE TABLE calibration_pairs (
    sync bigint NOT NULL REFERENCES syncs,
    kit integer NOT NULL,
    run_id text NOT NULL,
    evaluator_model text NOT NULL,
    gate_pass boolean NOT NULL,
    pm_pass boolean NOT NULL,
    form text NOT NULL,
    score double precision,
    PRIMARY KEY (sync, run_id)
);

-- The record tables. No foreign key to kits: a per-row check would cost a
-- lookup per record of a million-record sync, and only pmos sync writes them.
CREATE TABLE runs (
    kit integer NOT NULL,
    digest bytea NOT NULL CHECK (length(digest) = 32),
    record jsonb NOT NULL,
    record_id text,
    recorded_at timestamptz,
    recorded_at_text text,
    run_id text,
    initiative_id text,
    builder_model text,
    PRIMARY KEY (kit, digest)
);

CREATE TABLE evals (
    kit integer NOT NULL,
    digest bytea NOT NULL CHECK (length(digest) = 32),
    record jsonb NOT NULL,
    record_id text,
    recorded_at timestamptz,
    recorded_at_text text,
    run_id text,
    initiative_id text,
    evaluator_model text,
    verdict text,
    score double precision,
    form text,
    skipped_reason text,
    PRIMARY KEY (kit, digest)
);

CREATE TABLE acceptances (
    kit integer NOT NULL,
    digest bytea NOT NULL CHECK (length(digest) = 32),
    record jsonb NOT NULL,
    record_id text,
    recorded_at timestamptz,
    recorded_at_text text,
    run_id text,
    initiative_id text,
    label text,
    labelled_by text,
    gate_verdict text,
    gate_record_id text,
    PRIMARY KEY (kit, digest)
);

CREATE TABLE assessments (
    kit integer NOT NULL,
    digest bytea NOT NULL CHECK (length(digest) = 32),
    record jsonb NOT NULL,
    record_id text,
    recorded_at timestamptz,
    recorded_at_text text,
    task_id text,
    run_id text,
    trigger text,
    attempt double precision,
    passed boolean,
    PRIMARY KEY (kit, digest)
);

CREATE TABLE task_evals (
    kit integer NOT NULL,
    digest bytea NOT NULL CHECK (length(digest) = 32),
    record jsonb NOT NULL,
    record_id text,
    recorded_at timestamptz,
    recorded_at_text text,
    task_id text,
    run_id text,
    overall_score double precision,
    band text,
    PRIMARY KEY (kit, digest)
);

CREATE TABLE followups (
    kit integer NOT NULL,
    digest bytea NOT NULL CHECK (length(digest) = 32),
    record jsonb NOT NULL,
    record_id text,
    recorded_at timestamptz,
    recorded_at_text text,
    run_id text,
    task_id text,
    severity text,
    state text,
    title text,
    PRIMARY KEY (kit, digest)
);

CREATE TABLE tasks (
    kit integer NOT NULL,
    digest bytea NOT NULL CHECK (length(digest) = 32),
    record jsonb NOT NULL,
    record_id text,
    recorded_at timestamptz,
    recorded_at_text text,
    task_id text,
    event text,
    state text,
    title text,
    parent_run_id text,
    PRIMARY KEY (kit, digest)
);

-- 'pmos policy approve' records a PM's signed approval of a kit's trust files.
CREATE TABLE policy (
    kit integer NOT NULL,
    digest bytea NOT NULL CHECK (length(digest) = 32),
    record jsonb NOT NULL,
    record_id text,
    recorded_at timestamptz,
    recorded_at_text text,
    approved_by text,
    PRIMARY KEY (kit, digest)
);

-- Row-level security: a kit's role (`pmos db grant --kit ID`) may add rows only
-- under the kit bound to it (kits.role), and may change or delete none (no
-- UPDATE or DELETE policy exists, and no such privilege is granted). Every role
-- granted SELECT may read every row. The owner (who runs `pmos db migrate`) is
-- not subject to these policies.
DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['syncs', 'synced_packs', 'calibration_pairs', 'runs', 'evals', 'acceptances', 'assessments', 'task_evals', 'followups', 'tasks', 'policy']
    LOOP
        EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format('CREATE POLICY pmos_read ON %I FOR SELECT USING (true)', t);
        EXECUTE format(
            'CREATE POLICY pmos_own_kit ON %I FOR INSERT '
            'WITH CHECK (kit = (SELECT k.kit FROM kits k WHERE k.role = current_user))', t
        );
    END LOOP;
END
$$;

-- The views only select, expand and count what pmos computed.

-- Each kit's latest sync that carries a report.
CREATE VIEW v_kit_reports AS
SELECT DISTINCT ON (s.kit) s.kit, k.kit_id, s.sync, s.synced_at, s.settings, s.metrics, s.queue
FROM syncs s JOIN kits k USING (kit)
WHERE s.metrics IS NOT NULL
ORDER BY s.kit, s.sync DESC;

-- Each kit's settings: those its latest sync recorded.
CREATE VIEW v_kit_settings AS
SELECT DISTINCT ON (s.kit) s.kit, k.kit_id, s.settings
FROM syncs s JOIN kits k USING (kit)
ORDER BY s.kit, s.sync DESC;

-- Each kit's calibration report, as `pmos metrics --json` gave it at its latest sync.
CREATE VIEW v_calibration AS
SELECT
    r.kit_id,
    r.synced_at,
    (r.metrics->>'pairs')::bigint AS pairs,
    (r.metrics->'confusion'->>'tp')::bigint AS tp,
    (r.metrics->'confusion'->>'fn')::bigint AS fn,
    (r.metrics->'confusion'->>'fp')::bigint AS fp,
    (r.metrics->'confusion'->>'tn')::bigint AS tn,
    (r.metrics->>'observed_agreement')::numeric AS observed_agreement,
    (r.metrics->>'kappa')::numeric AS kappa,
    (r.metrics->'kappa_ci95'->>0)::numeric AS kappa_ci95_low,
    (r.metrics->'kappa_ci95'->>1)::numeric AS kappa_ci95_high,
    (r.metrics->>'tpr')::numeric AS tpr,
    (r.metrics->>'tnr')::numeric AS tnr,
    (r.metrics->>'calibrated')::boolean AS calibrated,
    r.metrics->>'calibration_reason' AS calibration_reason,
    (r.metrics->>'pass_fraction')::numeric AS pass_fraction,
    (r.metrics->>'pass_fraction_window')::integer AS pass_fraction_window,
    (r.metrics->>'goodhart_alarm')::boolean AS goodhart_alarm,
    (r.metrics->>'skipped')::bigint AS skipped,
    (r.metrics->>'unlabeled_verdicts')::bigint AS unlabeled_verdicts,
    (r.metrics->>'labels_without_verdict')::bigint AS labels_without_verdict,
    (r.metrics->>'labels_superseded')::bigint AS labels_superseded,
    (r.metrics->>'kappa_threshold')::numeric AS kappa_threshold
FROM v_kit_reports r;

-- Each kit's report per evaluator model.
CREATE VIEW v_calibration_by_model AS
SELECT
    r.kit_id,
    m.key AS evaluator_model,
    (m.value->>'pairs')::bigint AS pairs,
    (m.value->'confusion'->>'tp')::bigint AS tp,
    (m.value->'confusion'->>'fn')::bigint AS fn,
    (m.value->'confusion'->>'fp')::bigint AS fp,
    (m.value->'confusion'->>'tn')::bigint AS tn,
    (m.value->>'observed_agreement')::numeric AS observed_agreement,
    (m.value->>'kappa')::numeric AS kappa,
    (m.value->>'tpr')::numeric AS tpr,
    (m.value->>'tnr')::numeric AS tnr,
    (m.value->>'calibrated')::boolean AS calibrated,
    (m.value->>'pass_fraction')::numeric AS pass_fraction,
    (m.value->>'goodhart_alarm')::boolean AS goodhart_alarm,
    (m.value->>'skipped')::bigint AS skipped,
    (m.value->>'unlabeled_verdicts')::bigint AS unlabeled_verdicts
FROM v_kit_reports r CROSS JOIN LATERAL jsonb_each(r.metrics->'by_model') m;

-- Each kit's pairs at its latest report.
CREATE VIEW v_pairs AS
SELECT r.kit_id, p.run_id, p.evaluator_model, p.gate_pass, p.pm_pass, p.form, p.score
FROM v_kit_reports r JOIN calibration_pairs p ON p.sync = r.sync;

-- The confusion table of each kit's pairs per evaluator model and form: a count
-- of the pairs above (the statistics of a table are pmos's, see v_calibration).
CREATE VIEW v_pair_counts AS
SELECT kit_id, evaluator_model, form,
    count(*) FILTER (WHERE gate_pass AND pm_pass) AS tp,
    count(*) FILTER (WHERE NOT gate_pass AND pm_pass) AS fn,
    count(*) FILTER (WHERE gate_pass AND NOT pm_pass) AS fp,
    count(*) FILTER (WHERE NOT gate_pass AND NOT pm_pass) AS tn
FROM v_pairs
GROUP BY kit_id, evaluator_model, form;

-- The queues, as `pmos queue --json` gave them at each kit's latest sync
-- (an entry's age is now() - age_from).
CREATE VIEW v_verification_queue AS
SELECT r.kit_id, q.run_id, q.initiative_id, q.registered, q.age_from::timestamptz AS age_from,
    q.status, q.skipped_reason
FROM v_kit_reports r CROSS JOIN LATERAL jsonb_to_recordset(r.queue->'verification_debt')
    AS q(run_id text, initiative_id text, registered boolean, age_from text, status text,
         skipped_reason text);

CREATE VIEW v_acceptance_queue AS
SELECT r.kit_id, q.run_id, q.initiative_id, q.registered, q.age_from::timestamptz AS age_from,
    q.verdict, q.record_id, q.label_superseded
FROM v_kit_reports r CROSS JOIN LATERAL jsonb_to_recordset(r.queue->'acceptance_debt')
    AS q(run_id text, initiative_id text, registered boolean, age_from text, verdict text,
         record_id text, label_superseded boolean);

CREATE VIEW v_calibration_queue AS
SELECT r.kit_id, q.run_id, q.initiative_id, q.registered, q.age_from::timestamptz AS age_from,
    q.status, q.skipped_reason
FROM v_kit_reports r CROSS JOIN LATERAL jsonb_to_recordset(r.queue->'calibration_debt')
    AS q(run_id text, initiative_id text, registered boolean, age_from text, status text,
         skipped_reason text);
