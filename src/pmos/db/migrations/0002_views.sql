-- pmos database schema, version 2: views that answer the calibration
-- questions in SQL, for dashboards and anyone with a SQL prompt.
--
-- `pmos metrics --db` and `pmos queue --db` compute their figures with the
-- same Python code as file mode, from the per-run views below (v_latest_*,
-- v_first_*, v_registration); the summary views (v_calibration,
-- v_calibration_by_model, v_goodhart_tripwire and the two queues) give the
-- same figures in SQL, and a test holds them equal.
--
-- "Latest" and "first" always order by (recorded_at, record_id), never by
-- storage order: one kit's records arrive from many clones and branches.
-- Kits are separate: a run is (kit, run_id). Ratios are rounded to 6
-- decimals, as pmos metrics --json rounds them.

-- Each kit's settings: those its latest sync recorded (pmos.yaml, defaults filled in).
CREATE VIEW v_kit_settings AS
SELECT DISTINCT ON (s.kit) s.kit, k.kit_id, s.settings
FROM syncs s JOIN kits k USING (kit)
ORDER BY s.kit, s.sync DESC;

-- Per run: its latest judged (non-SKIPPED) verdict.
CREATE VIEW v_latest_judged AS
SELECT DISTINCT ON (kit, run_id)
    kit, run_id, record_id, recorded_at, record->>'recorded_at' AS recorded_at_text,
    verdict, verdict IN ('PASS', 'PASS-WITH-FINDINGS') AS gate_pass,
    evaluator_model, initiative_id, score, form
FROM evals
WHERE verdict <> 'SKIPPED'
ORDER BY kit, run_id, recorded_at DESC, record_id DESC;

-- Per run: its latest SKIPPED verdict.
CREATE VIEW v_latest_skip AS
SELECT DISTINCT ON (kit, run_id)
    kit, run_id, record_id, recorded_at, record->>'recorded_at' AS recorded_at_text,
    evaluator_model, initiative_id, skipped_reason
FROM evals
WHERE verdict = 'SKIPPED'
ORDER BY kit, run_id, recorded_at DESC, record_id DESC;

-- Per run: its latest verdict of any kind (a SKIPPED one included).
CREATE VIEW v_latest_verdict AS
SELECT DISTINCT ON (kit, run_id)
    kit, run_id, record_id, recorded_at, verdict, skipped_reason
FROM evals
ORDER BY kit, run_id, recorded_at DESC, record_id DESC;

-- Per run: its first verdict (a run that was never registered is aged from it).
CREATE VIEW v_first_verdict AS
SELECT DISTINCT ON (kit, run_id)
    kit, run_id, record_id, recorded_at, record->>'recorded_at' AS recorded_at_text,
    initiative_id
FROM evals
ORDER BY kit, run_id, recorded_at, record_id;

-- Per run: its latest PM label.
CREATE VIEW v_latest_label AS
SELECT DISTINCT ON (kit, run_id)
    kit, run_id, record_id, recorded_at, record->>'recorded_at' AS recorded_at_text,
    label, label = 'pass' AS pm_pass, gate_record_id, gate_verdict, initiative_id
FROM acceptances
ORDER BY kit, run_id, recorded_at DESC, record_id DESC;

-- Per run: its first PM label.
CREATE VIEW v_first_label AS
SELECT DISTINCT ON (kit, run_id)
    kit, run_id, record_id, recorded_at, initiative_id
FROM acceptances
ORDER BY kit, run_id, recorded_at, record_id;

-- Per run: its first registration.
CREATE VIEW v_registration AS
SELECT DISTINCT ON (kit, run_id)
    kit, run_id, record_id, recorded_at, record->>'recorded_at' AS recorded_at_text,
    initiative_id, builder_model
FROM runs
ORDER BY kit, run_id, recorded_at, record_id;

