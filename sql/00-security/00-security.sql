-- pganon: security model, stated once.
--
-- Threat model. The source tables hold microdata about people. Analysts (role pganon_reader) may
-- read only the stable release views in schema pganon_release: the GT/ST and promise of the
-- current release of each dataset (a candidate is invisible until pganon.promote makes it current). They may not read the source, the catalog, the engine's work tables
-- or the row-to-group maps in pganon_data (a map re-identifies every published row). Publishing,
-- verifying and managing the catalog is for the database owner / an admin who can already read
-- the source. Every function below is SECURITY INVOKER and pins search_path, so a caller cannot
-- shadow pg_catalog objects with their own; dynamic SQL quotes identifiers (%I, quote_ident) and
-- passes values as parameters. The engine is PL/Python (plpython3u, untrusted): only a superuser
-- can install it, and its code is loaded from pganon._engine_module through the connection, never
-- from the server's file system.
--
-- Errors carry pganon's own SQLSTATE class PA:
--   PA001 unknown object      PA002 invalid argument     PA003 incomplete metadata
--   PA004 bad data            PA005 unsatisfiable        PA006 verification failed
--   PA007 engine mismatch     PA008 dependent objects block the operation
--   PA009 promote refused: the release breaks the dataset's policy
--   PA010 install/uninstall refused: an object not made by pganon could capture what they run
--   PA011 busy: a publish, promote or drop_release waited its bounded lock_timeout (holders named)

CREATE OR REPLACE FUNCTION pganon.version() RETURNS text
LANGUAGE sql STABLE SECURITY INVOKER SET search_path = pg_catalog, pg_temp
AS $$ SELECT version FROM pganon._installation $$;
COMMENT ON FUNCTION pganon.version() IS 'The installed pganon version.';
