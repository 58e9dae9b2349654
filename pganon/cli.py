"""`pganon ...`: a thin CLI. Each subcommand calls one library function and prints its result.

Exit codes:
  0    ok
  1    a release failed its verification (`verify`, `report`, a publish whose release failed its
       own checks), or `check` found that the model does not hold
  2    user error: bad arguments, an unknown dataset, release or method, invalid --params JSON, a
       missing file, an unreachable server or a bad DSN, an error the database raised. One line
       on stderr, "pganon: error: ..." with pganon's SQLSTATE when the database gave one
       ("pganon: error: PA001: dataset ... is not registered (hint: ...)"); add --traceback to see
       where it came from
  3    refused by the dataset's policy: `promote` (or `publish --promote`, `export` of a
       superseded release) of a release whose risk breaks it, or `risk` listing a failing figure;
       the failing figures on stderr
  4    an internal error (a bug): one line; run again with --traceback and report it
  130  interrupted (Ctrl-C); the transaction in progress is rolled back
  141  stdout closed early (`pganon export 3 | head`)
Passwords are never printed: DSNs are not echoed.

Output: `--format table` (default, for people), `json` or `csv` (for programs) on every command
(pganon.output); progress and notes go to stderr whenever stdout carries json or csv.
"""

from __future__ import annotations

import argparse
import decimal
import json
import os
import re
import sys
import time

import psycopg

from . import __version__, catalog, releases, server
from .connection import connect
from .errors import PganonError, PolicyRefused, VerificationFailed, from_db_error
from .output import FORMATS, Printer, table

# One line per publish method, shown by `pganon publish --help`. The methods themselves come from
# the engine's family registry (pganon_engine.release.pipeline.FAMILIES); a test checks that this table
# describes exactly those, so a new method cannot be missing here and a removed one cannot linger.
METHOD_HELP = {
    "mbf": "l-diversity baseline (Xiao & Li): exact QIs in GT, sensitive values in ST; l",
    "msdcf": "l-diversity baseline, MSDCF planner (Xiao & Li); l",
    "mmdcf": "l-diversity baseline, MMDCF planner (Xiao & Li); l",
    "mbf_mslf": "L_sl-diversity: an l per security level (Xiao & Li), MBF planner; min_group",
    "msdcf_mslf": "L_sl-diversity, MSDCF planner",
    "mmdcf_mslf": "L_sl-diversity, MMDCF planner",
    "anatomy": "Anatomy (Xiao & Tao): groups of l distinct sensitive vectors, exact QIs; l",
    "ck_anonymization": "(c,k)-anonymization (Khan et al.): k-anonymous QI groups linked to fingerprint "
                        "buckets, at most c_f of a delta value; k, c, c_f",
    "pk_angelization": "(p,k)-angelization, the baseline of (c,k): k-anonymous batches; k, p",
    "gaa": "GAA (Mauger et al.): k-anonymity by recoding QIs on hierarchies; k",
    "mondrian": "Mondrian (LeFevre et al.): k-anonymity by multidimensional recoding; k, privacy",
    "semantic": "l-diverse Mondrian whose classes no semantic rule covers (Nasr et al.); k, l",
    "rating": "Rating (Liu et al.): every attribute in groups of SC distinct values; sc",
    "danonyir": "identity-reserved DAnonyIR: k persons per class (needs a person column); model, k",
    "geneir": "identity-reserved GeneIR (needs a person column); model, k",
    "one_m_generalization": "1:M generalization: one row per person, (k,l)-diversity on value sets; k, l",
}


def methods() -> list[str]:
    """The publish methods of the installed engine (its family registry)."""
    from pganon_engine.release.pipeline import FAMILIES
    return sorted(FAMILIES)


def methods_epilog() -> str:
    names = methods()
    width = max(map(len, names))
    lines = [f"  {m.ljust(width)}  {METHOD_HELP.get(m, '(undocumented: see docs/concepts.md)')}" for m in names]
    return ("methods (docs/concepts.md says what each protects; docs/sql-api.md lists the parameters):\n"
            + "\n".join(lines))