-- THE PAIRING RULE. Every calibration and queue view below builds on this
-- view, and nothing else decides what pairs with what. A run's latest label
-- pairs with the run's latest judged verdict when the label names that
-- verdict (its gate_record_id). A label that judged another verdict (an
-- earlier one, or none) while the run has a newer judged verdict is
-- 'superseded': it is not paired, and the run owes a label again. A run with
-- a label and no judged verdict is 'label-without-verdict'; one with a judged
-- verdict and no label is 'unlabelled'.
CREATE VIEW v_pairs AS
SELECT
    coalesce(j.kit, l.kit) AS kit,
    coalesce(j.run_id, l.run_id) AS run_id,
    j.record_id AS verdict_record_id,
    j.verdict,
    j.gate_pass,
    j.evaluator_model,
    j.initiative_id AS verdict_initiative_id,
    j.recorded_at AS verdict_recorded_at,
    l.record_id AS label_record_id,
    l.label,
    l.pm_pass,
    l.gate_record_id,
    l.initiative_id AS label_initiative_id,
    l.recorded_at AS label_recorded_at,
    CASE
        WHEN j.record_id IS NULL THEN 'label-without-verdict'
        WHEN l.record_id IS NULL THEN 'unlabelled'
        WHEN l.gate_record_id = j.record_id THEN 'paired'
        ELSE 'superseded'
    END AS pairing
FROM v_latest_judged j
FULL JOIN v_latest_label l ON l.kit = j.kit AND l.run_id = j.run_id;

-- Agreement statistics of a 2x2 table (pass is the positive class), exact
-- in numeric arithmetic: kappa = (n (tp + tn) - E) / (n^2 - E) with
-- E = (tp + fp)(tp + fn) + (fn + tn)(fp + tn), i.e. (p_o - p_e) / (1 - p_e).
-- NULL where the denominator is zero (pmos metrics says why under "undefined").
CREATE FUNCTION pmos_agreement(
    tp bigint, fn bigint, fp bigint, tn bigint,
    OUT observed_agreement numeric, OUT kappa numeric, OUT tpr numeric, OUT tnr numeric
)
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN (
    round((tp + tn)::numeric / nullif(tp + fn + fp + tn, 0), 6),
    round(
        ((tp + fn + fp + tn)::numeric * (tp + tn) - ((tp + fp)::numeric * (tp + fn) + (fn + tn)::numeric * (fp + tn)))
        / nullif((tp + fn + fp + tn)::numeric * (tp + fn + fp + tn)
                 - ((tp + fp)::numeric * (tp + fn) + (fn + tn)::numeric * (fp + tn)), 0),
        6),
    round(tp::numeric / nullif(tp + fn, 0), 6),
    round(tn::numeric / nullif(tn + fp, 0), 6)
);

-- Judged verdicts numbered newest first: per kit, per kit and model, over all
-- kits, and per model over all kits. The pass fraction of a group is the
-- share of pass-side verdicts among its first `window` (across kits, equal
-- instants and record ids are ordered by kit).
CREATE VIEW v_recent_judged AS
SELECT
    kit, evaluator_model, recorded_at, record_id, gate_pass,
    row_number() OVER (PARTITION BY kit ORDER BY recorded_at DESC, record_id DESC) AS kit_rank,
    row_number() OVER (PARTITION BY kit, evaluator_model
                       ORDER BY recorded_at DESC, record_id DESC) AS kit_model_rank,
    row_number() OVER (ORDER BY recorded_at DESC, record_id DESC, kit DESC) AS overall_rank,
    row_number() OVER (PARTITION BY evaluator_model
                       ORDER BY recorded_at DESC, record_id DESC, kit DESC) AS model_rank
FROM (
    SELECT kit, evaluator_model, recorded_at, record_id,
           verdict IN ('PASS', 'PASS-WITH-FINDINGS') AS gate_pass
    FROM evals WHERE verdict <> 'SKIPPED'
) judged;

-- The groups every summary reports on: each kit, and all kits (kit NULL),
-- with the settings that apply (the kit's, or the team's for all kits).
CREATE VIEW v_scopes AS
SELECT s.kit, s.kit_id, s.settings FROM v_kit_settings s
UNION ALL
SELECT NULL, NULL, t.settings FROM team_settings t;

