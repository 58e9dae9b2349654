"""Whose rights an engine call runs with (issue 12: delegation without escalation).

Every engine entry that reads a dataset's source or its releases runs with the rights of the
dataset's owner (the role that registered it, `pganon.dataset.owner`). Why: a superuser (or any
other member of the owner role) acting on somebody's dataset would otherwise run that owner's
code with its own rights — a function inside a registered view, or a release relation swapped
for a view — which is how a database owner could make a superuser's publish run its code. With
the owner's rights, the owner only ever runs its own code as itself.

The switch is `SET LOCAL ROLE`: the engine's SQL wrappers pin search_path, so PostgreSQL reverts
every SET LOCAL made inside them when they return, and the caller's own role comes back.

A source that runs code when read (a view, a foreign table) must belong to the dataset's owner;
one owned by another role is refused: its owner's code would run with the owner of the dataset.
"""

from pganon_engine.core.errors import EngineError, unknown  # noqa: F401 (unknown: act_for_*)

CODE_ON_READ = {"v": "view", "f": "foreign table"}


def refused(message, hint=None):
    return EngineError(message, "PA002", hint)


def act_as_owner(db, dataset_id):
    """Switch to the owner of the dataset (nothing to do when the caller is that role); the
    rule, and its refusals, are pganon._owner_to_act_as (SQL callers use it too)."""
    role = db.one("SELECT pganon._owner_to_act_as($1) AS r", [dataset_id], ["int4"])["r"]
    if role is not None:
        db.run(f"SET LOCAL ROLE {db.ident(role)}")


def act_for_release(db, release_id):
    row = db.one("SELECT dataset_id FROM pganon.release WHERE id = $1", [release_id], ["int8"])
    if row is None:
        raise unknown(f"release {release_id} does not exist or was dropped",
                      hint="list releases with SELECT * FROM pganon.releases")
    act_as_owner(db, row["dataset_id"])


def act_for_dataset(db, name):
    row = db.one("SELECT id FROM pganon.dataset WHERE name = $1", [name], ["text"])
    if row is None:
        raise unknown(f'dataset "{name}" is not registered',
                      hint="register it with pganon.register_dataset(name, source, key_column)")
    act_as_owner(db, row["id"])


def act_for_releases(db, release_ids):
    """compare: every release must belong to datasets of one owner, whose rights it then runs with."""
    rows = db.rows("SELECT d.owner::oid AS owner, min(d.id) AS dataset FROM pganon.release r "
                   "JOIN pganon.dataset d ON d.id = r.dataset_id WHERE r.id = ANY($1) GROUP BY 1",
                   [list(release_ids)], ["int8[]"])
    if len(rows) > 1:
        raise refused("these releases belong to datasets of different owners; compare one owner's releases at a time")
    if rows:
        act_as_owner(db, rows[0]["dataset"])


def check_source(db, dataset):
    """Refuse a source that runs code when read unless it belongs to the role we run as."""
    r = db.one("SELECT c.relkind::text AS kind, c.oid::regclass::text AS source, "
               "pg_catalog.pg_get_userbyid(c.relowner) AS owner, "
               "c.relowner = (SELECT oid FROM pg_catalog.pg_roles WHERE rolname = current_user) AS mine "
               "FROM pganon.dataset d JOIN pg_catalog.pg_class c ON c.oid = d.source WHERE d.name = $1",
               [dataset], ["text"])
    if r is not None and r["kind"] in CODE_ON_READ and not r["mine"]:
        raise refused(f"the source of dataset {dataset}, {r['source']}, is a {CODE_ON_READ[r['kind']]} owned by "
                      f"{r['owner']}: reading it would run that role's code with the rights of the dataset's owner",
                      hint=f"register the dataset as {r['owner']}, or copy the rows into a table the dataset's "
                           "owner owns (CREATE TABLE ... AS SELECT)")
