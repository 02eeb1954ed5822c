-- A kit's role COPYs its records straight into the record tables.
--
-- PostgreSQL refuses COPY FROM into a table under row-level security, so a
-- kit's role had to COPY into a temporary table and move each chunk in with an
-- INSERT: every record written twice and inserted twice, most of the gap
-- between a sync and the server's own COPY. The record tables' rule was only
-- ever "a kit's role adds rows of its own kit" (their read policy let every
-- reader read every row; no UPDATE or DELETE is granted): a statement-level
-- trigger states that rule for INSERT and COPY alike, over the rows the
-- statement added, once per statement. A role may not disable a trigger on a
-- table it does not own. The other tables (syncs, synced_packs,
-- calibration_pairs) keep their row-level security: they are written by
-- INSERT.

-- The rule, once: a role bound to a kit (kits.role) adds rows of that kit only;
-- the tables' owner, a superuser and a role that bypasses row-level security
-- are not bound by it (as they were not by the policies); any other role adds
-- nothing (it has no kit).
CREATE FUNCTION pmos_own_kit_rows() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    bound integer;
BEGIN
    IF pg_has_role(current_user, (SELECT c.relowner FROM pg_class c WHERE c.oid = TG_RELID), 'USAGE')
       OR (SELECT r.rolsuper OR r.rolbypassrls FROM pg_roles r WHERE r.rolname = current_user) THEN
        RETURN NULL;
    END IF;
    SELECT k.kit INTO bound FROM kits k WHERE k.role = current_user;
    IF bound IS NULL OR EXISTS (SELECT 1 FROM pmos_added a WHERE a.kit IS DISTINCT FROM bound) THEN
        RAISE EXCEPTION 'new row violates the kit rule for table "%": the role % adds rows of its own kit only',
            TG_TABLE_NAME, current_user
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NULL;
END
$$;

DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['runs', 'evals', 'acceptances', 'assessments', 'task_evals', 'followups', 'tasks', 'policy']
    LOOP
        EXECUTE format('DROP POLICY pmos_read ON %I', t);
        EXECUTE format('DROP POLICY pmos_own_kit ON %I', t);
        EXECUTE format('ALTER TABLE %I DISABLE ROW LEVEL SECURITY', t);
        EXECUTE format(
            'CREATE TRIGGER pmos_own_kit AFTER INSERT ON %I '
            'REFERENCING NEW TABLE AS pmos_added FOR EACH STATEMENT '
            'EXECUTE FUNCTION pmos_own_kit_rows()', t
        );
    END LOOP;
END
$$;