-- The leniency tripwire: the pass fraction over the last `pass_fraction_window`
-- judged verdicts, against `goodhart_alarm`; the alarm sounds only over a full window.
CREATE VIEW v_goodhart_tripwire AS
WITH scoped AS (
    SELECT s.kit, s.kit_id, (s.settings->>'pass_fraction_window')::integer AS pass_fraction_window,
           (s.settings->>'goodhart_alarm')::numeric AS goodhart_alarm
    FROM v_scopes s
), window_counts AS (
    SELECT sc.kit, count(r.kit) AS verdicts, count(r.kit) FILTER (WHERE r.gate_pass) AS passes
    FROM scoped sc
    LEFT JOIN v_recent_judged r
        ON (sc.kit IS NULL AND r.overall_rank <= sc.pass_fraction_window)
        OR (r.kit = sc.kit AND r.kit_rank <= sc.pass_fraction_window)
    GROUP BY sc.kit
)
SELECT
    sc.kit_id,
    sc.pass_fraction_window,
    w.verdicts AS verdicts_in_window,
    round(w.passes::numeric / nullif(w.verdicts, 0), 6) AS pass_fraction,
    sc.goodhart_alarm AS alarm_at,
    w.verdicts >= sc.pass_fraction_window AS window_full,
    coalesce(w.verdicts >= sc.pass_fraction_window
             AND round(w.passes::numeric / nullif(w.verdicts, 0), 6) >= sc.goodhart_alarm,
             false) AS goodhart_alarm
FROM scoped sc
JOIN window_counts w ON w.kit IS NOT DISTINCT FROM sc.kit;

-- Runs whose only verdicts are SKIPPED, with the model of the latest skip.
CREATE VIEW v_skipped_runs AS
SELECT s.kit, s.run_id, s.evaluator_model
FROM v_latest_skip s
WHERE NOT EXISTS (
    SELECT 1 FROM evals e
    WHERE e.kit = s.kit AND e.run_id = s.run_id AND e.verdict <> 'SKIPPED'
);

-- Calibration per kit and over all kits (kit_id NULL): pairs, the confusion
-- counts, agreement statistics and the pass fraction, as in pmos metrics --json.
CREATE VIEW v_calibration AS
WITH counts AS (
    SELECT g.kit,
        count(*) FILTER (WHERE p.pairing = 'paired') AS pairs,
        count(*) FILTER (WHERE p.pairing = 'paired' AND p.gate_pass AND p.pm_pass) AS tp,
        count(*) FILTER (WHERE p.pairing = 'paired' AND NOT p.gate_pass AND p.pm_pass) AS fn,
        count(*) FILTER (WHERE p.pairing = 'paired' AND p.gate_pass AND NOT p.pm_pass) AS fp,
        count(*) FILTER (WHERE p.pairing = 'paired' AND NOT p.gate_pass AND NOT p.pm_pass) AS tn,
        count(*) FILTER (WHERE p.pairing IN ('unlabelled', 'superseded')) AS unlabeled_verdicts,
        count(*) FILTER (WHERE p.pairing = 'superseded') AS labels_superseded,
        count(*) FILTER (WHERE p.pairing = 'label-without-verdict') AS labels_without_verdict
    FROM v_pairs p CROSS JOIN LATERAL (VALUES (p.kit), (NULL::integer)) AS g(kit)
    GROUP BY g.kit
), skips AS (
    SELECT g.kit, count(*) AS skipped
    FROM v_skipped_runs s CROSS JOIN LATERAL (VALUES (s.kit), (NULL::integer)) AS g(kit)
    GROUP BY g.kit
)
SELECT
    sc.kit_id,
    coalesce(c.pairs, 0) AS pairs,
    coalesce(c.tp, 0) AS tp,
    coalesce(c.fn, 0) AS fn,
    coalesce(c.fp, 0) AS fp,
    coalesce(c.tn, 0) AS tn,
    a.observed_agreement,
    a.kappa,
    a.tpr,
    a.tnr,
    g.pass_fraction,
    g.pass_fraction_window,
    g.goodhart_alarm,
    coalesce(sk.skipped, 0) AS skipped,
    coalesce(c.unlabeled_verdicts, 0) AS unlabeled_verdicts,
    coalesce(c.labels_without_verdict, 0) AS labels_without_verdict,
    coalesce(c.labels_superseded, 0) AS labels_superseded
