-- Giving analysts access without a superuser. The only SECURITY DEFINER functions of pganon:
-- GRANT/REVOKE of a role need its ADMIN OPTION, which PostgreSQL 15 does not pass on to the
-- members of pganon_admin. They grant nothing but pganon_reader, to a role that exists, with a
-- pinned search_path; only members of pganon_admin (and superusers) may call them.

CREATE OR REPLACE FUNCTION pganon.grant_reader(analyst regrole) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  IF analyst IS NULL THEN
    RAISE EXCEPTION 'give the role of the analyst' USING ERRCODE = 'PA002';
  END IF;
  IF analyst::text IN ('pganon_admin', 'pganon_reader') THEN
    RAISE EXCEPTION 'pganon_reader is for analysts, not for %', analyst USING ERRCODE = 'PA002';
  END IF;
  EXECUTE format('GRANT pganon_reader TO %I', analyst::text);
END $$;
COMMENT ON FUNCTION pganon.grant_reader(regrole) IS
  'Let a role read the release views (GRANT pganon_reader TO it), for members of pganon_admin. '
  'Example: SELECT pganon.grant_reader(''analyst'');';

CREATE OR REPLACE FUNCTION pganon.revoke_reader(analyst regrole) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  IF analyst IS NULL THEN
    RAISE EXCEPTION 'give the role of the analyst' USING ERRCODE = 'PA002';
  END IF;
  EXECUTE format('REVOKE pganon_reader FROM %I', analyst::text);
END $$;
COMMENT ON FUNCTION pganon.revoke_reader(regrole) IS
  'Take back a role''s access to the release views (REVOKE pganon_reader FROM it).';

-- Whose rights a call on a dataset runs with: its owner's (roles.py says why). The callers switch
-- with SET LOCAL ROLE themselves (a SET LOCAL inside this function would end with it).
CREATE OR REPLACE FUNCTION pganon._owner_to_act_as(dataset_id int) RETURNS text
LANGUAGE plpgsql STABLE SECURITY INVOKER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE own oid; nm text; ds text;
BEGIN
  SELECT d.owner, d.name INTO own, ds FROM pganon.dataset d WHERE d.id = _owner_to_act_as.dataset_id;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'dataset % is not registered', dataset_id USING ERRCODE = 'PA001';
  END IF;
  IF own = (SELECT r.oid FROM pg_roles r WHERE r.rolname = current_user) THEN
    RETURN NULL;                                   -- already the owner
  END IF;
  SELECT r.rolname INTO nm FROM pg_roles r WHERE r.oid = own;
  IF nm IS NULL THEN
    RAISE EXCEPTION 'the owner of dataset "%" (role oid %) no longer exists', ds, own USING ERRCODE = 'PA001',
      HINT = 'a superuser can hand the dataset to another role: UPDATE pganon.dataset SET owner = ''role'' WHERE name = ...';
  END IF;
  IF NOT pg_has_role(current_user, own, 'MEMBER') THEN
    RAISE EXCEPTION 'dataset "%" belongs to role %, and you are not a member of it', ds, nm USING ERRCODE = 'PA002';
  END IF;
  IF NOT ((SELECT r.rolsuper FROM pg_roles r WHERE r.oid = own) OR pg_has_role(own, 'pganon_admin', 'USAGE')) THEN
    RAISE EXCEPTION 'the owner of dataset "%", role %, is not a member of pganon_admin', ds, nm USING ERRCODE = 'PA002',
      HINT = format('GRANT pganon_admin TO %I; releases run with the owner''s rights', nm);
  END IF;
  RETURN nm;
END $$;
COMMENT ON FUNCTION pganon._owner_to_act_as(int) IS
  'Internal: the role a call on the dataset must switch to (SET LOCAL ROLE), NULL when the caller is its owner.';
