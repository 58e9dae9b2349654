"""The argument parser of `pganon`: every subcommand with its arguments and help, the one-line
usage errors, and the table of publish methods `pganon publish --help` lists. Kept apart from the
commands so that the whole command line reads in one place."""

from __future__ import annotations

import argparse
import decimal

from .. import __version__, releases
from ..output import FORMATS
from .dataset_commands import (cmd_apply, cmd_check, cmd_dataset, cmd_hierarchy, cmd_register, cmd_rule,
                               cmd_set_attribute, cmd_set_chi, cmd_set_default_level, cmd_set_delta,
                               cmd_set_dependency, cmd_set_l, cmd_set_level)
from .release_commands import (cmd_audit, cmd_compare, cmd_drop_release, cmd_export, cmd_promote, cmd_publish,
                               cmd_releases, cmd_report, cmd_risk, cmd_set_policy, cmd_show, cmd_verify)
from .server_commands import cmd_install, cmd_server, cmd_status, cmd_uninstall


# One line per publish method, shown by `pganon publish --help`. The methods themselves come from
# the engine's family registry (pganon_engine.release.families.FAMILIES); a test checks that this table
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
    from pganon_engine.release.families import FAMILIES
    return sorted(FAMILIES)


def methods_epilog() -> str:
    names = methods()
    width = max(map(len, names))
    lines = [f"  {m.ljust(width)}  {METHOD_HELP.get(m, '(undocumented: see docs/concepts.md)')}" for m in names]
    return ("methods (docs/concepts.md says what each protects; docs/sql-api.md lists the parameters):\n"
            + "\n".join(lines))


def _chi(text: str) -> decimal.Decimal:
    """chi as an exact number: pganon.set_external_factor takes numeric, not a float."""
    try:
        value = decimal.Decimal(text)
    except decimal.InvalidOperation:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not value.is_finite():
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number")
    return value


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