FROM v_scopes sc
LEFT JOIN counts c ON c.kit IS NOT DISTINCT FROM sc.kit
LEFT JOIN skips sk ON sk.kit IS NOT DISTINCT FROM sc.kit
JOIN v_goodhart_tripwire g ON g.kit_id IS NOT DISTINCT FROM sc.kit_id
CROSS JOIN LATERAL pmos_agreement(
    coalesce(c.tp, 0), coalesce(c.fn, 0), coalesce(c.fp, 0), coalesce(c.tn, 0)
) a;

-- Calibration per evaluator model, per kit and over all kits (kit_id NULL).
-- A run counts for the model of its latest judged verdict (a run with only
-- skips, for the model of its latest skip); a model whose verdicts were all
-- superseded still has its pass fraction.
CREATE VIEW v_calibration_by_model AS
WITH counts AS (
    SELECT g.kit, p.evaluator_model,
        count(*) FILTER (WHERE p.pairing = 'paired') AS pairs,
        count(*) FILTER (WHERE p.pairing = 'paired' AND p.gate_pass AND p.pm_pass) AS tp,
        count(*) FILTER (WHERE p.pairing = 'paired' AND NOT p.gate_pass AND p.pm_pass) AS fn,
        count(*) FILTER (WHERE p.pairing = 'paired' AND p.gate_pass AND NOT p.pm_pass) AS fp,
        count(*) FILTER (WHERE p.pairing = 'paired' AND NOT p.gate_pass AND NOT p.pm_pass) AS tn,
        count(*) FILTER (WHERE p.pairing IN ('unlabelled', 'superseded')) AS unlabeled_verdicts
    FROM v_pairs p CROSS JOIN LATERAL (VALUES (p.kit), (NULL::integer)) AS g(kit)
    WHERE p.evaluator_model IS NOT NULL
    GROUP BY g.kit, p.evaluator_model
), skips AS (
    SELECT g.kit, s.evaluator_model, count(*) AS skipped
    FROM v_skipped_runs s CROSS JOIN LATERAL (VALUES (s.kit), (NULL::integer)) AS g(kit)
    WHERE s.evaluator_model IS NOT NULL
    GROUP BY g.kit, s.evaluator_model
), windows AS (
    SELECT sc.kit, r.evaluator_model,
        count(*) AS verdicts, count(*) FILTER (WHERE r.gate_pass) AS passes
    FROM v_scopes sc
    JOIN v_recent_judged r
        ON (sc.kit IS NULL AND r.model_rank <= (sc.settings->>'pass_fraction_window')::integer)
        OR (r.kit = sc.kit AND r.kit_model_rank <= (sc.settings->>'pass_fraction_window')::integer)
    GROUP BY sc.kit, r.evaluator_model
), groups AS (
    SELECT kit, evaluator_model FROM counts
    UNION SELECT kit, evaluator_model FROM skips
    UNION SELECT kit, evaluator_model FROM windows
)
SELECT
    sc.kit_id,
    gr.evaluator_model,
    coalesce(c.pairs, 0) AS pairs,
    coalesce(c.tp, 0) AS tp,
    coalesce(c.fn, 0) AS fn,
    coalesce(c.fp, 0) AS fp,
    coalesce(c.tn, 0) AS tn,
    a.observed_agreement,
    a.kappa,
    a.tpr,
    a.tnr,
    round(w.passes::numeric / nullif(w.verdicts, 0), 6) AS pass_fraction,
    coalesce(w.verdicts >= (sc.settings->>'pass_fraction_window')::integer
             AND round(w.passes::numeric / nullif(w.verdicts, 0), 6)
                 >= (sc.settings->>'goodhart_alarm')::numeric,
             false) AS goodhart_alarm,
    coalesce(sk.skipped, 0) AS skipped,
    coalesce(c.unlabeled_verdicts, 0) AS unlabeled_verdicts
