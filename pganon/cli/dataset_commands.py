"""Subcommands that declare what a release is made from: register a dataset, its attributes,
security levels, l, SA linking, hierarchies and semantic rules, a declaration file (`apply`), the
bundled datasets (`dataset`), and `check`, which assesses any table or view under a model. Each
calls one function of pganon.catalog (or pganon.datasets) and prints its result."""

from __future__ import annotations

from .. import catalog
from ..connection import connect
from ..errors import PganonError
from .common import parse_params, printer, progress, split


def cmd_register(args):
    with connect(args.dsn) as conn:
        did = catalog.register_dataset(conn, args.name, args.source, args.key, args.person)
    printer(args).record({"dataset": args.name, "id": did}, text=f"dataset {args.name} registered (id {did})")


def cmd_set_attribute(args):
    with connect(args.dsn) as conn:
        catalog.set_attribute(conn, args.dataset, args.column, args.role, args.kind)
    printer(args).record({"dataset": args.dataset, "column": args.column, "role": args.role, "kind": args.kind},
                         text=f"{args.dataset}.{args.column}: {args.role}{' ' + args.kind if args.kind else ''}")


def cmd_set_level(args):
    with connect(args.dsn) as conn:
        catalog.set_security_level(conn, args.dataset, args.column, args.value, args.level, force=args.force)
    printer(args).record({"dataset": args.dataset, "column": args.column, "value": args.value, "level": args.level},
                         text=f"{args.dataset}.{args.column} = {args.value!r}: level {args.level}")


def cmd_set_default_level(args):
    with connect(args.dsn) as conn:
        catalog.set_default_level(conn, args.dataset, args.column, args.level)
    shown = "the highest level" if args.level is None else f"level {args.level}"
    printer(args).record({"dataset": args.dataset, "column": args.column, "default_level": args.level},
                         text=f"{args.dataset}.{args.column}: values without a level of their own get {shown}")


def cmd_set_l(args):
    with connect(args.dsn) as conn:
        catalog.set_level_l(conn, args.dataset, args.level, args.l)
    printer(args).record({"dataset": args.dataset, "level": args.level, "l": args.l},
                         text=f"{args.dataset}: l{args.level} = {args.l}")


def cmd_set_dependency(args):
    ids = split(args.identified_by)
    with connect(args.dsn) as conn:
        catalog.set_dependency(conn, args.dataset, args.column, ids)
    printer(args).record({"dataset": args.dataset, "column": args.column, "identified_by": ids, "weight": len(ids)},
                         text=f"{args.dataset}.{args.column}: identified by {', '.join(ids) or 'nothing'} "
                              f"(weight {len(ids)})")


def cmd_set_delta(args):
    with connect(args.dsn) as conn:
        catalog.set_delta(conn, args.dataset, args.column)
    printer(args).record({"dataset": args.dataset, "delta": args.column},
                         text=f"{args.dataset}: delta = {args.column or '(derived from the weights)'}")


def cmd_set_chi(args):
    with connect(args.dsn) as conn:
        catalog.set_external_factor(conn, args.dataset, args.column, args.chi)
    printer(args).record({"dataset": args.dataset, "column": args.column, "chi": args.chi},
                         text=f"{args.dataset}.{args.column}: chi = {args.chi}")


def _hierarchy_rows(text: str, sep: str) -> list[list[str]]:
    import csv
    import io
    return [r for r in csv.reader(io.StringIO(text), delimiter=sep) if r]


def cmd_hierarchy(args):
    out = printer(args)
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
    params = parse_params(args) if args.action == "build" else None
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
    params = parse_params(args)
    with connect(args.dsn) as conn:
        out = catalog.check(conn, args.relation, split(args.qis), split(args.sas), args.model, params)
    results = out if args.model == "all" else {args.model: out}
    printer(args).rows(["model", "scope", "value", "per SA", "holds"],
                       [(m, r["scope"], r["value"], r["per_sa"] or None, r["holds"]) for m, r in results.items()])
    if args.model != "all" and out["holds"] is False:
        return 1


def cmd_rule(args):
    out = printer(args)
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
        printer(args).record(catalog.apply(conn, args.file, source=args.source, force=args.force))


def cmd_dataset(args):
    from .. import datasets
    out = printer(args)
    if args.action == "list":
        out.rows(["name", "description"], [(n, d.get("description", "")) for n, d in datasets.DATASETS.items()])
        return
    if not args.name:
        raise PganonError("dataset load needs a NAME", sqlstate="PA002", hint="`pganon dataset list` names them")
    datasets.get_dataset(args.name)   # an unknown name fails here, before any connection or progress
    with connect(args.dsn) as conn:
        progress(f"loading {args.name}")
        extra = {k: v for k, v in (("persons", args.persons), ("seed", args.seed)) if v is not None}
        info = datasets.load(conn, args.name, table=args.table, rows=args.rows, replace=args.replace,
                             declare=not args.no_apply, **extra)
    out.record(info)
