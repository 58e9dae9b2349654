"""Hierarchy builders and the ARX hierarchy file format (pganon issue 4, point 1; spec 001 §1.2,
§6 A1-A2).

Every hierarchy-based method (GAA, Mondrian's taxonomy splits, the information-loss metrics) needs
one generalization tree per QI.  A DBA either has ARX-style CSV files or wants a tree built from
the column's own values.  Everything here produces the row form `Hierarchy.from_paths` takes: one
list of strings per leaf, leaf first, root last.  Standard library only (runs in PL/Python).

Builders emit balanced trees (every row the same length) in which every label sits at one depth
and has one parent, so their rows always form a valid tree.  ARX allows a label to repeat on two
levels of a row (an interval or group that a coarser level leaves unchanged); a tree cannot hold a
node that is its own parent, so the builders never emit that: they refuse with the fix, or, for
the short last group of `ordered_groups`, merge it.

Decisions:

- H1 File format (ARX): no header; one row per leaf, leaf first, root last; separator ';' (any
     single character on request, e.g. ','); fields quoted with '"' when needed, a '"' inside
     doubled; a UTF-8 byte-order mark is stripped; empty lines are skipped; fields are kept
     verbatim (no whitespace stripping: a leaf must equal the data value's text).  Every row has
     as many fields as the first (ARX files are rectangular); an empty field is an error.
     A one-column file whose labels contain ';', ',', tab or '|' (other than sep) is refused as
     read with the wrong separator.  `write_csv` writes '\\n' line ends and quotes only fields
     that contain sep, '"' or a line break, so `read_csv(write_csv(rows)) == rows` except for
     those one-column files and a first label starting with U+FEFF.
- H2 Row order (there are no ties to break, hence no seed): numeric leaves by value, then text;
     dates chronologically, then text; codes by their padded form, then text; ordered groups in
     the order given.  Equal labels are one leaf.
- H3 Interval labels are PostgreSQL range literals, half-open "[lo,hi)": they cast with
     ::int4range / ::numrange.  Bounds are plain decimals without exponent or trailing zeros
     ("[1.5,2)").  `intervals` puts level i's bounds on the grid origin + j * widths[i]; each width
     must be a multiple of the previous one (nested) and larger.  `cut_intervals` ends open:
     "(,18)" and "[65,)", as PostgreSQL prints unbounded ranges.  A value on a cut belongs to the
     interval above it.
- H4 Numeric leaf labels: a str is kept as given (it must parse as a finite decimal, with no
     surrounding blanks); an int (or numpy integer) as str(int); a Decimal as str(Decimal); a
     float as repr(float) (its shortest round-trip text).  Arithmetic is exact (Decimal).
     None, bools, NaN and infinities are refused.
- H5 Redaction pads like ARX's default alignment: values are aligned left and short values are
     padded on the right (align='right' pads on the left).  ARX pads with the redaction
     character, which gives "476" the label "476**" on two levels (and makes it the level-2 node
     of "47677"), which no tree can hold; pganon pads with pad='#' by default, so "476" ->
     "476#*" -> "476**" (joining 47677's level-2 node) -> ... -> "*****".  The root is one
     redaction character per position of the longest value.  pad='0', align='right' restores
     numeric codes that lost leading zeros (2134 -> "0213*").  Values may not contain the pad or
     the redaction character.
- H6 A level that would repeat a node of the level below is refused: in `cut_intervals` a
     populated interval that a coarser level leaves unchanged (keeping a finest cut keeps its
     open interval "(,18)"), in `ordered_groups` a level with one group followed by more levels.
     `cut_intervals(..., balanced=False)` instead writes an unchanged interval once, so that row
     is shorter: a valid but unbalanced tree (spec §6 A2 treats the longer edge as a chain of
     virtual nodes), which `Hierarchy.from_paths` takes but an ARX file cannot hold.  The short
     last group of an `ordered_groups` level that would equal a group of the level below is
     merged into the group before it.
- H7 dates: day "YYYY-MM-DD" > month "YYYY-MM" > year "YYYY" > "*" by default; levels may be
     chosen from month, quarter ("YYYY-Qn"), year and decade ("2020s"), finest first.  Timestamps
     (PostgreSQL's text of a timestamp column, "YYYY-MM-DD HH:MM:SS[.ffffff][+TZ]", kept verbatim
     as the leaf) get the level day "YYYY-MM-DD" first by default; day is refused over dates,
     whose leaves it would repeat.
"""

