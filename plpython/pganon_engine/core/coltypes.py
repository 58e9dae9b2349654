"""Column types of numeric and date attributes: the one mapping, engine side, from a column's
type to how pganon publishes and measures it.  Every family builds a class's [min, max] cell,
reads a published range back and puts values on a number line through here, so a type works in
every method or in none (the verifier's SQL has its own, independent mapping).

  type                          kind      cell        number line
  smallint, integer             numeric   int4range   the value
  bigint                        numeric   int8range   the value
  numeric, real, double         numeric   numrange    the value
  date                          date      daterange   days since 1970-01-01
  timestamp [with time zone]    date      ts[tz]range seconds since 1970-01-01 (epoch)

Decisions:

- T1  Cells are closed: `range(min, max, '[]')` of the class's own values.  Discrete ranges
      (int4range, int8range, daterange) are stored canonical, [min, max + 1), so a cell's
      closed upper bound is upper - 1 there; continuous ones keep '[]'.
- T2  real and double precision are published as numrange over the values cast to numeric.
      PostgreSQL's float -> numeric cast is a fixed function of the value (15 significant
      digits for double precision, 6 for real; no session setting changes it) and never
      decreasing, so min::numeric <= x::numeric <= max::numeric holds for every value of the
      class: the cell contains each of its records exactly in numeric arithmetic, which is
      what the verifier checks (it casts the same way and compares numerics, never floats).
      The bounds are the class's min and max to that many digits.  smallint and integer share
      int4range (the range type of their common supertype), so a smallint cell holds integers
      and the verifier compares in numeric rather than in the column's own type.
- T3  The number line (widths, domains, query boxes) is float8: days for dates, epoch seconds
      for timestamps (a timestamp without time zone read as UTC, so no session TimeZone moves
      it), the value for numbers, cast as its cells are (a real 4.1 is 4.1 there, as in its
      numrange, not 4.099999904632568); dates and timestamps from extract(epoch), so 'infinity'
      is a float infinity, not an error.  It is used for measures only, never to build a cell.
- T4  A type's base type decides (a domain over integer is an integer); `catalog.load` reads
      it, and `catalog.check_types` refuses, at publish, a numeric or date QI whose column has
      since changed to a type this table does not list for its kind (PA003, naming both and the
      fix).
- T5  A closed discrete cell ending at its type's largest value cannot be stored (int4range
      [x, 2147483647] is [x, 2147483648), out of range): a QI holding it is refused (PA004, with
      the cast that fixes it) before any cell is built, by the families that publish ranges.
"""

from collections import namedtuple

from .errors import bad_data, incomplete

# top: a discrete type's largest value, which no closed cell can end at (T5)
ColumnType = namedtuple("ColumnType", "name kind range subtype discrete unit top")

TYPES = {t.name: t for t in (
    ColumnType("smallint", "numeric", "int4range", "integer", True, "value", None),
    ColumnType("integer", "numeric", "int4range", "integer", True, "value", "2147483647"),
    ColumnType("bigint", "numeric", "int8range", "bigint", True, "value", "9223372036854775807"),
    ColumnType("numeric", "numeric", "numrange", "numeric", False, "value", None),
    ColumnType("real", "numeric", "numrange", "numeric", False, "value", None),
    ColumnType("double precision", "numeric", "numrange", "numeric", False, "value", None),
    ColumnType("date", "date", "daterange", "date", True, "days", "5874897-12-31"),
    ColumnType("timestamp without time zone", "date", "tsrange", "timestamp without time zone", False, "seconds", None),
    ColumnType("timestamp with time zone", "date", "tstzrange", "timestamp with time zone", False, "seconds", None),
)}
INTEGERS = ("smallint", "integer", "bigint")
# a published range column -> the type whose values it holds (reading a GT back)
RANGES = {"int4range": TYPES["integer"], "int8range": TYPES["bigint"], "numrange": TYPES["numeric"],
          "daterange": TYPES["date"], "tsrange": TYPES["timestamp without time zone"],
          "tstzrange": TYPES["timestamp with time zone"]}


