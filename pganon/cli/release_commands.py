"""Subcommands on releases: publish, promote, risk and the policy promote enforces, verify, the
fingerprint-correlation audit, the list, the views analysts read (`show`), drop, compare, the HTML
report and export. Each calls one function of pganon.releases (or compare, report_html, export)
and prints its result; the exit code says whether the release kept its promise (1) or the
dataset's policy (3)."""

from __future__ import annotations

import json
import os
import sys
import time

from .. import catalog, releases
from ..connection import connect
from ..errors import PganonError
from ..output import Printer, table
from .common import json_value, parse_params, printer, progress, split


def _release_id(conn, text: str) -> int:
    """A release id, or a dataset name for its current release."""
    return int(text) if text.isdigit() else releases.get(conn, dataset=text)["id"]


AUDIT_KEYS = ["n_buckets", "n_classes", "n_linkable_pairs", "n_singleton_cells", "n_pfcorr", "n_ffcorr", "n_breaches",
              "n_vulnerable_covered", "n_vulnerable_correct", "pririsk_max", "pririsk_mean", "n_classes_over_bound"]


def cmd_audit(args):
    out = printer(args)
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


def cmd_publish(args):
    out = printer(args)
    params = parse_params(args)
    if args.show and out.machine:
        raise PganonError("--show prints tables; with --format json or csv run `pganon show` afterwards",
                          sqlstate="PA002")
    with connect(args.dsn) as conn:
        t0 = time.perf_counter()
        rid = releases.publish(conn, args.dataset, args.method, params,
                               on_notice=None if args.quiet else progress, promote=args.promote)
        wall = time.perf_counter() - t0
        rel = releases.get(conn, release=rid)
        failing = [r for r in releases.risk(conn, rid) if r["passed"] is False]
    s = releases.summary(rel)
    s["wall seconds"] = round(wall, 3)
    out.record(s, as_row=True)
    if s.get("query error") is None and rel["headline"].get("family") in releases.QUERY_ERROR_FAMILIES:
        out.note(f"\nquery error not measured (publish runs its query workload only when asked: -p queries=1000); "
                 f"SELECT pganon.query_error({rid}) measures it now, and `pganon report {rid}` shows it")
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
    printer(args).record({"release": rid, "status": "current"}, text=f"release {rid} is now the current release")


def cmd_risk(args):
    out = printer(args)
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
    policy = json_value(args.policy, "the policy")
    if not isinstance(policy, dict):
        raise PganonError(f"the policy must be a JSON object, e.g. '{{\"prosecutor_risk_max\": 0.1}}', "
                          f"not {args.policy!r}", sqlstate="PA002")
    with connect(args.dsn) as conn:
        catalog.set_policy(conn, args.dataset, policy)
        now = catalog.policy(conn, args.dataset)
    printer(args).record({"dataset": args.dataset, "policy": now}, text=f"{args.dataset}: policy {json.dumps(now)}")


def cmd_verify(args):
    with connect(args.dsn) as conn:
        rid = _release_id(conn, args.release)
        checks = releases.verify(conn, rid)
    printer(args).rows(["check", "passed", "detail"], [(c["check"], c["passed"], c["detail"]) for c in checks],
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
    printer(args).dicts(summ, columns)


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
    _show(printer(args), args.dsn, args.dataset, args.rows, args.view)


def cmd_drop_release(args):
    with connect(args.dsn) as conn:
        conn.execute("SELECT pganon.drop_release(%s)", (args.release,))
    printer(args).record({"release": args.release, "dropped": True}, text=f"release {args.release} dropped")


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
    from .. import compare, report_html
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
        res = compare.run(conn, args.dataset, settings, progress=None if args.quiet else progress)
    paths = report_html.write(res, args.out, f"compare-{args.dataset}", report_html.compare_html(res))
    printer(args).rows(["file", "path"], list(paths.items()))
    if res["failures"]:
        progress(f"{len(res['failures'])} setting(s) could not be met; see the report")


def cmd_report(args):
    from .. import compare, report_html
    if not os.path.isdir(args.out):
        raise PganonError(f"--out {args.out}: no such directory", sqlstate="PA002")
    with connect(args.dsn) as conn:
        rid = _release_id(conn, args.release)
        rep = compare.release_report(conn, rid)
    paths = report_html.write(rep, args.out, f"release-{rid}", report_html.release_html(rep))
    printer(args).rows(["file", "path"], list(paths.items()))
    if not all(c["passed"] for c in rep["checks"]):
        return 1


def cmd_export(args):
    from .. import export
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
        printer(args).record(done, text=f"release {rid}: {done['rows']} row(s) of {args.relation} written to "
                                        f"{args.output} ({args.export_format})")