import csv
import io
import numbers
import re
from bisect import bisect_right
from datetime import date, datetime
from decimal import Decimal, Inexact, InvalidOperation, localcontext

from pganon_engine.core.errors import invalid

ROOT = "*"

__all__ = ["ROOT", "read_csv", "write_csv", "intervals", "cut_intervals", "dates", "redaction",
           "ordered_groups"]


# --------------------------------------------------------------------------------------------
# ARX CSV files (H1)
# --------------------------------------------------------------------------------------------


def read_csv(text, sep=";"):
    """Rows of an ARX hierarchy file: a list of lists of str, one per leaf, leaf first.

    text  the file's content (str, or bytes in UTF-8); sep  the field separator (ARX: ';')
    """
    sep = _sep(sep)
    if isinstance(text, (bytes, bytearray)):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as e:
            raise invalid(f"hierarchy file is not UTF-8 ({e})", hint="save it as UTF-8") from None
    if not isinstance(text, str):
        raise invalid(f"hierarchy file content must be text, not {type(text).__name__}")
    if text.startswith("\ufeff"):
        text = text[1:]
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=sep, quotechar='"',
                        doublequote=True, strict=True)
    rows, width, first, end = [], None, None, 0
    try:
        for rec in reader:
            line, end = end + 1, reader.line_num
            if not rec:
                continue
            if width is None:
                width, first = len(rec), line
            elif len(rec) != width:
                raise invalid(
                    f"hierarchy file line {line} has {len(rec)} fields, line {first} has {width}",
                    hint="give every leaf the same number of levels (ARX files are rectangular); "
                         f"check the separator (reading with sep={sep!r})")
            for i, field in enumerate(rec, start=1):
                if field == "":
                    raise invalid(f"hierarchy file line {line}, field {i} is empty",
                                  hint="every level needs a label; the root is usually '*'")
            rows.append(rec)
    except csv.Error as e:
        raise invalid(f"hierarchy file line {reader.line_num}: {e}",
                      hint="close the quote, or double a '\"' inside a quoted field") from None
    if not rows:
        raise invalid("hierarchy file has no rows", hint="write one row per leaf: leaf;...;*")
    if width == 1:                          # one column: most likely the wrong separator
        for other in ";,\t|":
            hit = next((r[0] for r in rows if other in r[0]), None)
            if other != sep and hit is not None:
                raise invalid(f"hierarchy file has one field per row and {hit!r} contains "
                              f"{other!r}", hint=f"read it with sep={other!r}")
    return rows


def write_csv(rows, sep=";"):
    """The ARX file text of rectangular rows (H1): one line per row, '\\n' line ends."""
    sep = _sep(sep)
    special = (sep, '"', "\r", "\n")      # the csv module would not quote a lone '\r'

    def field(label):
        if any(c in label for c in special):
            return '"' + label.replace('"', '""') + '"'
        return label

    return "".join(sep.join(map(field, row)) + "\n" for row in _rectangular(rows))


def _sep(sep):
    if not isinstance(sep, str) or len(sep) != 1 or sep in '"\r\n':
        raise invalid(f"separator must be one character other than a quote or a line break, "
                      f"not {sep!r}", hint="ARX files use ';'; pass sep=',' for comma-separated")
    return sep


def _rectangular(rows):
    if isinstance(rows, (str, bytes)) or not hasattr(rows, "__iter__"):
        raise invalid("rows must be a list of rows, each a list of labels")
    out = []
    for n, row in enumerate(rows, start=1):
        if isinstance(row, (str, bytes)) or not hasattr(row, "__iter__"):
            raise invalid(f"row {n} is {row!r}, not a list of labels")
        row = list(row)
        for i, label in enumerate(row, start=1):
            if not isinstance(label, str) or label == "":
                raise invalid(f"row {n}, field {i} is {label!r}; labels are non-empty strings")
        if out and len(row) != len(out[0]):
            raise invalid(f"row {n} has {len(row)} fields, row 1 has {len(out[0])}",
                          hint="ARX files are rectangular: give every leaf the same levels")
        if not row:
            raise invalid(f"row {n} is empty")
        out.append(row)
    if not out:
        raise invalid("no rows to write", hint="build the rows first (one per leaf)")
    return out


