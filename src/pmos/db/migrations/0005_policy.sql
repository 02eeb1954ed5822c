-- pmos database schema, version 5: the policy ledger.
--
-- 'pmos policy approve' records a PM's signed approval of a kit's trust files
-- (pmos.yaml, the allowed signers, rubrics, known-bad cases, anchors); 'pmos
-- sync' copies those records like every other kind's.

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