FROM groups gr
JOIN v_scopes sc ON sc.kit IS NOT DISTINCT FROM gr.kit
LEFT JOIN counts c ON c.kit IS NOT DISTINCT FROM gr.kit AND c.evaluator_model = gr.evaluator_model
LEFT JOIN skips sk ON sk.kit IS NOT DISTINCT FROM gr.kit AND sk.evaluator_model = gr.evaluator_model
LEFT JOIN windows w ON w.kit IS NOT DISTINCT FROM gr.kit AND w.evaluator_model = gr.evaluator_model
CROSS JOIN LATERAL pmos_agreement(
    coalesce(c.tp, 0), coalesce(c.fn, 0), coalesce(c.fp, 0), coalesce(c.tn, 0)
) a;

-- Every run a kit knows of: registered, with a verdict, or with a label.
CREATE VIEW v_known_runs AS
SELECT kit, run_id FROM v_registration
UNION
SELECT kit, run_id FROM v_latest_verdict
UNION
SELECT kit, run_id FROM v_latest_label;

-- Verification debt: every run whose latest verdict is missing or SKIPPED,
-- registered or not. Aged from its registration, else its first verdict, else
-- its first label.
CREATE VIEW v_verification_queue AS
SELECT
    k.kit_id,
    r.run_id,
    coalesce(reg.initiative_id, fv.initiative_id, fl.initiative_id) AS initiative_id,
    reg.run_id IS NOT NULL AS registered,
    coalesce(reg.recorded_at, fv.recorded_at, fl.recorded_at) AS age_from,
    floor(extract(epoch FROM now() - coalesce(reg.recorded_at, fv.recorded_at, fl.recorded_at)))::bigint
        AS age_seconds,
    CASE WHEN lv.run_id IS NULL THEN 'no-verdict' ELSE 'skipped' END AS status,
    lv.skipped_reason
FROM v_known_runs r
JOIN kits k ON k.kit = r.kit
LEFT JOIN v_registration reg ON reg.kit = r.kit AND reg.run_id = r.run_id
LEFT JOIN v_latest_verdict lv ON lv.kit = r.kit AND lv.run_id = r.run_id
LEFT JOIN v_first_verdict fv ON fv.kit = r.kit AND fv.run_id = r.run_id
LEFT JOIN v_first_label fl ON fl.kit = r.kit AND fl.run_id = r.run_id
WHERE lv.run_id IS NULL OR lv.verdict = 'SKIPPED';

-- Acceptance debt: every run with a judged verdict that no PM label judges
-- (never labelled, or its label superseded by a newer verdict; see v_pairs).
CREATE VIEW v_acceptance_queue AS
SELECT
    k.kit_id,
    p.run_id,
    coalesce(reg.initiative_id, fv.initiative_id) AS initiative_id,
    reg.run_id IS NOT NULL AS registered,
    coalesce(reg.recorded_at, fv.recorded_at) AS age_from,
    floor(extract(epoch FROM now() - coalesce(reg.recorded_at, fv.recorded_at)))::bigint
        AS age_seconds,
    p.verdict,
    p.pairing = 'superseded' AS label_superseded
FROM v_pairs p
JOIN kits k ON k.kit = p.kit
LEFT JOIN v_registration reg ON reg.kit = p.kit AND reg.run_id = p.run_id
LEFT JOIN v_first_verdict fv ON fv.kit = p.kit AND fv.run_id = p.run_id
WHERE p.pairing IN ('unlabelled', 'superseded');
