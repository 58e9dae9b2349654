-- Loading the engine through the database connection.
--
-- pganon._engine_boot() installs, once per session, an import hook that resolves the package
-- pganon_engine from the table pganon._engine_module. When the installed code changed since the
-- session imported it (a re-install), the session's copies are dropped and imported afresh.

CREATE OR REPLACE FUNCTION pganon._engine_boot() RETURNS text
LANGUAGE plpython3u VOLATILE SECURITY INVOKER SET search_path = pg_catalog, pg_temp
AS $$
import sys
import importlib.abc
import importlib.util

installed = plpy.execute("SELECT engine_hash FROM pganon._installation")
if not installed:
    plpy.error("pganon is not installed in this database", sqlstate="PA007",
               hint="run `pganon install`")
want = installed[0]["engine_hash"]
if GD.get("pganon_engine_hash") == want and "pganon_engine" in sys.modules:
    return want

class _DbFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds pganon_engine modules in pganon._engine_module."""
    pganon_db_finder = True

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "pganon_engine" and not fullname.startswith("pganon_engine."):
            return None
        rows = plpy.execute(plpy.prepare(
            "SELECT is_package, source FROM pganon._engine_module WHERE name = $1", ["text"]), [fullname])
        if not rows:
            return None
        spec = importlib.util.spec_from_loader(fullname, self, is_package=rows[0]["is_package"])
        spec.loader_state = rows[0]["source"]
        return spec

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        source = module.__spec__.loader_state
        module.__file__ = "<pganon_engine:" + module.__name__ + ">"
        exec(compile(source, module.__file__, "exec"), module.__dict__)

for name in [m for m in sys.modules if m == "pganon_engine" or m.startswith("pganon_engine.")]:
    del sys.modules[name]
sys.meta_path[:] = [f for f in sys.meta_path if not getattr(f, "pganon_db_finder", False)]
sys.meta_path.insert(0, _DbFinder())
GD["pganon_engine_hash"] = want
return want
$$;
COMMENT ON FUNCTION pganon._engine_boot() IS
  'Internal: make the pganon_engine package importable in this session from pganon._engine_module.';

-- One door for engine calls that return jsonb: pganon._engine(entry, arguments) runs the entry
-- point named in pganon_engine.release.entries.ENTRIES with the object's keys as keyword arguments; pganon._call strips the
-- "plpy.Error: " prefix PL/Python puts on every message, keeping SQLSTATE, hint and detail.
-- Public functions are one-line SQL wrappers around pganon._call.
CREATE OR REPLACE FUNCTION pganon._engine(entry text, arguments jsonb) RETURNS jsonb
LANGUAGE plpython3u VOLATILE SECURITY INVOKER SET search_path = pg_catalog, pg_temp
AS $$
plpy.execute("SELECT pganon._engine_boot()")
from pganon_engine.core import plpy_adapter
from pganon_engine.release import entries
return plpy_adapter.call(plpy, entries.run, entry=entry, arguments=arguments)
$$;
COMMENT ON FUNCTION pganon._engine(text, jsonb) IS
  'Internal: run the engine entry point ENTRIES[entry](db, **arguments); returns its jsonb result.';

CREATE OR REPLACE FUNCTION pganon._call(entry text, arguments jsonb) RETURNS jsonb
LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  msg text; code text; hint text; detail text;
BEGIN
  RETURN pganon._engine(entry, arguments);
EXCEPTION WHEN SQLSTATE 'PA000' THEN
  GET STACKED DIAGNOSTICS msg = MESSAGE_TEXT, code = RETURNED_SQLSTATE, hint = PG_EXCEPTION_HINT,
                          detail = PG_EXCEPTION_DETAIL;
  RAISE EXCEPTION USING MESSAGE = regexp_replace(msg, '^plpy\.[A-Za-z]+: ', ''), ERRCODE = code,
                        HINT = coalesce(hint, ''), DETAIL = coalesce(detail, '');
END $$;
COMMENT ON FUNCTION pganon._call(text, jsonb) IS
  'Internal: pganon._engine with pganon''s errors (class PA) raised with clean messages.';