# --------------------------------------------------------------------------------------------
# Numeric intervals (H3, H4)
# --------------------------------------------------------------------------------------------


def intervals(values, widths, *, origin=0):
    """Balanced interval hierarchy: leaf -> [lo,hi) of width widths[0] -> ... -> '*'.

    values  the leaves: numbers (int, Decimal, float, numeric text); duplicates are one leaf
    widths  interval widths per level, finest first; each larger than and a multiple of the
            previous one, so intervals nest (e.g. (5, 10, 20) for age)
    origin  a bound of every level's grid (bounds are origin + j * width)
    """
    leaves = _numbers(values, "intervals")
    if isinstance(widths, (numbers.Number, str, Decimal)):
        widths = (widths,)
    ws = []
    for i, w in enumerate(widths, start=1):
        d, _ = _number(w, f"width at level {i}")
        if d <= 0:
            raise invalid(f"width at level {i} is {w!r}; widths must be positive")
        if ws:
            if d <= ws[-1] or not _exact(lambda: d % ws[-1] == 0):
                raise invalid(
                    f"width {_fmt(d)} at level {i} is not a larger multiple of the width "
                    f"{_fmt(ws[-1])} at level {i - 1}: its intervals would not nest",
                    hint=f"use a multiple such as {_fmt(ws[-1] * 2)}")
        ws.append(d)
    o, _ = _number(origin, "origin")
    rows = []
    for d, label in leaves:
        row = [label]
        for w in ws:
            lo = _exact(lambda: o + _floor_div(d - o, w) * w)
            row.append(f"[{_fmt(lo)},{_fmt(_exact(lambda: lo + w))})")
        rows.append(row + [ROOT])
    return _checked(rows)


def cut_intervals(values, cuts, *, balanced=True):
    """Interval hierarchy from explicit cut points: leaf -> "(,c1)" / "[c1,c2)" / "[cn,)" at
    each level -> '*'.

    values    the leaves, numbers as for `intervals`
    cuts      one sequence of cut points per level, finest first; every cut of a coarser level
              must be a cut of the finer level before it (nested), e.g. [[18, 30, 45, 65], [30]]
    balanced  True: refuse an interval that a coarser level leaves unchanged; False: write it
              once (a shorter row, H6), e.g. for [[18, 30, 45, 65], [18, 65]]
    """
    leaves = _numbers(values, "cut_intervals")
    if isinstance(cuts, (numbers.Number, str)) or not cuts:
        raise invalid("cuts must be a list of levels, each a list of cut points",
                      hint="e.g. cuts=[[18, 30, 45, 65], [30]]")
    levels = []
    for i, level in enumerate(cuts, start=1):
        if isinstance(level, (numbers.Number, str)):
            raise invalid(f"cuts level {i} is {level!r}, not a list of cut points",
                          hint="e.g. cuts=[[18, 30, 45, 65], [30]]")
        points = sorted({_number(c, f"cut at level {i}")[0] for c in level})
        if not points:
            raise invalid(f"cuts level {i} has no cut points: it would equal the root '*'",
                          hint="drop that level")
        if levels:
            finer = set(levels[-1])
            for c in points:
                if c not in finer:
                    raise invalid(f"cut {_fmt(c)} at level {i} is not a cut at level {i - 1}: "
                                  f"its intervals would not nest",
                                  hint=f"add {_fmt(c)} to level {i - 1} or drop it from level {i}")
        levels.append(points)
    rows = []
    for d, label in leaves:
        row = [label]
        for i, points in enumerate(levels, start=1):
            j = bisect_right(points, d)
            lo = _fmt(points[j - 1]) if j else ""
            hi = _fmt(points[j]) if j < len(points) else ""
            node = f"{'[' if lo else '('}{lo},{hi})"
            if i > 1 and node == row[-1]:
                if not balanced:
                    continue
                raise invalid(
                    f"interval {node} (holding {label}) is the same at levels {i - 1} and {i}: "
                    f"a balanced tree cannot repeat a node",
                    hint=f"drop a bound of {node} from level {i}, cut {node} at level {i - 1}, "
                         f"or pass balanced=False for an unbalanced tree")
            row.append(node)
        rows.append(row + [ROOT])
    return _checked(rows)