def supported(kind):
    """The type names a kind may have, for messages."""
    return [t.name for t in TYPES.values() if t.kind == kind]


def of(q):
    """The ColumnType of a declared attribute {column, kind, type} (`catalog.load` has checked
    that its type fits its kind)."""
    t = TYPES.get(q.get("type"))
    if t is None or t.kind != q.get("kind"):
        raise incomplete(f'attribute "{q["column"]}" is declared {q.get("kind")} but its column has type '
                         f'{q.get("type")}, which pganon publishes only as categorical',
                         hint=f"re-declare it: pganon.set_attribute(dataset, '{q['column']}', role, 'categorical'), "
                              f"or cast it in a view to one of {', '.join(supported(q.get('kind') or 'numeric'))}")
    return t


def of_kind(typ, kind):
    """The ColumnType of a column of type `typ` read as `kind` ('numeric' | 'date'): its own when
    it fits, else the kind's plain type (numeric, date).  For reading releases back: publish
    refuses a declaration that no longer fits its column (`catalog.check_types`), but a release
    published before the column changed can still be read."""
    t = TYPES.get(typ)
    return t if t is not None and t.kind == kind else TYPES["numeric" if kind == "numeric" else "date"]


def cell(lo, hi, t):
    """SQL of the closed cell [lo, hi] (T1) in t's range type."""
    return f"{t.range}(({lo})::{t.subtype}, ({hi})::{t.subtype}, '[]')"


def number(expr, t):
    """SQL float8 of a value of type t on its number line (T3)."""
    if t.unit == "days":
        return f"(extract(epoch FROM ({expr}))::float8 / 86400)"
    if t.unit == "seconds":
        return f"extract(epoch FROM ({expr}))::float8"
    return f"(({expr})::{t.subtype})::float8"


def bounds(col, t):
    """SQL (lo, hi) of a published range column of t's range type: its closed bounds (T1)."""
    if t.discrete:
        return f"lower({col})", f"(CASE WHEN upper_inc({col}) THEN upper({col}) ELSE upper({col}) - 1 END)"
    return f"lower({col})", f"upper({col})"


def width(col, t):
    """SQL float8 width of a published range column on the number line (0 for one value)."""
    lo, hi = bounds(col, t)
    return f"({number(hi, t)} - {number(lo, t)})"


def number_of_text(text, t):
    """A value's text (PostgreSQL's output) on t's number line, in Python (T3)."""
    import datetime
    if t.unit == "days":
        return float((datetime.date.fromisoformat(text) - datetime.date(1970, 1, 1)).days)
    if t.unit == "seconds":
        v = datetime.datetime.fromisoformat(text)
        if v.tzinfo is None:
            v = v.replace(tzinfo=datetime.timezone.utc)
        return v.timestamp()
    return float(text)


def refuse_top(db, table, qis):
    """T5: refuse (PA004) a QI of `table` (the snapshot) whose cells would end at its type's
    largest value; qis: the QIs about to be published as range cells."""
    tops = [(q, of(q)) for q in qis]
    tops = [(q, t) for q, t in tops if t.top is not None]
    if not tops:
        return
    r = db.one("SELECT " + ", ".join(f"bool_or({db.ident(q['column'])} = {db.literal(t.top)}::{t.subtype}) AS t{i}"
                                     for i, (q, t) in enumerate(tops)) + f" FROM {table}")
    for i, (q, t) in enumerate(tops):
        if r[f"t{i}"]:
            wider = {"integer": "bigint", "bigint": "numeric"}.get(t.name, "timestamp")
            raise bad_data(f'quasi-identifier "{q["column"]}" holds {t.top}, the largest {t.name}: a class\'s closed '
                           f"{t.range} cannot end at it (it is stored as [min, max + 1))",
                           hint=f"publish from a view that casts the column to {wider}, or leaves that value out")
