"""Candidate -> current (issue 11; DESIGN.md step 8, "promote").

A publish makes a *candidate*: verified, measured and risk-assessed, invisible to analysts.
`promote` makes it the dataset's *current* release, in one transaction with the views analysts
read (`pganon._expose`: they read stable tables whose rows switch to it, so readers are neither
blocked nor shown anything but the release current in their snapshot), and only if the
dataset's policy holds on its risk figures (linkage measured again against the releases
promoted by then). The release it replaces becomes *superseded*; promoting
a superseded release is how a DBA goes back.

The promise: what the current release guarantees, for analysts to read next to the data
(`pganon_release.<dataset>_promise`): method, model, the parameters that make the guarantee
(never seeds: a seed would let a reader undo the random numbering) and the risk figures with
their thresholds.
"""

import json

from pganon_engine.core.errors import EngineError, invalid, unknown, unsatisfiable
from pganon_engine.risk import assess as risk, linkage

PROMISE_LAYOUT_KEYS = ("model", "k", "l", "c", "c_f", "mode", "relaxed", "p", "sc", "privacy", "min_group",
                       "level_l", "alpha", "beta", "person", "k_scope", "persons_whole", "delta", "generalized",
                       "semantic")
PROMISE_PARAM_KEYS = ("mode", "c_f_excess", "eligibility", "strategy", "metric", "categorical", "coverage")


# Options kept for the papers' fixtures, (family or None for all, param, value): deterministic
# orders a reader could exploit, which promote refuses.
FIXTURE_OPTIONS = {(None, "numbering", "creation"): "keeps the engine's own numbering, which follows the source's order",
                   ("rating", "tie", "first"): "deals values in the paper's deterministic order (the chain attack)"}


def refused(message, hint=None, detail=None):
    return EngineError(message, "PA009", hint, detail)


def promote(db, release_id):
    """Make a candidate (or superseded) release current; returns its id. Holds the dataset's
    lock (one publish, promote or drop_release per dataset at a time, bounded wait), and shows
    the release through `pganon._expose` in the same transaction as the status change, so the
    views and the catalog agree in every snapshot."""
    r = db.one("SELECT r.dataset_id, d.name AS dataset FROM pganon.release r JOIN pganon.dataset d ON d.id = r.dataset_id "
               "WHERE r.id = $1", [release_id], ["int8"])
    if r is not None:
        bound_lock_waits(db)
        lock_dataset(db, r["dataset_id"], f"promote of release {release_id} (dataset {r['dataset']})")
    # read again under the lock: a promote or drop that committed while we waited is seen
    r = db.one("SELECT r.id, r.status, r.dataset_id, r.params::text AS params, r.layout::text AS layout, "
               "d.name AS dataset FROM pganon.release r JOIN pganon.dataset d ON d.id = r.dataset_id "
               "WHERE r.id = $1", [release_id], ["int8"])
    if r is None or r["status"] == "dropped":
        raise unknown(f"release {release_id} does not exist or was dropped",
                      hint="list releases with SELECT * FROM pganon.releases")
    params, lay = json.loads(r["params"]), json.loads(r["layout"])
    for (family, key, value), why in FIXTURE_OPTIONS.items():
        if params.get(key) == value and family in (None, lay["family"]):
            raise refused(f"release {release_id} {why} ({key} = '{value}'): a reader could exploit it",
                          hint=f"publish again without the {key} parameter (a fixture option)")
    if r["status"] == "current":
        return release_id
    # the release's relations are exactly those pganon made for it, before anything reads them
    db.rows("SELECT pganon._release_relation($1, k) FROM jsonb_object_keys($2::jsonb) AS k",
            [release_id, json.dumps(lay["relations"])], ["int8", "text"])
    linkage.refresh(db, release_id)
    failing = db.rows('SELECT measure, scope, value, threshold, detail FROM pganon.risk($1) '
                      'WHERE passed IS FALSE', [release_id], ["int8"])
    if failing:
        listing = "; ".join(f"{f['measure']} ({f['scope']}) = {_fmt(f['value'])} > threshold "
                            f"{_fmt(f['threshold'])}" if f["measure"] != "published_share" else
                            f"{f['measure']} ({f['scope']}) = {_fmt(f['value'])} < threshold {_fmt(f['threshold'])}"
                            for f in failing)
        raise refused(f"release {release_id} breaks the policy of dataset {r['dataset']}: {listing}",
                      hint="see SELECT * FROM pganon.risk(release); publish with other parameters, or change "
                           "the policy with pganon.set_policy(dataset, policy)",
                      detail="; ".join(f"{f['measure']} ({f['scope']}): {f['detail']}" for f in failing))
    db.run("UPDATE pganon.release SET status = 'superseded' WHERE dataset_id = $1 AND status = 'current'",
           [r["dataset_id"]], ["int4"])
    db.run("UPDATE pganon.release SET status = 'current', promoted_at = now() WHERE id = $1", [release_id], ["int8"])
    write_promise(db, release_id)
    db.run("SELECT pganon._expose($1)", [release_id], ["int8"])
    return release_id