def _numbers(values, what):
    """Distinct (Decimal, label) pairs in value order, then label order (H2, H4)."""
    seen = {}
    for v in _values(values, what):
        d, label = _number(v, f"value {v!r}")
        seen.setdefault(label, d)
    return sorted(((d, label) for label, d in seen.items()), key=lambda x: (x[0], x[1]))


def _number(v, what):
    if v is None:
        raise invalid(f"{what} is NULL", hint="hierarchies cover non-NULL values only; "
                                              "drop NULLs or give them a value first")
    if isinstance(v, bool):
        raise invalid(f"{what} is a boolean, not a number")
    if isinstance(v, Decimal):
        d, label = v, str(v)
    elif isinstance(v, numbers.Integral):
        d = Decimal(int(v))
        label = str(int(v))
    elif isinstance(v, numbers.Real):
        label = repr(float(v))
        try:
            d = Decimal(label)
        except InvalidOperation:
            d = Decimal("NaN")
    elif isinstance(v, str):
        label = v
        try:
            d = Decimal(v) if v == v.strip() else None
        except InvalidOperation:
            d = None
        if d is None:
            raise invalid(f"{what} is not a number", hint="give numbers or numeric text")
    else:
        raise invalid(f"{what} has type {type(v).__name__}, not a number")
    if not d.is_finite():
        raise invalid(f"{what} is not a finite number", hint="drop NaN and infinities")
    return d, label


def _exact(f):
    """f() in exact decimal arithmetic (an inexact result is an error, never rounded)."""
    with localcontext() as ctx:
        ctx.prec = 200
        ctx.traps[Inexact] = True
        try:
            return f()
        except (Inexact, InvalidOperation):
            raise invalid("numbers too large or too precise for exact interval arithmetic",
                          hint="round the values or the widths") from None


def _floor_div(a, b):
    q = a // b          # Decimal // truncates toward zero
    if a % b != 0 and (a < 0) != (b < 0):
        q -= 1
    return q


def _fmt(d):
    if d == d.to_integral_value():
        return str(int(d))
    return format(d.normalize(), "f")


# --------------------------------------------------------------------------------------------
# Dates (H7)
# --------------------------------------------------------------------------------------------

_DATE_LEVELS = {
    "day": lambda d: d.isoformat(),
    "month": lambda d: f"{d.year:04d}-{d.month:02d}",
    "quarter": lambda d: f"{d.year:04d}-Q{(d.month - 1) // 3 + 1}",
    "year": lambda d: f"{d.year:04d}",
    "decade": lambda d: f"{d.year // 10 * 10:04d}s",
}
_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}\Z")
_ISO_TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(\.\d{1,6})?([+-]\d{2}(:\d{2}){0,2})?\Z")


