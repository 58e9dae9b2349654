"""How the CLI prints a result: `--format table` (for people), `json` or `csv` (for programs).

A command hands over data, never text: a list of rows (dicts with the same keys, in column order)
or one record (a dict). Then
  table  a fixed-width table the way psql prints one (a record as two columns, key and value);
  json   a list of objects (rows) or one object (a record); keys are `key(header)`: lower case,
         words joined by "_", "%" spelled "percent", so "NCP%" is "ncp_percent"; numbers stay
         numbers (numeric as int or float), dates and times ISO 8601, anything else its text;
  csv    a header line of the same keys, then one line per row (a record is one row).
Notes for people (a heading, "promote it next") go to stdout in table format and to stderr in
json and csv, so stdout holds nothing but the data a program parses.
"""

from __future__ import annotations

import csv
import datetime
import decimal
import io
import json
import re
import sys

FORMATS = ("table", "json", "csv")


def key(header: str) -> str:
    """The stable machine key of a human column header ("risk failures" -> "risk_failures")."""
    text = header.replace("%", " percent")
    return re.sub(r"[^0-9a-z]+", "_", text.lower()).strip("_") or "value"


def _fmt(v) -> str:
    """A cell as a person reads it (floats to 4 places, lists and dicts as JSON)."""
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:.4f}"
    if isinstance(v, (dict, list, tuple)):
        return json.dumps(plain(v))
    return str(v)


def table(headers, rows) -> str:
    """A plain fixed-width table, the way psql prints one."""
    cells = [[_fmt(v) for v in r] for r in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]
    line = lambda vals: " | ".join(v.ljust(w) for v, w in zip(vals, widths)).rstrip()
    out = [line(headers), "-+-".join("-" * w for w in widths)] + [line(r) for r in cells]
    return "\n".join(out)


def kv(record: dict) -> str:
    """A record as two columns, key and value, without a header."""
    return table(["", ""], list(record.items())).split("\n", 2)[2]


def plain(v):
    """A value JSON can hold: numeric as int or float, dates ISO 8601, ranges and others as text."""
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, decimal.Decimal):
        return int(v) if v == v.to_integral_value() and v.is_finite() else float(v)
    if isinstance(v, (datetime.date, datetime.datetime, datetime.time)):
        return v.isoformat()
    if isinstance(v, dict):
        return {str(k): plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [plain(x) for x in v]
    return str(v)


def _csv_cell(v):
    v = plain(v)
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (dict, list)):
        return json.dumps(v)
    return v


class Printer:
    """Prints one command's result in the chosen format; `note` for lines meant for people."""

    def __init__(self, fmt: str = "table", out=None, err=None):
        if fmt not in FORMATS:
            raise ValueError(f"format must be one of {', '.join(FORMATS)}")
        self.fmt = fmt
        self.out = out or sys.stdout
        self.err = err or sys.stderr

    @property
    def machine(self) -> bool:
        return self.fmt != "table"

    def note(self, text: str = "") -> None:
        """A line for people: stdout in table format, stderr otherwise (stdout is data)."""
        print(text, file=self.err if self.machine else self.out)

    def rows(self, headers: list[str], rows, title: str | None = None, keys: list[str] | None = None) -> None:
        """A table: `rows` are sequences in the order of `headers`. JSON and CSV name the
        columns `keys`, by default `key(header)` (pass the headers themselves for a relation's
        own column names)."""
        rows = [list(r) for r in rows]
        keys = keys or [key(h) for h in headers]
        if self.fmt == "table":
            if title:
                print(title, file=self.out)
            print(table(headers, rows), file=self.out)
        elif self.fmt == "json":
            print(json.dumps([{k: plain(v) for k, v in zip(keys, r)} for r in rows], indent=2), file=self.out)
        else:
            self._csv(keys, rows)

    def dicts(self, records: list[dict], columns: list[str] | None = None, title: str | None = None) -> None:
        """A table from dicts: the columns are `columns`, else the union of the dicts' keys in
        first-seen order (blank where a dict has none)."""
        if columns is None:
            columns = list(dict.fromkeys(k for r in records for k in r))
        self.rows(columns, [[r.get(c) for c in columns] for r in records], title)

    def record(self, record: dict, text: str | None = None, as_row: bool = False) -> None:
        """One record: in table format `text` when given, else a one-row table (`as_row`) or
        key/value lines; a JSON object; a CSV header and one row."""
        if self.fmt == "table":
            if text is not None:
                print(text, file=self.out)
            elif as_row:
                print(table(list(record), [list(record.values())]), file=self.out)
            else:
                print(kv(record), file=self.out)
        elif self.fmt == "json":
            print(json.dumps({key(k): plain(v) for k, v in record.items()}, indent=2), file=self.out)
        else:
            self._csv([key(k) for k in record], [list(record.values())])

    def document(self, doc, sort_keys: bool = False) -> None:
        """A nested result (an audit report, several views) as JSON."""
        print(json.dumps(plain(doc), indent=2, sort_keys=sort_keys), file=self.out)

    def _csv(self, keys, rows) -> None:
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(keys)
        w.writerows([_csv_cell(v) for v in r] for r in rows)
        self.out.write(buf.getvalue())
