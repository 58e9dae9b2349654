-- All grants, in one place. Start from nothing; then two roles (created by install, NOLOGIN):
--
--   pganon_reader  analysts: SELECT on the release views in pganon_release, nothing else.
--   pganon_admin   delegated data owners: register datasets on tables they can read, declare
--                  them, publish, verify, promote and drop their releases. Row-level security
--                  confines every member to the datasets of roles it belongs to (the dataset's
--                  owner, pganon.dataset.owner): other admins' datasets, declarations (values of
--                  their sensitive columns), releases and policies are invisible and unchangeable.
--                  The engine's code (pganon._engine_module) is read-only to them. Publishing runs
--                  with the rights of the dataset's owner (roles.py), so nobody's code runs with
--                  somebody else's rights. Members may expose to readers what they can read:
--                  pganon protects against escalation and against other admins, not against a
--                  data owner who publishes their own data.
--
-- Every function is SECURITY INVOKER except pganon.grant_reader / revoke_reader (30-publish/20-roles.sql):
-- granting a role needs its ADMIN OPTION, which PostgreSQL 15 does not pass on to the members of
-- pganon_admin.

REVOKE ALL ON SCHEMA pganon, pganon_data, pganon_release FROM PUBLIC;
REVOKE ALL ON ALL TABLES IN SCHEMA pganon, pganon_data FROM PUBLIC;
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA pganon FROM PUBLIC;
REVOKE ALL ON ALL SEQUENCES IN SCHEMA pganon FROM PUBLIC;

GRANT USAGE ON SCHEMA pganon_release TO pganon_reader;
GRANT SELECT ON ALL TABLES IN SCHEMA pganon_release TO pganon_reader;

-- pganon_admin: the API (all invoker functions), its own rows of the catalog, its own relations
GRANT USAGE ON SCHEMA pganon TO pganon_admin;
GRANT USAGE, CREATE ON SCHEMA pganon_data, pganon_release TO pganon_admin;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA pganon TO pganon_admin;
GRANT USAGE ON ALL SEQUENCES IN SCHEMA pganon TO pganon_admin;
GRANT SELECT ON pganon._engine_module, pganon._installation TO pganon_admin;
GRANT SELECT ON pganon.releases, pganon.attributes, pganon.sa_dependencies, pganon.semantic_rules,
                pganon.hierarchies, pganon.release_metrics TO pganon_admin;

DO $$
DECLARE
  t text;
  -- (table, the condition that makes a row the caller's: its dataset is visible to the caller)
  own constant text[][] := ARRAY[
    ['dataset',        'pg_catalog.pg_has_role(current_user, owner, ''USAGE'')'],
    ['attribute',      'EXISTS (SELECT 1 FROM pganon.dataset d WHERE d.id = dataset_id)'],
    ['security_level', 'EXISTS (SELECT 1 FROM pganon.dataset d WHERE d.id = dataset_id)'],
    ['level_l',        'EXISTS (SELECT 1 FROM pganon.dataset d WHERE d.id = dataset_id)'],
    ['sa_dependency',  'EXISTS (SELECT 1 FROM pganon.dataset d WHERE d.id = dataset_id)'],
    ['sa_linking',     'EXISTS (SELECT 1 FROM pganon.dataset d WHERE d.id = dataset_id)'],
    ['hierarchy',      'EXISTS (SELECT 1 FROM pganon.dataset d WHERE d.id = dataset_id)'],
    ['hierarchy_node', 'EXISTS (SELECT 1 FROM pganon.dataset d WHERE d.id = dataset_id)'],
    ['semantic_rule',  'EXISTS (SELECT 1 FROM pganon.dataset d WHERE d.id = dataset_id)'],
    ['release',        'EXISTS (SELECT 1 FROM pganon.dataset d WHERE d.id = dataset_id)'],
    ['release_risk',   'EXISTS (SELECT 1 FROM pganon.release r WHERE r.id = release_id)']];
  i int;
  extra text;
BEGIN
  FOR i IN 1 .. array_length(own, 1) LOOP
    t := own[i][1];
    EXECUTE format('ALTER TABLE pganon.%I ENABLE ROW LEVEL SECURITY', t);
    IF EXISTS (SELECT 1 FROM pg_catalog.pg_policies WHERE schemaname = 'pganon' AND tablename = t
                                                     AND policyname = 'pganon_admin_own') THEN
      EXECUTE format('DROP POLICY pganon_admin_own ON pganon.%I', t);
    END IF;
    -- a dataset may only point at a table its owner can read (its declared columns are checked one by one)
    extra := CASE WHEN t = 'dataset' THEN ' AND pg_catalog.has_any_column_privilege(current_user, source, ''SELECT'')'
                  ELSE '' END;
    EXECUTE format('CREATE POLICY pganon_admin_own ON pganon.%I TO pganon_admin USING (%s) WITH CHECK (%s%s)',
                   t, own[i][2], own[i][2], extra);
    EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON pganon.%I TO pganon_admin', t);
  END LOOP;
END $$;

-- the catalog views show each caller its own rows (row-level security applies to the caller)
ALTER VIEW pganon.releases SET (security_invoker = true);
ALTER VIEW pganon.attributes SET (security_invoker = true);
ALTER VIEW pganon.sa_dependencies SET (security_invoker = true);
ALTER VIEW pganon.semantic_rules SET (security_invoker = true);
ALTER VIEW pganon.hierarchies SET (security_invoker = true);