def dates(values, levels=None):
    """Balanced date hierarchy: "2024-03-15" -> "2024-03" -> "2024" -> '*' (default levels);
    timestamps "2024-03-15 08:30:00" -> "2024-03-15" -> "2024-03" -> "2024" -> '*'.

    values  datetime.date, "YYYY-MM-DD" text or timestamp text (PostgreSQL's ISO output);
            duplicates are one leaf
    levels  names from finest to coarsest among day (timestamps only), month, quarter, year,
            decade; default month, year (with day first for timestamps)
    """
    values = _values(values, "dates")
    stamps = any(isinstance(v, str) and _ISO_TIMESTAMP.match(v) for v in values)
    if levels is None:
        levels = ("day", "month", "year") if stamps else ("month", "year")
    if isinstance(levels, str):
        levels = (levels,)
    levels = list(levels)
    order = list(_DATE_LEVELS)
    for name in levels:
        if name not in _DATE_LEVELS:
            raise invalid(f"unknown date level {name!r}", hint=f"use some of {order}")
    ranks = [order.index(n) for n in levels]
    if ranks != sorted(set(ranks)):
        raise invalid(f"date levels {levels} are not distinct and finest first",
                      hint=f"order them as in {order}")
    seen = {}
    for v in values:
        if v is None:
            raise invalid("dates has a NULL value", hint="hierarchies cover non-NULL values "
                                                         "only; drop NULLs first")
        if isinstance(v, datetime):
            raise invalid(f"value {v!r} is a timestamp, not a date", hint="pass v.date()")
        if isinstance(v, date):
            d, label = v, v.isoformat()
        elif isinstance(v, str) and (_ISO_DATE.match(v) or _ISO_TIMESTAMP.match(v)):
            try:
                d, label = date.fromisoformat(v[:10]), v
                if len(v) > 10:
                    datetime.fromisoformat(v)
            except ValueError:
                raise invalid(f"value {v!r} is not a valid date") from None
            if "day" in levels and len(v) == 10:
                raise invalid(f"level day would repeat the date {v!r}: it is for timestamps",
                              hint="leave day out for a date column")
        else:
            raise invalid(f"value {v!r} is not a date", hint="give dates or 'YYYY-MM-DD' text")
        seen.setdefault(label, d)
    rows = [[label] + [_DATE_LEVELS[n](d) for n in levels] + [ROOT]
            for label, d in sorted(seen.items(), key=lambda x: (x[1], x[0]))]
    return _checked(rows)


# --------------------------------------------------------------------------------------------
# Redaction of codes (H5)
# --------------------------------------------------------------------------------------------


def redaction(values, keep=None, *, align="left", pad="#", char="*"):
    """Balanced redaction hierarchy: "47677" -> "4767*" -> "476**" -> ... -> "*****".

    values  codes (text or integers); duplicates are one leaf
    keep    which levels to keep, as numbers of visible leading characters (e.g. 3 or (3,) for
            "476**" only); None keeps them all (longest code's length - 1 down to 1).  The fully
            redacted root always ends the row.
    align   'left' (ARX's default: short codes padded on the right) or 'right'
    pad     padding character of short codes; char  the redaction character
    """
    if align not in ("left", "right"):
        raise invalid(f"align must be 'left' or 'right', not {align!r}")
    for name, c in (("pad", pad), ("char", char)):
        if not isinstance(c, str) or len(c) != 1:
            raise invalid(f"{name} must be one character, not {c!r}")
    if pad == char:
        raise invalid(f"pad and char are both {pad!r}: a padded code would repeat a label on "
                      f"two levels", hint="pick another pad, e.g. '#'")
    codes = {}
    for v in _values(values, "redaction"):
        if v is None:
            raise invalid("redaction has a NULL value", hint="hierarchies cover non-NULL "
                                                             "values only; drop NULLs first")
        if isinstance(v, bool) or not isinstance(v, (str, numbers.Integral)):
            raise invalid(f"value {v!r} is not a code", hint="give text or integers")
        label = v if isinstance(v, str) else str(int(v))
        if label == "":
            raise invalid("redaction has an empty code", hint="drop it or give it a value")
        for c, name in ((char, "redaction character"), (pad, "padding character")):
            if c in label:
                raise invalid(f"code {label!r} contains the {name} {c!r}",
                              hint=f"choose another {'char' if c == char else 'pad'}")
        codes[label] = None
    width = max(len(c) for c in codes)
    if keep is None:
        kept = list(range(width - 1, 0, -1))
    else:
        if isinstance(keep, numbers.Integral):
            keep = (keep,)
        kept = set()
        for n in keep:
            if isinstance(n, bool) or not isinstance(n, numbers.Integral) or not 0 < n < width:
                raise invalid(f"keep has {n!r}; levels are numbers of visible characters from "
                              f"1 to {width - 1} (the longest code has {width})")
            kept.add(int(n))
        kept = sorted(kept, reverse=True)
    rows = []
    for label in codes:
        fill = pad * (width - len(label))
        padded = label + fill if align == "left" else fill + label
        rows.append((padded, [label] + [padded[:n] + char * (width - n) for n in kept]
                     + [char * width]))
    rows.sort(key=lambda x: (x[0], x[1][0]))
    return _checked([r for _, r in rows])