def bound_lock_waits(db):
    """Every lock this engine call waits for, it waits for at most `pganon._lock_timeout_ms()`
    (a SET LOCAL inside the engine's wrapper, whose SET clause restores the caller's setting
    when the call returns). Returns that bound in ms."""
    ms = db.one("SELECT pganon._lock_timeout_ms() AS ms")["ms"]
    db.run(f"SELECT pg_catalog.set_config('lock_timeout', '{int(ms)}', true)")
    return ms


def lock_dataset(db, dataset_id, what):
    """One publish, promote or drop_release of a dataset at a time (PA011 after the bounded wait)."""
    db.run("SELECT pganon._lock_dataset($1, $2)", [dataset_id, what], ["int4", "text"])


def _fmt(x):
    return "none" if x is None else f"{x:.4g}"


def promise_of(lay, params):
    """The guarantee a release states, without anything that could undo it (seeds)."""
    out = {k: lay[k] for k in PROMISE_LAYOUT_KEYS if lay.get(k) is not None}
    out.update({k: params[k] for k in PROMISE_PARAM_KEYS if k in params and k not in out})
    out["sensitive"] = list(lay["sas"])
    out["quasi_identifiers"] = [q["column"] for q in lay["qis"]]
    return out


def write_promise(db, release_id):
    """Write the release's one-row promise relation from its layout and current risk: created
    at publish, its row replaced at promote (no DDL, so nothing reading it is ever blocked)."""
    r = db.one("SELECT r.method, r.params::text AS params, r.layout::text AS layout, r.promoted_at::text AS at "
               "FROM pganon.release r WHERE r.id = $1", [release_id], ["int8"])
    lay, params = json.loads(r["layout"]), json.loads(r["params"])
    if lay["relations"].get("promise") is None:
        return
    figures = [dict(x) for x in db.rows("SELECT measure, scope, value, threshold, passed FROM pganon.risk($1)",
                                         [release_id], ["int8"])]
    row = ("SELECT $1::text AS method, $2::text AS model, $3::jsonb AS promise, $4::jsonb AS risk, "
           "$5::timestamptz AS promoted_at")
    args = [r["method"], lay.get("model"), json.dumps(promise_of(lay, params)), json.dumps(figures), r["at"]]
    types = ["text", "text", "text", "text", "text"]
    rel = db.one("SELECT pganon._release_relation($1, 'promise')::text AS rel", [release_id], ["int8"])["rel"]
    if rel is None:
        db.run(f"CREATE TABLE pganon_data.r{int(release_id)}_promise AS {row}", args, types)
    else:
        db.run(f"DELETE FROM {rel}")
        db.run(f"INSERT INTO {rel} {row}", args, types)


def validate_policy(policy):
    """A policy maps risk measures to thresholds (a number in [0, 1]) or null (no threshold)."""
    if isinstance(policy, str):
        policy = json.loads(policy)
    if not isinstance(policy, dict):
        raise invalid("a policy must be a JSON object mapping risk measures to thresholds")
    bad = sorted(set(policy) - set(risk.POLICY_KEYS))
    if bad:
        raise invalid(f"unknown policy key(s) {bad}", hint=f"policy keys: {', '.join(risk.POLICY_KEYS)}")
    for key, v in policy.items():
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= 1):
            raise invalid(f"policy {key} must be a number in [0, 1] or null, not {v!r}")
    return policy


def check_published_share(ds, method, source_rows, published):
    """Refuse a release that would publish less than the dataset's policy asks (default: half
    the rows): an empty or near-empty release is not worth an analyst's trust or a DBA's review."""
    floor = (ds.policy or {}).get("published_share", risk.DEFAULT_PUBLISHED_SHARE)
    if floor is not None and source_rows and published < floor * source_rows:
        raise unsatisfiable(f"{method} would publish {published} of {source_rows} rows of dataset {ds.name} "
                            f"({published / source_rows:.1%}), below the policy's published share {floor:.0%}",
                            hint="ask for less (smaller k, l or SC), or lower published_share with "
                                 "pganon.set_policy(dataset, policy)")
