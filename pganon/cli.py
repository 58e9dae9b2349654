"""`pganon ...`: a thin CLI. Each subcommand calls one library function and prints its result.

Exit codes: 0 ok, 1 a release failed its verification, 2 user error (one line on stderr; add
--traceback to see where), 3 promote refused: the release breaks the dataset's policy (the failing
figures on stderr). Passwords are never printed: DSNs are not echoed.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import psycopg

from . import __version__, catalog, install, releases, server
from .connection import connect
from .errors import PganonError, PolicyRefused, VerificationFailed


def table(headers, rows) -> str:
    """A plain fixed-width table, the way psql prints one."""
    cells = [[_fmt(v) for v in r] for r in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]
    line = lambda vals: " | ".join(v.ljust(w) for v, w in zip(vals, widths)).rstrip()
    out = [line(headers), "-+-".join("-" * w for w in widths)] + [line(r) for r in cells]
    return "\n".join(out)


def _fmt(v) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:.4f}"
    if isinstance(v, (dict, list)):
        return json.dumps(v)
    return str(v)


def _kv(d: dict) -> str:
    return table(["", ""], list(d.items())).split("\n", 2)[2]


def _progress(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def split(text) -> list[str]:
    """A comma-separated list, blanks dropped."""
    return [c.strip() for c in (text or "").split(",") if c.strip()]


def _parse_params(args) -> dict:
    params = json.loads(args.params) if args.params else {}
    if not isinstance(params, dict):
        raise PganonError("--params must be a JSON object")
    for item in args.param or []:
        if "=" not in item:
            raise PganonError(f"--param {item!r} is not NAME=VALUE")
        k, v = item.split("=", 1)
        try:
            params[k] = json.loads(v)
        except ValueError:
            params[k] = v
    return params


# --- subcommands -----------------------------------------------------------------------------

def cmd_server(args):
    if args.action == "start":
        dsn = server.start()
        print(f"local server running: {dsn}")
    elif args.action == "stop":
        print("stopped" if server.stop() else "not running")
    else:
        print(_kv(server.status()))


def cmd_install(args):
    _progress("installing pganon")
    print(_kv(install.install(args.dsn)))


def cmd_uninstall(args):
    print(_kv(install.uninstall(args.dsn, cascade=args.cascade)))


def cmd_status(args):
    print(_kv(install.status(args.dsn)))


def cmd_register(args):
    with connect(args.dsn) as conn:
        did = catalog.register_dataset(conn, args.name, args.source, args.key, args.person)
    print(f"dataset {args.name} registered (id {did})")


def cmd_set_attribute(args):
    with connect(args.dsn) as conn:
        catalog.set_attribute(conn, args.dataset, args.column, args.role, args.kind)
    print(f"{args.dataset}.{args.column}: {args.role}{' ' + args.kind if args.kind else ''}")


def cmd_set_level(args):
    with connect(args.dsn) as conn:
        catalog.set_security_level(conn, args.dataset, args.column, args.value, args.level)
    print(f"{args.dataset}.{args.column} = {args.value!r}: level {args.level}")


def cmd_set_l(args):
    with connect(args.dsn) as conn:
        catalog.set_level_l(conn, args.dataset, args.level, args.l)
    print(f"{args.dataset}: l{args.level} = {args.l}")


def cmd_set_dependency(args):
    ids = split(args.identified_by)
    with connect(args.dsn) as conn:
        catalog.set_dependency(conn, args.dataset, args.column, ids)
    print(f"{args.dataset}.{args.column}: identified by {', '.join(ids) or 'nothing'} (weight {len(ids)})")


def cmd_set_delta(args):
    with connect(args.dsn) as conn:
        catalog.set_delta(conn, args.dataset, args.column)
    print(f"{args.dataset}: delta = {args.column or '(derived from the weights)'}")


def cmd_set_chi(args):
    with connect(args.dsn) as conn:
        catalog.set_external_factor(conn, args.dataset, args.column, args.chi)
    print(f"{args.dataset}.{args.column}: chi = {args.chi}")


def cmd_audit(args):
    with connect(args.dsn) as conn:
        rid = int(args.release) if args.release.isdigit() else releases.get(conn, dataset=args.release)["id"]
        report = conn.execute("SELECT pganon.audit(%s, %s)", (rid, args.delta)).fetchone()[0]
    if args.json:
        print(json.dumps(report, indent=2, sort_keys=True))
        return
    s = report["summary"]
    print(f"release {rid}: fingerprint-correlation audit (delta = {s['delta']}, zeta = {', '.join(s['zeta']) or '-'})")
    keys = ["n_buckets", "n_classes", "n_linkable_pairs", "n_singleton_cells", "n_pfcorr", "n_ffcorr", "n_breaches",
            "n_vulnerable_covered", "n_vulnerable_correct", "pririsk_max", "pririsk_mean", "n_classes_over_bound"]
    print(table(["measure", "value"], [(k.removeprefix("n_").replace("_", " "), s[k]) for k in keys]))
    if report["pairs_with_singletons"]:
        print(f"\nlinkable pairs with a single common value (first {len(report['pairs_with_singletons'])})")
        print(table(["buckets", "via", "single values", "breach"],
                    [(f"{p['buckets'][0]}-{p['buckets'][1]}", ", ".join(p["via"]),
                      "; ".join(f"{a}={v}" for a, v in p["singletons"].items()), p["kind"] or "-")
                     for p in report["pairs_with_singletons"]]))


def cmd_hierarchy(args):
    with connect(args.dsn) as conn:
        if args.action == "list":
            print(table(["dataset", "column", "origin", "height", "leaves", "nodes"],
                        catalog.hierarchies(conn, args.dataset)))
            return
        if not args.column:
            raise PganonError(f"hierarchy {args.action} needs DATASET and COLUMN")
        if args.action == "set":
            if not args.file:
                raise PganonError("hierarchy set needs --file CSV (ARX style: one row per leaf, leaf to root)")
            try:
                text = open(args.file, encoding="utf-8").read()
            except OSError as exc:
                raise PganonError(f"cannot read {args.file}: {exc.strerror}") from None
            print(_kv(catalog.set_hierarchy(conn, args.dataset, args.column, text, args.sep)))
        elif args.action == "build":
            if not args.builder:
                raise PganonError("hierarchy build needs --builder intervals|dates|redaction")
            print(_kv(catalog.build_hierarchy(conn, args.dataset, args.column, args.builder, _parse_params(args))))
        elif args.action == "show":
            print(catalog.hierarchy_csv(conn, args.dataset, args.column, args.sep), end="")
        else:
            catalog.drop_hierarchy(conn, args.dataset, args.column)
            print(f"{args.dataset}.{args.column}: hierarchy dropped")


def cmd_check(args):
    with connect(args.dsn) as conn:
        out = catalog.check(conn, args.relation, split(args.qis), split(args.sas), args.model, _parse_params(args))
    results = out if args.model == "all" else {args.model: out}
    print(table(["model", "scope", "value", "per SA", "holds"],
                [(m, r["scope"], r["value"], r["per_sa"] or "", r["holds"]) for m, r in results.items()]))
    if args.model != "all" and out["holds"] is False:
        return 1


def cmd_rule(args):
    with connect(args.dsn) as conn:
        if args.action == "list":
            rows = catalog.semantic_rules(conn, args.dataset)
            print(table(["dataset", "rule", "column", "predicate", "values", "category"], rows))
            return
        if not (args.dataset and args.rule_id):
            raise PganonError(f"rule {args.action} needs DATASET and RULE_ID")
        if args.action == "drop":
            catalog.drop_semantic_rule(conn, args.dataset, args.rule_id)
            print(f"semantic rule {args.rule_id} dropped")
            return
        if not (args.column and args.predicate and args.values is not None and args.category):
            raise PganonError("rule set needs --column, --predicate, --values and --category")
        catalog.set_semantic_rule(conn, args.dataset, args.rule_id, args.column, args.predicate,
                                  split(args.values), args.category)
        print(f"semantic rule {args.rule_id} set")


def cmd_apply(args):
    with connect(args.dsn) as conn:
        print(_kv(catalog.apply(conn, args.file, source=args.source)))


def cmd_dataset(args):
    from . import datasets
    if args.action == "list":
        print(table(["name", "description"], [(n, d.get("description", "")) for n, d in datasets.DATASETS.items()]))
        return
    with connect(args.dsn) as conn:
        _progress(f"loading {args.name}")
        extra = {k: v for k, v in (("persons", args.persons), ("seed", args.seed)) if v is not None}
        info = datasets.load(conn, args.name, table=args.table, rows=args.rows, replace=args.replace,
                             declare=not args.no_apply, **extra)
    print(_kv(info))


def cmd_publish(args):
    params = _parse_params(args)
    with connect(args.dsn) as conn:
        t0 = time.perf_counter()
        rid = releases.publish(conn, args.dataset, args.method, params,
                               on_notice=None if args.quiet else _progress, promote=args.promote)
        wall = time.perf_counter() - t0
        rel = releases.get(conn, release=rid)
        failing = [r for r in releases.risk(conn, rid) if r["passed"] is False]
    s = releases.summary(rel)
    s["wall seconds"] = round(wall, 3)
    print(table(list(s), [list(s.values())]))
    if not args.promote:
        if failing:
            print(f"\ncandidate {rid} breaks the policy of {args.dataset} ({len(failing)} figure(s)); "
                  f"see `pganon risk {rid}`")
        else:
            print(f"\ncandidate {rid}: analysts see it once you run `pganon promote {rid}`")
    if args.show:
        if args.promote:
            _show(args.dsn, args.dataset, args.show)
        else:
            print("(--show prints the views analysts read: promote first)")


def cmd_promote(args):
    with connect(args.dsn) as conn:
        rid = releases.promote(conn, args.release)
    print(f"release {rid} is now the current release")


def _risk_rows(rows, failing_only):
    return [(r["measure"], r["scope"], r["value"], r["threshold"],
             {True: "ok", False: "FAIL", None: ""}[r["passed"]], r["detail"])
            for r in rows if not failing_only or r["passed"] is False]


def cmd_risk(args):
    with connect(args.dsn) as conn:
        rid = int(args.release) if args.release.isdigit() else releases.get(conn, dataset=args.release)["id"]
        rows = releases.risk(conn, rid)
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        print(f"release {rid}: risk from the analyst's seat (threshold: the dataset's policy, else the promise)")
        print(table(["measure", "scope", "value", "threshold", "passed", "detail"], _risk_rows(rows, args.failing)))
    if any(r["passed"] is False for r in rows):
        return 3


def cmd_set_policy(args):
    try:
        policy = json.loads(args.policy)
    except ValueError:
        raise PganonError(f"the policy must be a JSON object, e.g. '{{\"prosecutor_risk_max\": 0.1}}', "
                          f"not {args.policy!r}") from None
    with connect(args.dsn) as conn:
        catalog.set_policy(conn, args.dataset, policy)
        now = catalog.policy(conn, args.dataset)
    print(f"{args.dataset}: policy {json.dumps(now)}")


def cmd_verify(args):
    with connect(args.dsn) as conn:
        rid = int(args.release) if args.release.isdigit() else releases.get(conn, dataset=args.release)["id"]
        checks = releases.verify(conn, rid)
    print(f"release {rid}")
    print(table(["check", "passed", "detail"], [(c["check"], c["passed"], c["detail"]) for c in checks]))
    if not all(c["passed"] for c in checks):
        return 1


def cmd_releases(args):
    with connect(args.dsn) as conn:
        rows = releases.list_releases(conn, args.dataset)
    summ = [releases.summary(r) for r in rows]
    headers = ["release", "dataset", "method", "status", "risk failures", "groups", "published", "suppressed",
               "AIL", "SR", "NCP%", "query error", "vulnerable", "seconds"]
    print(table(headers, [[s.get(h) for h in headers] for s in summ]))


def _show(dsn, dataset, limit):
    with connect(dsn) as conn:
        for which in releases.views(conn, dataset):
            cols, rows = releases.view_rows(conn, dataset, which, limit)
            print(f"\npganon_release.{dataset}_{which} (first {limit} rows)")
            print(table(cols, rows))


def cmd_show(args):
    _show(args.dsn, args.dataset, args.rows)


def cmd_drop_release(args):
    with connect(args.dsn) as conn:
        conn.execute("SELECT pganon.drop_release(%s)", (args.release,))
    print(f"release {args.release} dropped")


def _ints(text):
    try:
        return [int(x) for x in split(text)]
    except ValueError:
        raise PganonError(f"expected comma-separated integers, not {text!r}") from None


def _floats(text):
    try:
        return [float(x) for x in split(text)]
    except ValueError:
        raise PganonError(f"expected comma-separated numbers, not {text!r}") from None


def cmd_compare(args):
    from . import compare, report_html
    extra = {}
    for item in args.param or []:
        name, _, value = item.partition("=")
        method, _, key = name.partition(".")
        if not key or not _:
            raise PganonError(f"--param {item!r} is not METHOD.NAME=VALUE")
        try:
            extra.setdefault(method, {})[key] = json.loads(value)
        except ValueError:
            extra.setdefault(method, {})[key] = value
    entries = split(args.methods) if args.methods else list(compare.DEFAULT_METHODS)
    aliases = {e.split("=", 1)[0]: e.split("=", 1)[1] for e in entries if "=" in e}
    settings = compare.Settings(methods=[e.split("=", 1)[0] for e in entries], aliases=aliases,
                                ks=_ints(args.k), ls=_ints(args.l), thetas=_floats(args.thetas),
                                fractions=_floats(args.rows), sa_counts=_ints(args.sas) if args.sas else None,
                                queries=args.queries, seed=args.seed, extra=extra)
    with connect(args.dsn) as conn:
        res = compare.run(conn, args.dataset, settings, progress=None if args.quiet else _progress)
    paths = report_html.write(res, args.out, f"compare-{args.dataset}", report_html.compare_html(res))
    print(table(["file", "path"], list(paths.items())))
    if res["failures"]:
        _progress(f"{len(res['failures'])} setting(s) could not be met; see the report")


def cmd_report(args):
    from . import compare, report_html
    with connect(args.dsn) as conn:
        rid = int(args.release) if args.release.isdigit() else releases.get(conn, dataset=args.release)["id"]
        rep = compare.release_report(conn, rid)
    paths = report_html.write(rep, args.out, f"release-{rid}", report_html.release_html(rep))
    print(table(["file", "path"], list(paths.items())))
    if not all(c["passed"] for c in rep["checks"]):
        return 1


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="pganon", description="Privacy-preserving data publishing inside PostgreSQL.")
    p.add_argument("--version", action="version", version=f"pganon {__version__}")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--dsn", default=None, help="database to use (default: $PGANON_DSN, else the local server)")
    common.add_argument("--traceback", action="store_true", help="show the traceback of an error")
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("server", parents=[common], help="the embedded local PostgreSQL server")
    s.add_argument("action", choices=["start", "stop", "status"])
    s.set_defaults(fn=cmd_server)
    for name, fn, text in [("install", cmd_install, "install or upgrade pganon in the database"),
                           ("upgrade", cmd_install, "same as install: migrate the catalog, re-create the objects"),
                           ("uninstall", cmd_uninstall, "remove every pganon object from the database"),
                           ("status", cmd_status, "what is installed")]:
        sub.add_parser(name, parents=[common], help=text).set_defaults(fn=fn)
    sub.choices["uninstall"].add_argument(
        "--cascade", action="store_true",
        help="also drop objects outside pganon that depend on it (users' views on release views ...)")

    s = sub.add_parser("register", parents=[common], help="declare a dataset")
    s.add_argument("name"); s.add_argument("source"); s.add_argument("key")
    s.add_argument("--person", default=None, help="column identifying the person who owns a row")
    s.set_defaults(fn=cmd_register)
    s = sub.add_parser("set-attribute", parents=[common], help="declare a column's role and kind")
    s.add_argument("dataset"); s.add_argument("column")
    s.add_argument("role", choices=["identifier", "quasi", "sensitive", "insensitive"])
    s.add_argument("kind", nargs="?", choices=["numeric", "categorical", "date"])
    s.set_defaults(fn=cmd_set_attribute)
    s = sub.add_parser("set-level", parents=[common], help="security level of one sensitive value")
    s.add_argument("dataset"); s.add_argument("column"); s.add_argument("value"); s.add_argument("level", type=int)
    s.set_defaults(fn=cmd_set_level)
    s = sub.add_parser("set-l", parents=[common], help="the l of a security level")
    s.add_argument("dataset"); s.add_argument("level", type=int); s.add_argument("l", type=int)
    s.set_defaults(fn=cmd_set_l)
    s = sub.add_parser("set-dependency", parents=[common],
                       help="the sensitive attributes that identify one (its weight, spec 004 Table 11)")
    s.add_argument("dataset"); s.add_argument("column")
    s.add_argument("--identified-by", default="", metavar="A,B", help="comma-separated SAs; empty clears")
    s.set_defaults(fn=cmd_set_dependency)
    s = sub.add_parser("set-delta", parents=[common], help="explicit delta, the SA that links buckets")
    s.add_argument("dataset"); s.add_argument("column", nargs="?", help="omit to derive it from the weights")
    s.set_defaults(fn=cmd_set_delta)
    s = sub.add_parser("set-chi", parents=[common], help="external factor chi of a sensitive attribute")
    s.add_argument("dataset"); s.add_argument("column"); s.add_argument("chi", type=float)
    s.set_defaults(fn=cmd_set_chi)
    s = sub.add_parser("hierarchy", parents=[common], help="generalization hierarchies of a dataset's columns")
    s.add_argument("action", choices=["list", "set", "build", "show", "drop"])
    s.add_argument("dataset", nargs="?"); s.add_argument("column", nargs="?")
    s.add_argument("--file", help="set: ARX-style CSV, one row per leaf, leaf to root")
    s.add_argument("--sep", default=";", help="CSV separator (default ;)")
    s.add_argument("--builder", choices=["intervals", "dates", "redaction"], help="build: the builder")
    s.add_argument("--param", "-p", action="append", metavar="NAME=VALUE", help="build: a builder parameter")
    s.add_argument("--params", default=None, help="build: all parameters as one JSON object")
    s.set_defaults(fn=cmd_hierarchy)
    s = sub.add_parser("check", parents=[common], help="assess a table or view under a privacy model")
    s.add_argument("relation"); s.add_argument("model", help="a model name, or all")
    s.add_argument("--qis", required=True, metavar="A,B"); s.add_argument("--sas", default="", metavar="X,Y")
    s.add_argument("--param", "-p", action="append", metavar="NAME=VALUE", help="a threshold or option (JSON value)")
    s.add_argument("--params", default=None, help="all parameters as one JSON object")
    s.set_defaults(fn=cmd_check)
    s = sub.add_parser("rule", parents=[common], help="semantic rules on sensitive values (method semantic)")
    s.add_argument("action", choices=["list", "set", "drop"])
    s.add_argument("dataset", nargs="?"); s.add_argument("rule_id", nargs="?")
    s.add_argument("--column", help="set: the sensitive attribute")
    s.add_argument("--predicate", choices=["in", "between", "=", ">", ">=", "<", "<="], help="set: the predicate")
    s.add_argument("--values", metavar="V1,V2", help="set: in: the values; between: low,high; else one value")
    s.add_argument("--category", help="set: what the rule reveals, e.g. 'heart disease'")
    s.set_defaults(fn=cmd_rule)
    s = sub.add_parser("apply", parents=[common], help="declare a dataset from a YAML/JSON file")
    s.add_argument("file"); s.add_argument("--source", default=None, help="override the file's source table")
    s.set_defaults(fn=cmd_apply)

    s = sub.add_parser("dataset", parents=[common], help="load a bundled dataset (`pganon dataset list` names them)")
    s.add_argument("action", choices=["load", "list"])
    s.add_argument("name", nargs="?")
    s.add_argument("--rows", type=int, default=None)
    s.add_argument("--table", default=None)
    s.add_argument("--replace", action="store_true")
    s.add_argument("--no-apply", action="store_true", help="load the table only, without its attribute file")
    s.add_argument("--persons", type=int, default=None, help="informs_synthetic: number of persons (default 50,000)")
    s.add_argument("--seed", type=int, default=None, help="synthetic datasets: the seed")
    s.set_defaults(fn=cmd_dataset)

    s = sub.add_parser("publish", parents=[common],
                       help="publish a candidate release: verified, measured, risk-assessed, not yet visible")
    s.add_argument("dataset"); s.add_argument("method")
    s.add_argument("--param", "-p", action="append", metavar="NAME=VALUE", help="a method parameter (JSON value)")
    s.add_argument("--params", default=None, help="all parameters as one JSON object")
    s.add_argument("--show", type=int, default=0, metavar="N", help="then print the first N rows of GT and ST")
    s.add_argument("--quiet", action="store_true", help="no progress lines")
    s.add_argument("--promote", action="store_true",
                   help="promote it in the same transaction (nothing is kept when the policy refuses it)")
    s.set_defaults(fn=cmd_publish)
    s = sub.add_parser("promote", parents=[common],
                       help="make a release the current one analysts read (refused when it breaks the policy)")
    s.add_argument("release", type=int, help="a candidate, or a superseded release to go back to")
    s.set_defaults(fn=cmd_promote)
    s = sub.add_parser("risk", parents=[common], help="a release's risk from the analyst's seat, with thresholds")
    s.add_argument("release", help="a release id, or a dataset name for its current release")
    s.add_argument("--failing", action="store_true", help="only the figures that break the policy")
    s.add_argument("--json", action="store_true", help="as JSON")
    s.set_defaults(fn=cmd_risk)
    s = sub.add_parser("set-policy", parents=[common], help="risk thresholds promote enforces for a dataset")
    s.add_argument("dataset")
    s.add_argument("policy", help='JSON object, e.g. \'{"prosecutor_risk_max": 0.1, "published_share": 0.8}\'; '
                                  "a measure left out takes each release's promise, null switches it off")
    s.set_defaults(fn=cmd_set_policy)
    s = sub.add_parser("verify", parents=[common], help="re-run a release's independent checks")
    s.add_argument("release", help="a release id, or a dataset name for its current release")
    s.set_defaults(fn=cmd_verify)
    s = sub.add_parser("audit", parents=[common], help="fingerprint-correlation attack on a GT/ST release")
    s.add_argument("release", help="a release id, or a dataset name for its current release")
    s.add_argument("--delta", default=None, help="linking attribute (default: the release's)")
    s.add_argument("--json", action="store_true", help="the whole report as JSON")
    s.set_defaults(fn=cmd_audit)
    s = sub.add_parser("compare", parents=[common],
                       help="publish several methods on the same rows and write an HTML report (nothing is kept)")
    s.add_argument("dataset")
    s.add_argument("--methods", default=None, metavar="M1,M2",
                   help="methods to compare (default: seven from all families); LABEL=METHOD runs a method "
                        "under another name, e.g. mondrian_l=mondrian -p 'mondrian_l.privacy={\"model\": ...}'")
    s.add_argument("--k", default="5,10,20", metavar="K1,K2", help="k values; the middle one is the default setting")
    s.add_argument("--l", default="2,3,4", metavar="L1,L2", help="l values (c, p, Rating's SC); the middle one is the default")
    s.add_argument("--thetas", default="0.05,0.1,0.2", metavar="T1,T2", help="selectivities of the shared workload")
    s.add_argument("--rows", default="0.25,0.5", metavar="F1,F2", help="row fractions for time against rows")
    s.add_argument("--sas", default=None, metavar="D1,D2", help="SA counts for time against SAs (default 1..all)")
    s.add_argument("--queries", type=int, default=1000, help="queries per selectivity (default 1000)")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--param", "-p", action="append", metavar="METHOD.NAME=VALUE", help="a method parameter (JSON value)")
    s.add_argument("--out", default=".", help="directory for the .html, .json and .csv (default: here)")
    s.add_argument("--quiet", action="store_true", help="no progress lines")
    s.set_defaults(fn=cmd_compare)
    s = sub.add_parser("report", parents=[common], help="HTML report of one release: promise, checks, utility, attack")
    s.add_argument("release", help="a release id, or a dataset name for its current release")
    s.add_argument("--out", default=".", help="directory for the .html and .json (default: here)")
    s.set_defaults(fn=cmd_report)
    s = sub.add_parser("releases", parents=[common], help="list releases")
    s.add_argument("dataset", nargs="?"); s.set_defaults(fn=cmd_releases)
    s = sub.add_parser("show", parents=[common], help="first rows of a dataset's release views")
    s.add_argument("dataset"); s.add_argument("--rows", type=int, default=10); s.set_defaults(fn=cmd_show)
    s = sub.add_parser("drop-release", parents=[common], help="drop a release")
    s.add_argument("release", type=int); s.set_defaults(fn=cmd_drop_release)
    return p


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "dataset" and args.action == "load" and not args.name:
        print("pganon: error: dataset load needs a NAME", file=sys.stderr)
        return 2
    try:
        return args.fn(args) or 0
    except VerificationFailed as exc:
        if args.traceback:
            raise
        print(f"pganon: verification failed: {exc}", file=sys.stderr)
        return 1
    except PolicyRefused as exc:
        if args.traceback:
            raise
        print(f"pganon: refused: {exc}", file=sys.stderr)
        return 3
    except (PganonError, psycopg.Error) as exc:
        if args.traceback:
            raise
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        print(f"pganon: error: {text if isinstance(exc, psycopg.Error) else exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