# --------------------------------------------------------------------------------------------
# Ordered categorical groups (H6)
# --------------------------------------------------------------------------------------------


def ordered_groups(values, size):
    """Balanced hierarchy of consecutive groups of categorical values in a given order:
    leaf -> "[first..last]" of `size` values -> ... -> '*'.

    values  the categories in their order (text or integers), each once
    size    values per group, or one size per level, finest first, each a larger multiple of the
            previous (e.g. (2, 4)); a short last group that would equal a group of the level
            below joins the group before it (H6)
    """
    order, seen = [], set()
    for v in _values(values, "ordered_groups"):
        if v is None:
            raise invalid("ordered_groups has a NULL value", hint="drop NULLs first")
        if isinstance(v, bool) or not isinstance(v, (str, numbers.Integral)):
            raise invalid(f"value {v!r} is not a category", hint="give text or integers")
        label = v if isinstance(v, str) else str(int(v))
        if label in seen:
            raise invalid(f"value {label!r} appears twice in the order", hint="list each once")
        seen.add(label)
        order.append(label)
    sizes = (size,) if isinstance(size, numbers.Integral) else tuple(size)
    if not sizes:
        raise invalid("size has no levels", hint="e.g. size=2 or size=(2, 4)")
    prev_size = 1
    for i, s in enumerate(sizes, start=1):
        if isinstance(s, bool) or not isinstance(s, numbers.Integral) or s <= prev_size \
                or s % prev_size:
            below = "1 (a single value)" if i == 1 else f"{prev_size} (the size at level {i - 1})"
            raise invalid(f"size {s!r} at level {i} is not a larger multiple of {below}: "
                          f"groups would not nest", hint=f"use e.g. {prev_size * 2}")
        prev_size = s
    groups = [[v] for v in order]          # level 0: the leaves
    paths = {v: [v] for v in order}
    prev_size = 1
    for i, s in enumerate(sizes, start=1):
        fan = s // prev_size
        chunks = [groups[j:j + fan] for j in range(0, len(groups), fan)]
        if len(chunks[-1]) == 1:
            if len(chunks) == 1:
                if i == 1:
                    raise invalid("ordered_groups has a single value: there is nothing to group",
                                  hint="give at least two values")
                raise invalid(f"level {i} would repeat level {i - 1}, which already holds all "
                              f"{len(order)} values in one group",
                              hint=f"drop the sizes from level {i} on")
            chunks[-2].extend(chunks.pop())
        groups = [[v for g in chunk for v in g] for chunk in chunks]
        for g in groups:
            node = f"[{g[0]}..{g[-1]}]"
            for v in g:
                paths[v].append(node)
        prev_size = s
    return _checked([paths[v] + [ROOT] for v in order])


# --------------------------------------------------------------------------------------------
# Shared checks
# --------------------------------------------------------------------------------------------


def _values(values, what):
    if values is None or isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise invalid(f"{what} needs a list of values, not {values!r}")
    values = list(values)
    if not values:
        raise invalid(f"{what} has no values", hint="give the column's distinct values")
    return values


def _checked(rows):
    """Rows as a tree: every label at one distance from the root, with one parent, and no leaf
    inside another row (catches a value that looks like a generated label, e.g. '*')."""
    depth, parent = {}, {}
    leaves = {row[0] for row in rows}
    for row in rows:
        top = len(row) - 1
        for d, label in enumerate(row):
            if d and label in leaves:
                raise invalid(f"value {label!r} is also a generated label of the hierarchy",
                              hint="a value may not look like a generated label; rename it")
            if depth.setdefault(label, top - d) != top - d:
                raise invalid(f"label {label!r} would sit {depth[label]} and {top - d} levels "
                              f"below the root", hint="a value may not look like a generated "
                                                      "label; rename it")
            if d < top and parent.setdefault(label, row[d + 1]) != row[d + 1]:
                raise invalid(f"label {label!r} would have two parents, {parent[label]!r} and "
                              f"{row[d + 1]!r}", hint="rename the value")
    return rows
