-- Labels given blind ('pmos accept --blind') and the plan weight a label claims
-- ('pmos accept --plan') as typed columns, so 'pmos metrics --db' reads them as
-- file mode does (blind_pairs, blind_kappa; the weighting block). The readers
-- still derive every plan weight themselves (pmos.gate.plan); the column only
-- carries what the label says. Rows synced before this migration are typed
-- from their stored record by the one rule of pmos.db.columns (a JSON boolean,
-- a JSON number; anything else NULL).
ALTER TABLE acceptances ADD COLUMN blind boolean;
ALTER TABLE acceptances ADD COLUMN plan_weight double precision;
UPDATE acceptances SET
    blind = CASE WHEN jsonb_typeof(record -> 'blind') = 'boolean'
        THEN (record ->> 'blind')::boolean END,
    plan_weight = CASE WHEN jsonb_typeof(record -> 'plan_weight') = 'number'
        THEN (record ->> 'plan_weight')::double precision END
WHERE record ? 'blind' OR record ? 'plan_weight';