def _progress(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def split(text) -> list[str]:
    """A comma-separated list, blanks dropped."""
    return [c.strip() for c in (text or "").split(",") if c.strip()]


def _json_value(text: str, what: str):
    try:
        return json.loads(text)
    except ValueError as exc:
        raise PganonError(f"{what} is not valid JSON: {exc.msg} (line {exc.lineno} column {exc.colno})",
                          sqlstate="PA002", hint='write a JSON object, e.g. \'{"k": 5}\'') from None


def _parse_params(args) -> dict:
    params = _json_value(args.params, "--params") if args.params else {}
    if not isinstance(params, dict):
        raise PganonError("--params must be a JSON object", sqlstate="PA002", hint='e.g. \'{"k": 5}\'')
    for item in args.param or []:
        if "=" not in item:
            raise PganonError(f"--param {item!r} is not NAME=VALUE", sqlstate="PA002")
        k, v = item.split("=", 1)
        try:
            params[k] = json.loads(v)
        except ValueError:
            params[k] = v
    return params


def _release_id(conn, text: str) -> int:
    """A release id, or a dataset name for its current release."""
    return int(text) if text.isdigit() else releases.get(conn, dataset=text)["id"]


def _out(args) -> Printer:
    return Printer(args.format)


# --- subcommands -----------------------------------------------------------------------------

def cmd_server(args):
    out = _out(args)
    if args.action == "start":
        dsn = server.start()
        out.record({"running": True, "dsn": dsn}, text=f"local server running: {dsn}")
    elif args.action == "stop":
        stopped = server.stop()
        out.record({"stopped": stopped}, text="stopped" if stopped else "not running")
    else:
        out.record(server.status())


def cmd_install(args):
    from . import install   # Alembic and SQLAlchemy load only for the commands that need them
    _out(args).record(install.install(args.dsn))


def cmd_uninstall(args):
    from . import install
    _out(args).record(install.uninstall(args.dsn, cascade=args.cascade))


def cmd_status(args):
    from . import install
    _out(args).record(install.status(args.dsn))


def cmd_register(args):
    with connect(args.dsn) as conn:
        did = catalog.register_dataset(conn, args.name, args.source, args.key, args.person)
    _out(args).record({"dataset": args.name, "id": did}, text=f"dataset {args.name} registered (id {did})")


def cmd_set_attribute(args):
    with connect(args.dsn) as conn:
        catalog.set_attribute(conn, args.dataset, args.column, args.role, args.kind)
    _out(args).record({"dataset": args.dataset, "column": args.column, "role": args.role, "kind": args.kind},
                      text=f"{args.dataset}.{args.column}: {args.role}{' ' + args.kind if args.kind else ''}")


def cmd_set_level(args):
    with connect(args.dsn) as conn:
        catalog.set_security_level(conn, args.dataset, args.column, args.value, args.level, force=args.force)
    _out(args).record({"dataset": args.dataset, "column": args.column, "value": args.value, "level": args.level},
                      text=f"{args.dataset}.{args.column} = {args.value!r}: level {args.level}")


def cmd_set_default_level(args):
    with connect(args.dsn) as conn:
        catalog.set_default_level(conn, args.dataset, args.column, args.level)
    shown = "the highest level" if args.level is None else f"level {args.level}"
    _out(args).record({"dataset": args.dataset, "column": args.column, "default_level": args.level},
                      text=f"{args.dataset}.{args.column}: values without a level of their own get {shown}")


def cmd_set_l(args):
    with connect(args.dsn) as conn:
        catalog.set_level_l(conn, args.dataset, args.level, args.l)
    _out(args).record({"dataset": args.dataset, "level": args.level, "l": args.l},
                      text=f"{args.dataset}: l{args.level} = {args.l}")


def cmd_set_dependency(args):
    ids = split(args.identified_by)
    with connect(args.dsn) as conn:
        catalog.set_dependency(conn, args.dataset, args.column, ids)
    _out(args).record({"dataset": args.dataset, "column": args.column, "identified_by": ids, "weight": len(ids)},
                      text=f"{args.dataset}.{args.column}: identified by {', '.join(ids) or 'nothing'} "
                           f"(weight {len(ids)})")


def cmd_set_delta(args):
    with connect(args.dsn) as conn:
        catalog.set_delta(conn, args.dataset, args.column)
    _out(args).record({"dataset": args.dataset, "delta": args.column},
                      text=f"{args.dataset}: delta = {args.column or '(derived from the weights)'}")


def _chi(text: str) -> decimal.Decimal:
    """chi as an exact number: pganon.set_external_factor takes numeric, not a float."""
    try:
        value = decimal.Decimal(text)
    except decimal.InvalidOperation:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not value.is_finite():
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number")
    return value


def cmd_set_chi(args):
    with connect(args.dsn) as conn:
        catalog.set_external_factor(conn, args.dataset, args.column, args.chi)
    _out(args).record({"dataset": args.dataset, "column": args.column, "chi": args.chi},
                      text=f"{args.dataset}.{args.column}: chi = {args.chi}")


AUDIT_KEYS = ["n_buckets", "n_classes", "n_linkable_pairs", "n_singleton_cells", "n_pfcorr", "n_ffcorr", "n_breaches",
              "n_vulnerable_covered", "n_vulnerable_correct", "pririsk_max", "pririsk_mean", "n_classes_over_bound"]


def cmd_audit(args):
    out = _out(args)
    with connect(args.dsn) as conn:
        rid = _release_id(conn, args.release)
        report = conn.execute("SELECT pganon.audit(%s, %s)", (rid, args.delta)).fetchone()[0]
    if out.fmt == "json":
        out.document(report, sort_keys=True)
        return
    s = report["summary"]
    if out.fmt == "csv":   # the measures; the linkable pairs are in the JSON report
        out.rows(["measure", "value"], [(k, s[k]) for k in AUDIT_KEYS])
        return
    print(f"release {rid}: fingerprint-correlation audit (delta = {s['delta']}, zeta = {', '.join(s['zeta']) or '-'})")
    print(table(["measure", "value"], [(k.removeprefix("n_").replace("_", " "), s[k]) for k in AUDIT_KEYS]))
    if report["pairs_with_singletons"]:
        print(f"\nlinkable pairs with a single common value (first {len(report['pairs_with_singletons'])})")
        print(table(["buckets", "via", "single values", "breach"],
                    [(f"{p['buckets'][0]}-{p['buckets'][1]}", ", ".join(p["via"]),
                      "; ".join(f"{a}={v}" for a, v in p["singletons"].items()), p["kind"] or "-")
                     for p in report["pairs_with_singletons"]]))


def _hierarchy_rows(text: str, sep: str) -> list[list[str]]:
    import csv
    import io
    return [r for r in csv.reader(io.StringIO(text), delimiter=sep) if r]


def cmd_hierarchy(args):
    out = _out(args)
    if args.action != "list" and not (args.dataset and args.column):
        raise PganonError(f"hierarchy {args.action} needs DATASET and COLUMN", sqlstate="PA002")
    text = None
    if args.action == "set":
        if not args.file:
            raise PganonError("hierarchy set needs --file CSV (ARX style: one row per leaf, leaf to root)",
                              sqlstate="PA002")
        try:
            with open(args.file, encoding="utf-8") as f:
                text = f.read()
        except OSError as exc:
            raise PganonError(f"cannot read {args.file}: {exc.strerror}") from None
    if args.action == "build" and not args.builder:
        raise PganonError("hierarchy build needs --builder intervals|dates|redaction", sqlstate="PA002")
    params = _parse_params(args) if args.action == "build" else None
    with connect(args.dsn) as conn:
        if args.action == "list":
            out.rows(["dataset", "column", "origin", "height", "leaves", "nodes"],
                     catalog.hierarchies(conn, args.dataset))
        elif args.action == "set":
            out.record(catalog.set_hierarchy(conn, args.dataset, args.column, text, args.sep))
        elif args.action == "build":
            out.record(catalog.build_hierarchy(conn, args.dataset, args.column, args.builder, params))
        elif args.action == "show":
            csv_text = catalog.hierarchy_csv(conn, args.dataset, args.column, args.sep)
            if out.fmt == "table":   # the ARX file itself, as `hierarchy set --file` reads it
                print(csv_text, end="")
            else:
                rows = _hierarchy_rows(csv_text, args.sep)
                height = max((len(r) for r in rows), default=1)
                out.rows([f"level {i}" for i in range(height)], [r + [None] * (height - len(r)) for r in rows])
        else:
            catalog.drop_hierarchy(conn, args.dataset, args.column)
            out.record({"dataset": args.dataset, "column": args.column, "dropped": True},
                       text=f"{args.dataset}.{args.column}: hierarchy dropped")


def cmd_check(args):
    params = _parse_params(args)
    with connect(args.dsn) as conn:
        out = catalog.check(conn, args.relation, split(args.qis), split(args.sas), args.model, params)
    results = out if args.model == "all" else {args.model: out}
    _out(args).rows(["model", "scope", "value", "per SA", "holds"],
                    [(m, r["scope"], r["value"], r["per_sa"] or None, r["holds"]) for m, r in results.items()])
    if args.model != "all" and out["holds"] is False:
        return 1


def cmd_rule(args):
    out = _out(args)
    if args.action != "list":
        if not (args.dataset and args.rule_id):
            raise PganonError(f"rule {args.action} needs DATASET and RULE_ID", sqlstate="PA002")
        if args.action == "set" and not (args.column and args.predicate and args.values is not None
                                         and args.category):
            raise PganonError("rule set needs --column, --predicate, --values and --category", sqlstate="PA002")
    with connect(args.dsn) as conn:
        if args.action == "list":
            out.rows(["dataset", "rule", "column", "predicate", "values", "category"],
                     catalog.semantic_rules(conn, args.dataset))
        elif args.action == "drop":
            catalog.drop_semantic_rule(conn, args.dataset, args.rule_id)
            out.record({"dataset": args.dataset, "rule": args.rule_id, "dropped": True},
                       text=f"semantic rule {args.rule_id} dropped")
        else:
            values = split(args.values)
            catalog.set_semantic_rule(conn, args.dataset, args.rule_id, args.column, args.predicate, values,
                                      args.category)
            out.record({"dataset": args.dataset, "rule": args.rule_id, "column": args.column,
                        "predicate": args.predicate, "values": values, "category": args.category},
                       text=f"semantic rule {args.rule_id} set")


def cmd_apply(args):
    with connect(args.dsn) as conn:
        _out(args).record(catalog.apply(conn, args.file, source=args.source, force=args.force))


def cmd_dataset(args):
    from . import datasets
    out = _out(args)
    if args.action == "list":
        out.rows(["name", "description"], [(n, d.get("description", "")) for n, d in datasets.DATASETS.items()])
        return
    if not args.name:
        raise PganonError("dataset load needs a NAME", sqlstate="PA002", hint="`pganon dataset list` names them")
    datasets.get_dataset(args.name)   # an unknown name fails here, before any connection or progress
    with connect(args.dsn) as conn:
        _progress(f"loading {args.name}")
        extra = {k: v for k, v in (("persons", args.persons), ("seed", args.seed)) if v is not None}
        info = datasets.load(conn, args.name, table=args.table, rows=args.rows, replace=args.replace,
                             declare=not args.no_apply, **extra)
    out.record(info)


def cmd_publish(args):
    out = _out(args)
    params = _parse_params(args)
    if args.show and out.machine:
        raise PganonError("--show prints tables; with --format json or csv run `pganon show` afterwards",
                          sqlstate="PA002")
    with connect(args.dsn) as conn:
        t0 = time.perf_counter()
        rid = releases.publish(conn, args.dataset, args.method, params,
                               on_notice=None if args.quiet else _progress, promote=args.promote)
        wall = time.perf_counter() - t0
        rel = releases.get(conn, release=rid)
        failing = [r for r in releases.risk(conn, rid) if r["passed"] is False]
    s = releases.summary(rel)
    s["wall seconds"] = round(wall, 3)
    out.record(s, as_row=True)
    if not args.promote:
        if failing:
            out.note(f"\ncandidate {rid} breaks the policy of {args.dataset} ({len(failing)} figure(s)); "
                     f"see `pganon risk {rid}`")
        else:
            out.note(f"\ncandidate {rid}: analysts see it once you run `pganon promote {rid}`")
    if args.show:
        if args.promote:
            _show(out, args.dsn, args.dataset, args.show)
        else:
            out.note("(--show prints the views analysts read: promote first)")


def cmd_promote(args):
    with connect(args.dsn) as conn:
        rid = releases.promote(conn, args.release)
    _out(args).record({"release": rid, "status": "current"}, text=f"release {rid} is now the current release")


def cmd_risk(args):
    out = _out(args)
    with connect(args.dsn) as conn:
        rid = _release_id(conn, args.release)
        rows = releases.risk(conn, rid)
    shown = [r for r in rows if not args.failing or r["passed"] is False]
    if out.machine:
        out.dicts(shown, ["measure", "scope", "value", "threshold", "passed", "detail"])
    else:
        out.rows(["measure", "scope", "value", "threshold", "passed", "detail"],
                 [(r["measure"], r["scope"], r["value"], r["threshold"],
                   {True: "ok", False: "FAIL", None: ""}[r["passed"]], r["detail"]) for r in shown],
                 title=f"release {rid}: risk from the analyst's seat (threshold: the dataset's policy, "
                       f"else the promise)")
    if any(r["passed"] is False for r in rows):
        return 3


def cmd_set_policy(args):
    policy = _json_value(args.policy, "the policy")
    if not isinstance(policy, dict):
        raise PganonError(f"the policy must be a JSON object, e.g. '{{\"prosecutor_risk_max\": 0.1}}', "
                          f"not {args.policy!r}", sqlstate="PA002")
    with connect(args.dsn) as conn:
        catalog.set_policy(conn, args.dataset, policy)
        now = catalog.policy(conn, args.dataset)
    _out(args).record({"dataset": args.dataset, "policy": now}, text=f"{args.dataset}: policy {json.dumps(now)}")


def cmd_verify(args):
    with connect(args.dsn) as conn:
        rid = _release_id(conn, args.release)
        checks = releases.verify(conn, rid)
    _out(args).rows(["check", "passed", "detail"], [(c["check"], c["passed"], c["detail"]) for c in checks],
                    title=f"release {rid}")
    if not all(c["passed"] for c in checks):
        return 1


# Columns of `pganon releases` in this order; each family's own figures (DM, NLoss ...) follow.
RELEASE_COLUMNS = ["release", "dataset", "method", "status", "risk failures", "groups", "published", "suppressed",
                   "AIL", "SR", "NCP%", "query error", "vulnerable"]


def cmd_releases(args):
    with connect(args.dsn) as conn:
        rows = releases.list_releases(conn, args.dataset)
    summ = [releases.summary(r) for r in rows]
    # the summary's keys differ per family: print the union, blank where a family has none
    seen = list(dict.fromkeys(k for s in summ for k in s))
    columns = [c for c in RELEASE_COLUMNS if c in seen or not summ] + \
              [c for c in seen if c not in RELEASE_COLUMNS and c != "seconds"] + ["seconds"]
    _out(args).dicts(summ, columns)


def _show(out: Printer, dsn, dataset, limit, only=None):
    """The views of the dataset's current release that exist (a release without an ST shows its
    GT and promise), or only `only`."""
    with connect(dsn) as conn:
        have = releases.views(conn, dataset)
        if only and only not in have:
            raise PganonError(f"the current release of {dataset!r} has no {only} view", sqlstate="PA001",
                              hint=f"it has: {', '.join(have)}")
        shown = {w: releases.view_rows(conn, dataset, w, limit) for w in have if not only or w == only}
    if out.fmt == "json":
        out.document({w: [dict(zip(cols, r)) for r in rows] for w, (cols, rows) in shown.items()})
    elif out.fmt == "csv":
        if len(shown) > 1:
            raise PganonError(f"CSV prints one table; the current release of {dataset!r} has "
                              f"{', '.join(shown)}: choose one with --view", sqlstate="PA002")
        for cols, rows in shown.values():
            out.rows(cols, rows, keys=cols)
    else:
        for which, (cols, rows) in shown.items():
            out.rows(cols, rows, title=f"\npganon_release.{dataset}_{which} (first {limit} rows)")


def cmd_show(args):
    _show(_out(args), args.dsn, args.dataset, args.rows, args.view)


def cmd_drop_release(args):
    with connect(args.dsn) as conn:
        conn.execute("SELECT pganon.drop_release(%s)", (args.release,))
    _out(args).record({"release": args.release, "dropped": True}, text=f"release {args.release} dropped")


def _ints(text):
    try:
        return [int(x) for x in split(text)]
    except ValueError:
        raise PganonError(f"expected comma-separated integers, not {text!r}", sqlstate="PA002") from None


def _floats(text):
    try:
        return [float(x) for x in split(text)]
    except ValueError:
        raise PganonError(f"expected comma-separated numbers, not {text!r}", sqlstate="PA002") from None


def cmd_compare(args):
    from . import compare, report_html
    extra = {}
    for item in args.param or []:
        name, _, value = item.partition("=")
        method, _, key = name.partition(".")
        if not key or not _:
            raise PganonError(f"--param {item!r} is not METHOD.NAME=VALUE", sqlstate="PA002")
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
    if not os.path.isdir(args.out):
        raise PganonError(f"--out {args.out}: no such directory", sqlstate="PA002")
    with connect(args.dsn) as conn:
        res = compare.run(conn, args.dataset, settings, progress=None if args.quiet else _progress)
    paths = report_html.write(res, args.out, f"compare-{args.dataset}", report_html.compare_html(res))
    _out(args).rows(["file", "path"], list(paths.items()))
    if res["failures"]:
        _progress(f"{len(res['failures'])} setting(s) could not be met; see the report")


def cmd_report(args):
    from . import compare, report_html
    if not os.path.isdir(args.out):
        raise PganonError(f"--out {args.out}: no such directory", sqlstate="PA002")
    with connect(args.dsn) as conn:
        rid = _release_id(conn, args.release)
        rep = compare.release_report(conn, rid)
    paths = report_html.write(rep, args.out, f"release-{rid}", report_html.release_html(rep))
    _out(args).rows(["file", "path"], list(paths.items()))
    if not all(c["passed"] for c in rep["checks"]):
        return 1


def cmd_export(args):
    from . import export
    if args.export_format == "parquet":
        export._pyarrow()   # a missing pyarrow is said before anything else
        if not args.output and sys.stdout.isatty():
            raise PganonError("Parquet is binary: give --output FILE, or redirect stdout to a file",
                              sqlstate="PA002")
    with connect(args.dsn) as conn:
        rid = _release_id(conn, args.release)
        if args.output:
            done = export.to_file(conn, rid, args.relation, args.export_format, args.output)
        else:
            write = export.to_csv if args.export_format == "csv" else export.to_parquet
            done = write(conn, rid, args.relation, sys.stdout.buffer)
            sys.stdout.buffer.flush()
    if args.output:   # stdout is free: say what was written
        _out(args).record(done, text=f"release {rid}: {done['rows']} row(s) of {args.relation} written to "
                                     f"{args.output} ({args.export_format})")


# --- the parser --------------------------------------------------------------------------------

class Parser(argparse.ArgumentParser):
    """argparse that reports a usage error in one line (exit 2), like every other user error."""

    def error(self, message):
        self.exit(2, f"pganon: error: {self.prog}: {message} (see `{self.prog} --help`)\n")


def _common(with_format: bool = True) -> argparse.ArgumentParser:
    """--dsn, --traceback (and --format) after a subcommand; SUPPRESS keeps what was given before it."""
    common = Parser(add_help=False)
    common.add_argument("--dsn", default=argparse.SUPPRESS,
                        help="database to use (default: $PGANON_DSN, else the local server)")
    common.add_argument("--traceback", action="store_true", default=argparse.SUPPRESS,
                        help="on an error, show the Python traceback too")
    if with_format:
        common.add_argument("--format", choices=FORMATS, default=argparse.SUPPRESS,
                            help="table for people (default), json or csv for programs")
    return common


def _methods_help(parser):
    """`publish --help` lists the engine's methods, read only when help is asked for."""
    def format_help():
        parser.epilog = methods_epilog()
        return Parser.format_help(parser)
    parser.format_help = format_help
    return parser


def build_parser() -> argparse.ArgumentParser:
    p = Parser(prog="pganon", description="Privacy-preserving data publishing inside PostgreSQL.",
               epilog="exit codes: 0 ok, 1 a release failed its verification (or `check` found the model "
                      "does not hold), 2 user error (one line on stderr), 3 refused by the dataset's policy, "
                      "4 internal error, 130 interrupted")
    p.add_argument("--version", action="version", version=f"pganon {__version__}", help="print the version")
    p.add_argument("--dsn", default=None, help="database to use (default: $PGANON_DSN, else the local server)")
    p.add_argument("--traceback", action="store_true", help="on an error, show the Python traceback too")
    p.add_argument("--format", choices=FORMATS, default="table",
                   help="table for people (default), json or csv for programs")
    common = _common()
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND", help="one of:")

    s = sub.add_parser("server", parents=[common], help="the embedded local PostgreSQL server")
    s.add_argument("action", choices=["start", "stop", "status"], help="start, stop or describe it")
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
    s.add_argument("name", help="the dataset's name (what every other command calls it)")
    s.add_argument("source", help="the source table, schema-qualified or on your search_path")
    s.add_argument("key", help="the source's key column (unique, not null)")
    s.add_argument("--person", default=None, help="column identifying the person who owns a row")
    s.set_defaults(fn=cmd_register)
    s = sub.add_parser("set-attribute", parents=[common], help="declare a column's role and kind")
    s.add_argument("dataset", help="a registered dataset")
    s.add_argument("column", help="a column of its source")
    s.add_argument("role", choices=["identifier", "quasi", "sensitive", "insensitive"], help="the column's role")
    s.add_argument("kind", nargs="?", choices=["numeric", "categorical", "date"],
                   help="how it generalizes (default: from the column's type)")
    s.set_defaults(fn=cmd_set_attribute)
    s = sub.add_parser("set-level", parents=[common], help="security level of one sensitive value")
    s.add_argument("dataset", help="a registered dataset")
    s.add_argument("column", help="a sensitive attribute")
    s.add_argument("value", help="one of its values, as text")
    s.add_argument("level", type=int, help="its security level (0: no harm if leaked)")
    s.add_argument("--force", action="store_true",
                   help="set the level even if the column never holds the value (refused otherwise as a likely typo)")
    s.set_defaults(fn=cmd_set_level)
    s = sub.add_parser("set-default-level", parents=[common],
                       help="the level of a sensitive attribute's values that have none of their own")
    s.add_argument("dataset", help="a registered dataset")
    s.add_argument("column", help="a sensitive attribute")
    s.add_argument("level", type=int, nargs="?", default=None,
                   help="the default level; omit to use the highest declared level (the default)")
    s.set_defaults(fn=cmd_set_default_level)
    s = sub.add_parser("set-l", parents=[common], help="the l of a security level")
    s.add_argument("dataset", help="a registered dataset")
    s.add_argument("level", type=int, help="a security level")
    s.add_argument("l", type=int, help="its l (must not decrease with the level)")
    s.set_defaults(fn=cmd_set_l)
    s = sub.add_parser("set-dependency", parents=[common],
                       help="the sensitive attributes that identify one (its weight, Khan et al. Table 11)")
    s.add_argument("dataset", help="a registered dataset")
    s.add_argument("column", help="the sensitive attribute that is identified")
    s.add_argument("--identified-by", default="", metavar="A,B", help="comma-separated SAs; empty clears")
    s.set_defaults(fn=cmd_set_dependency)
    s = sub.add_parser("set-delta", parents=[common], help="explicit delta, the SA that links buckets")
    s.add_argument("dataset", help="a registered dataset")
    s.add_argument("column", nargs="?", help="the linking SA; omit to derive it from the weights")
    s.set_defaults(fn=cmd_set_delta)
    s = sub.add_parser("set-chi", parents=[common], help="external factor chi of a sensitive attribute")
    s.add_argument("dataset", help="a registered dataset")
    s.add_argument("column", help="a sensitive attribute")
    s.add_argument("chi", type=_chi, help="the factor added to its weight when it ties (a number, e.g. 0.5)")
    s.set_defaults(fn=cmd_set_chi)
    s = sub.add_parser("hierarchy", parents=[common], help="generalization hierarchies of a dataset's columns")
    s.add_argument("action", choices=["list", "set", "build", "show", "drop"], help="what to do")
    s.add_argument("dataset", nargs="?", help="a registered dataset (list: all when omitted)")
    s.add_argument("column", nargs="?", help="a quasi-identifier of it (all but list)")
    s.add_argument("--file", help="set: ARX-style CSV, one row per leaf, leaf to root")
    s.add_argument("--sep", default=";", help="CSV separator (default ;)")
    s.add_argument("--builder", choices=["intervals", "dates", "redaction"], help="build: the builder")
    s.add_argument("--param", "-p", action="append", metavar="NAME=VALUE", help="build: a builder parameter")
    s.add_argument("--params", default=None, help="build: all parameters as one JSON object")
    s.set_defaults(fn=cmd_hierarchy)
    s = sub.add_parser("check", parents=[common], help="assess a table or view under a privacy model")
    s.add_argument("relation", help="a table or view, schema-qualified or on your search_path")
    s.add_argument("model", help="a model name (k_anonymity, l_diversity ...), or all")
    s.add_argument("--qis", required=True, metavar="A,B", help="the quasi-identifier columns")
    s.add_argument("--sas", default="", metavar="X,Y", help="the sensitive columns")
    s.add_argument("--param", "-p", action="append", metavar="NAME=VALUE", help="a threshold or option (JSON value)")
    s.add_argument("--params", default=None, help="all parameters as one JSON object")
    s.set_defaults(fn=cmd_check)
    s = sub.add_parser("rule", parents=[common], help="semantic rules on sensitive values (method semantic)")
    s.add_argument("action", choices=["list", "set", "drop"], help="what to do")
    s.add_argument("dataset", nargs="?", help="a registered dataset (list: all when omitted)")
    s.add_argument("rule_id", nargs="?", help="the rule's id (set, drop)")
    s.add_argument("--column", help="set: the sensitive attribute")
    s.add_argument("--predicate", choices=["in", "between", "=", ">", ">=", "<", "<="], help="set: the predicate")
    s.add_argument("--values", metavar="V1,V2", help="set: in: the values; between: low,high; else one value")
    s.add_argument("--category", help="set: what the rule reveals, e.g. 'heart disease'")
    s.set_defaults(fn=cmd_rule)
    s = sub.add_parser("apply", parents=[common], help="declare a dataset from a YAML/JSON file")
    s.add_argument("file", help="the declaration file (YAML, or JSON when it ends in .json)")
    s.add_argument("--source", default=None, help="override the file's source table")
    s.add_argument("--force", action="store_true", help="accept security levels for values the column does not hold")
    s.set_defaults(fn=cmd_apply)

    s = sub.add_parser("dataset", parents=[common], help="load a bundled dataset (`pganon dataset list` names them)")
    s.add_argument("action", choices=["load", "list"], help="load one, or list them")
    s.add_argument("name", nargs="?", help="load: the dataset's name")
    s.add_argument("--rows", type=int, default=None, help="load only the first N rows")
    s.add_argument("--table", default=None, help="the table to load into (default: the dataset's name)")
    s.add_argument("--replace", action="store_true", help="replace the table if it exists")
    s.add_argument("--no-apply", action="store_true", help="load the table only, without its attribute file")
    s.add_argument("--persons", type=int, default=None, help="informs_synthetic: number of persons (default 50,000)")
    s.add_argument("--seed", type=int, default=None, help="synthetic datasets: the seed")
    s.set_defaults(fn=cmd_dataset)

    s = _methods_help(sub.add_parser(
        "publish", parents=[common], formatter_class=argparse.RawDescriptionHelpFormatter,
        help="publish a candidate release: verified, measured, risk-assessed, not yet visible"))
    s.add_argument("dataset", help="a registered dataset")
    s.add_argument("method", help="the method (listed below)")
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
    s.add_argument("--json", dest="format", action="store_const", const="json", default=argparse.SUPPRESS,
                   help="same as --format json")
    s.set_defaults(fn=cmd_risk)
    s = sub.add_parser("set-policy", parents=[common], help="risk thresholds promote enforces for a dataset")
    s.add_argument("dataset", help="a registered dataset")
    s.add_argument("policy", help='JSON object, e.g. \'{"prosecutor_risk_max": 0.1, "published_share": 0.8}\'; '
                                  "a measure left out takes each release's promise, null switches it off")
    s.set_defaults(fn=cmd_set_policy)
    s = sub.add_parser("verify", parents=[common], help="re-run a release's independent checks")
    s.add_argument("release", help="a release id, or a dataset name for its current release")
    s.set_defaults(fn=cmd_verify)
    s = sub.add_parser("audit", parents=[common], help="fingerprint-correlation attack on a GT/ST release")
    s.add_argument("release", help="a release id, or a dataset name for its current release")
    s.add_argument("--delta", default=None, help="linking attribute (default: the release's)")
    s.add_argument("--json", dest="format", action="store_const", const="json", default=argparse.SUPPRESS,
                   help="same as --format json: the whole report")
    s.set_defaults(fn=cmd_audit)
    s = sub.add_parser("compare", parents=[common],
                       help="publish several methods on the same rows and write an HTML report (nothing is kept)")
    s.add_argument("dataset", help="a registered dataset")
    s.add_argument("--methods", default=None, metavar="M1,M2",
                   help="methods to compare (default: seven from all families); LABEL=METHOD runs a method "
                        "under another name, e.g. mondrian_l=mondrian -p 'mondrian_l.privacy={\"model\": ...}'")
    s.add_argument("--k", default="5,10,20", metavar="K1,K2", help="k values; the middle one is the default setting")
    s.add_argument("--l", default="2,3,4", metavar="L1,L2", help="l values (c, p, Rating's SC); the middle one is the default")
    s.add_argument("--thetas", default="0.05,0.1,0.2", metavar="T1,T2", help="selectivities of the shared workload")
    s.add_argument("--rows", default="0.25,0.5", metavar="F1,F2", help="row fractions for time against rows")
    s.add_argument("--sas", default=None, metavar="D1,D2", help="SA counts for time against SAs (default 1..all)")
    s.add_argument("--queries", type=int, default=1000, help="queries per selectivity (default 1000)")
    s.add_argument("--seed", type=int, default=0, help="seed of the workload and the methods (default 0)")
    s.add_argument("--param", "-p", action="append", metavar="METHOD.NAME=VALUE", help="a method parameter (JSON value)")
    s.add_argument("--out", default=".", help="directory for the .html, .json and .csv (default: here)")
    s.add_argument("--quiet", action="store_true", help="no progress lines")
    s.set_defaults(fn=cmd_compare)
    s = sub.add_parser("report", parents=[common], help="HTML report of one release: promise, checks, utility, attack")
    s.add_argument("release", help="a release id, or a dataset name for its current release")
    s.add_argument("--out", default=".", help="directory for the .html and .json (default: here)")
    s.set_defaults(fn=cmd_report)
    s = sub.add_parser("releases", parents=[common], help="list releases")
    s.add_argument("dataset", nargs="?", help="only this dataset's releases")
    s.set_defaults(fn=cmd_releases)
    s = sub.add_parser("show", parents=[common], help="first rows of a dataset's release views")
    s.add_argument("dataset", help="a dataset with a current release")
    s.add_argument("--rows", type=int, default=10, help="rows per view (default 10)")
    s.add_argument("--view", choices=list(releases.VIEWS), default=None,
                   help="only this view (needed with --format csv when there are several)")
    s.set_defaults(fn=cmd_show)
    s = sub.add_parser("drop-release", parents=[common], help="drop a release")
    s.add_argument("release", type=int, help="the release id")
    s.set_defaults(fn=cmd_drop_release)
    s = sub.add_parser("export", parents=[_common(with_format=False)],
                       help="write one relation of a release as CSV or Parquet (what analysts read, never the source)")
    s.add_argument("release", help="a release id, or a dataset name for its current release")
    s.add_argument("--relation", default="gt", choices=["gt", "st", "st_long", "promise"],
                   help="which relation (default gt); the release must have it")
    s.add_argument("--format", dest="export_format", choices=["csv", "parquet"], default="csv",
                   help="csv (default, with a header line) or parquet (needs pip install 'pganon[parquet]')")
    s.add_argument("--output", "-o", default=None, metavar="FILE",
                   help="write to FILE (default: stdout); written whole or not at all")
    s.set_defaults(fn=cmd_export)
    return p


# --- errors --------------------------------------------------------------------------------------

def _one_line(text: str) -> str:
    return " ".join(part.strip() for part in str(text).strip().splitlines() if part.strip())


def _message(exc: BaseException) -> str:
    """The error as one line: pganon's or the server's SQLSTATE, the primary message, the hint."""
    if isinstance(exc, psycopg.Error):
        diag = exc.diag
        state = exc.sqlstate or diag.sqlstate
        text = diag.message_primary or (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        hint = diag.message_hint
        return _one_line(f"{state + ': ' if state else ''}{text}{f' (hint: {hint})' if hint else ''}")
    state = getattr(exc, "sqlstate", None)
    shown = f"{state}: " if state and state.startswith("PA") else ""
    return _one_line(f"{shown}{exc}")


def _check_dsn(args) -> None:
    """Refuse a malformed --dsn / $PGANON_DSN before anything parses it: libpq's own message quotes
    the string, which may hold a password, so only its shape is repeated here."""
    dsn, where = (args.dsn, "--dsn") if args.dsn else (os.environ.get("PGANON_DSN"), "$PGANON_DSN")
    if not dsn or args.command == "server":
        return
    try:
        psycopg.conninfo.conninfo_to_dict(dsn)
    except psycopg.ProgrammingError as exc:
        reason = re.sub(r'"([^"]*)"', lambda m: m[0] if len(m[1]) <= 1 else '"..."', _one_line(exc))
        raise PganonError(f"{where} is not a valid connection string: {reason}", sqlstate="PA002",
                          hint="write key=value pairs (host=... dbname=...) or a URI postgresql://user@host:port/db") \
            from None


def _wrapped_db_error(exc: BaseException) -> psycopg.Error | None:
    """The psycopg error inside a SQLAlchemy DBAPIError (install and uninstall run through Alembic)."""
    orig = getattr(exc, "orig", None)
    return orig if type(exc).__module__.startswith("sqlalchemy") and isinstance(orig, psycopg.Error) else None


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        try:
            _check_dsn(args)
            code = args.fn(args) or 0
            sys.stdout.flush()   # a closed pipe shows here, inside the handlers, not at exit
            return code
        except psycopg.Error as exc:   # raised by a statement the CLI ran itself: same codes
            translated = from_db_error(exc)
            if translated is None:
                raise
            raise translated from exc
    except VerificationFailed as exc:
        if args.traceback:
            raise
        print(f"pganon: verification failed: {_message(exc)}", file=sys.stderr)
        return 1
    except PolicyRefused as exc:
        if args.traceback:
            raise
        first, *detail = str(exc).splitlines()
        print(f"pganon: refused: {_message(PganonError(first, sqlstate=exc.sqlstate))}", file=sys.stderr)
        for line in detail:   # the failing figures, one per line
            print(f"  {line}", file=sys.stderr)
        return 3
    except (PganonError, psycopg.Error) as exc:
        if args.traceback:
            raise
        print(f"pganon: error: {_message(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        if args.traceback:
            raise
        print("pganon: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # the reader went away (`| head`): nothing to say; stop Python complaining at exit
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except OSError as exc:
        if args.traceback:
            raise
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"pganon: error: {where}{exc.strerror or exc}", file=sys.stderr)
        return 2
    except Exception as exc:
        if args.traceback:
            raise
        inner = _wrapped_db_error(exc)
        if inner is not None:
            err = from_db_error(inner) or inner
            print(f"pganon: error: {_message(err)}", file=sys.stderr)
            return 1 if isinstance(err, VerificationFailed) else 3 if isinstance(err, PolicyRefused) else 2
        print(f"pganon: internal error: {type(exc).__name__}: {_one_line(exc)} "
              f"(a bug: run again with --traceback and report it)", file=sys.stderr)
        return 4


if __name__ == "__main__":
    sys.exit(main())
