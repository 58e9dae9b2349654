"""The declaration file (`pganon apply FILE`): read it, check it against SCHEMA, return plain data.

Two traps of YAML 1.1 (PyYAML's default) are closed here, before anything is written:
- scalars are typed by the schema, not by YAML: where a value is expected (a sensitive value, a
  rule value, a column name) the text is kept exactly as written, so `Yes`, `off`, `1.0`, `007` or
  `2020-01-01` stay those strings instead of becoming True, False, 1.0, 7 or a date; numbers and
  booleans are read only where the schema wants them, in YAML 1.2 core form (`true`, not `yes`);
- the whole file is checked (unknown keys, types, allowed values, duplicates, levels without an
  l, references to undeclared sensitive attributes) with `file:line:` on every problem, and it is
  refused whole: `catalog.apply` writes only a file that passed.

JSON files are read the same way (JSON is YAML flow syntax); one PyYAML cannot read (tabs) is read
with the json module, without line numbers.
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

import yaml

from .errors import PganonError

ROLES = ("identifier", "quasi", "sensitive", "insensitive")
KINDS = ("numeric", "categorical", "date")
PREDICATES = ("in", "between", "=", ">", ">=", "<", "<=")
DEFAULT_LEVEL_L = {0: 1, 1: 2, 2: 3}   # what register_dataset sets when the file has no level_l
MAX_SHOWN_PROBLEMS = 5
MAX_NODES = 200_000        # aliases may repeat a subtree: bounded, so `&a [*a, *a ...]` bombs stop
_INT = re.compile(r"[-+]?[0-9]+\Z")
_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?\Z")   # YAML 1.2 core
_NULL = ("", "~", "null", "Null", "NULL")
_TRUE, _FALSE = ("true", "True", "TRUE"), ("false", "False", "FALSE")


# --- the file as a tree of scalars, sequences and mappings, each with its line -----------------

@dataclass
class Scalar:
    text: str
    plain: bool          # unquoted (YAML plain style, or a JSON number / true / false / null)
    line: int | None


@dataclass
class Seq:
    items: list
    line: int | None


@dataclass
class Map:
    pairs: list          # [(Scalar key, node)] in file order
    line: int | None


class _Problems:
    """Every problem found, each with its file and line, refused together; and the line of every
    node checked, by its location (a tuple of keys and indexes), for the checks across keys."""

    def __init__(self, path: Path):
        self.path, self.items, self.lines, self.sqlstate = path, [], {}, None

    def add(self, line: int | None, message: str, sqlstate: str = "PA002") -> None:
        """One problem; the error carries the first one's SQLSTATE (PA003 for a level without an l,
        as pganon.set_security_level says it)."""
        self.items.append(f"{self.path}:{line}: {message}" if line else f"{self.path}: {message}")
        self.sqlstate = self.sqlstate or sqlstate

    def raise_if_any(self) -> None:
        if not self.items:
            return
        first, rest = self.items[0], self.items[1:]
        more = ""
        if rest:
            shown = "; ".join(rest[:MAX_SHOWN_PROBLEMS - 1])
            left = len(rest) - (MAX_SHOWN_PROBLEMS - 1)
            more = f" ({len(rest)} more: {shown}{f'; and {left} more' if left > 0 else ''})"
        raise PganonError(first + more, sqlstate=self.sqlstate,
                          hint="nothing was applied; every key is described in docs/sql-api.md, \"Declarative file\"")


def _from_yaml(path, node, count, depth=0):
    """Our tree from PyYAML's composed nodes (before any YAML typing), aliases expanded."""
    count[0] += 1
    if depth > 50 or count[0] > MAX_NODES:
        raise PganonError(f"{path}:{node.start_mark.line + 1}: the file is nested too deeply or repeats too much "
                          f"through aliases (more than {MAX_NODES} entries)", sqlstate="PA002")
    line = node.start_mark.line + 1
    if isinstance(node, yaml.ScalarNode):
        return Scalar(node.value, node.style is None, line)
    if isinstance(node, yaml.SequenceNode):
        return Seq([_from_yaml(path, n, count, depth + 1) for n in node.value], line)
    return Map([(_from_yaml(path, k, count, depth + 1), _from_yaml(path, v, count, depth + 1))
                for k, v in node.value], line)


def _from_json(value):
    """A tree from json.loads(..., parse_int=str, parse_float=str) output: numbers keep their text."""
    if isinstance(value, _JsonNumber):
        return Scalar(str(value), True, None)
    if isinstance(value, str):
        return Scalar(value, False, None)
    if value is None or isinstance(value, bool):
        return Scalar({None: "null", True: "true", False: "false"}[value], True, None)
    if isinstance(value, _JsonObject):
        return Map([(Scalar(k, False, None), _from_json(v)) for k, v in value], None)
    return Seq([_from_json(v) for v in value], None)


class _JsonNumber(str):
    """A JSON number's text, as written."""


class _JsonObject(list):
    """A JSON object's (key, value) pairs, in order, duplicates kept (the schema refuses them)."""


def _no_constant(name):
    raise ValueError(f"{name} is not a JSON number")


def parse(path: Path, text: str):
    """The file's tree (line numbers where the parser gives them)."""
    if path.suffix == ".json":
        try:
            pairs = json.loads(text, parse_int=_JsonNumber, parse_float=_JsonNumber,
                               parse_constant=_no_constant, object_pairs_hook=_JsonObject)
        except ValueError as exc:
            raise PganonError(f"{path} is not valid JSON: {exc}", sqlstate="PA002") from None
        try:
            node = yaml.compose(text, Loader=yaml.SafeLoader)
        except yaml.YAMLError:
            node = None
        return _from_yaml(path, node, [0]) if node is not None else _from_json(pairs)
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark else str(path)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise PganonError(f"{where}: not valid YAML: {problem}", sqlstate="PA002") from None
    if node is None:
        raise PganonError(f"{path}: the file is empty", sqlstate="PA002")
    return _from_yaml(path, node, [0])


# --- the schema: types that check a node and return its value ----------------------------------

def _shown(text: str) -> str:
    return repr(text) if len(text) <= 40 else repr(text[:40])[:-1] + f"...' ({len(text)} characters)"


def _what(node) -> str:
    if isinstance(node, Scalar):
        return "null" if node.plain and node.text in _NULL else _shown(node.text)
    return "a list" if isinstance(node, Seq) else "a mapping"


def _pairs(node, where, out):
    """A mapping's (key, value) pairs; a key twice is a problem (YAML would keep the last)."""
    if not isinstance(node, Map):
        out.add(node.line, f"{where or 'the file'} must be a mapping, not {_what(node)}")
        return None
    at = f"{where}: " if where else ""
    seen, pairs = {}, []
    for k, v in node.pairs:
        if not isinstance(k, Scalar):
            out.add(k.line, f"{at}a key must be text, not {_what(k)}")
        elif k.text in seen:
            out.add(k.line, f"{at}key {_shown(k.text)} appears twice (first on line {seen[k.text]})")
        else:
            seen[k.text] = k.line
            pairs.append((k, v))
    return pairs


@dataclass
class Type:
    """Any node, typed the YAML 1.2 core way (a builder's free-form parameters)."""
    doc: str = ""
    nullable: bool = False

    def check(self, node, where: str, loc: tuple, out: _Problems):
        out.lines[loc] = node.line
        if self.nullable and isinstance(node, Scalar) and node.plain and node.text in _NULL:
            return None
        return self.value(node, where, loc, out)

    def value(self, node, where, loc, out):
        return _json_value(node)

    def scalar(self, node, where, out, wanted: str) -> Scalar | None:
        if isinstance(node, Scalar):
            return node
        out.add(node.line, f"{where} must be {wanted}, not {_what(node)}")
        return None

    def name(self) -> str:
        return "any (YAML 1.2 core types)"

    def _or_null(self, text: str) -> str:
        return text + (" or null" if self.nullable else "")


def _json_value(node):
    if isinstance(node, Seq):
        return [_json_value(n) for n in node.items]
    if isinstance(node, Map):
        return {k.text: _json_value(v) for k, v in node.pairs}
    if not node.plain:
        return node.text
    if node.text in _NULL:
        return None
    if node.text in _TRUE + _FALSE:
        return node.text in _TRUE
    if _INT.match(node.text):
        return int(node.text)
    return float(node.text) if _FLOAT.match(node.text) else node.text


@dataclass
class Text(Type):
    """A name (column, dataset, table): its text as written; null is refused."""

    def value(self, node, where, loc, out):
        s = self.scalar(node, where, out, "a name")
        if s is not None and s.plain and s.text in _NULL:
            out.add(node.line, f"{where} must be a name, not null")
            return None
        return None if s is None else s.text

    def name(self):
        return self._or_null("text")


@dataclass
class Value(Type):
    """A value of a column: its text exactly as written (`Yes`, `on`, `1.0`, `2020-01-01` stay text)."""

    def value(self, node, where, loc, out):
        s = self.scalar(node, where, out, "a value")
        if s is not None and s.plain and s.text in ("", "~"):
            out.add(node.line, f"{where}: an empty value; quote it ('') if the column holds empty strings")
            return None
        return None if s is None else s.text

    def name(self):
        return "value (its text, as written)"


@dataclass
class Int(Type):
    minimum: int = 0

    def value(self, node, where, loc, out):
        s = self.scalar(node, where, out, f"an integer >= {self.minimum}")
        if s is None:
            return None
        if not _INT.match(s.text) or int(s.text) < self.minimum:
            out.add(node.line, f"{where} must be an integer >= {self.minimum}, not {_what(s)}")
            return None
        return int(s.text)

    def name(self):
        return self._or_null(f"integer >= {self.minimum}")


@dataclass
class Number(Type):
    """A finite number, kept exact: a Decimal of the text as written (1.10 stays 1.10)."""

    def value(self, node, where, loc, out):
        s = self.scalar(node, where, out, "a number")
        if s is None:
            return None
        if not (s.plain and _FLOAT.match(s.text)):
            out.add(node.line, f"{where} must be a number, not {_what(s)}")
            return None
        return Decimal(s.text)

    def name(self):
        return self._or_null("number")


@dataclass
class Bool(Type):
    def value(self, node, where, loc, out):
        s = self.scalar(node, where, out, "true or false")
        if s is not None and s.plain and s.text in _TRUE + _FALSE:
            return s.text in _TRUE
        if s is not None:
            out.add(node.line, f"{where} must be true or false, not {_what(s)}")
        return None

    def name(self):
        return "true | false"


@dataclass
class Choice(Type):
    choices: tuple = ()

    def value(self, node, where, loc, out):
        s = self.scalar(node, where, out, "one of " + ", ".join(self.choices))
        if s is not None and s.text not in self.choices:
            out.add(node.line, f"{where} must be one of {', '.join(self.choices)}, not {_what(s)}")
            return None
        return None if s is None else s.text

    def name(self):
        return self._or_null(" | ".join(self.choices))


@dataclass
class ListOf(Type):
    item: Type = None
    single: bool = False     # a lone scalar reads as a list of one

    def value(self, node, where, loc, out):
        if self.single and isinstance(node, Scalar):
            node = Seq([node], node.line)
        if not isinstance(node, Seq):
            out.add(node.line, f"{where} must be a list, not {_what(node)}")
            return None
        return [self.item.check(n, where, loc + (i,), out) for i, n in enumerate(node.items)]

    def name(self):
        return self._or_null(f"list of {self.item.name()}" + (" (or one)" if self.single else ""))


@dataclass
class MapOf(Type):
    """A mapping from keys of one type (names, levels) to values of one type."""
    key: Type = None
    item: Type = None
    key_doc: str = "key"
    label: str = "{where} {key}"     # how problems inside an entry name it

    def value(self, node, where, loc, out):
        pairs = _pairs(node, where, out)
        if pairs is None:
            return None
        result = {}
        for k, v in pairs:
            # a key is read from its text whatever its quoting: JSON quotes every key
            key = self.key.value(k, f"{where}: {self.key_doc}", loc, out)
            if key is not None:
                out.lines[loc + (key, "key")] = k.line
                shown = str(key) if isinstance(key, int) else _shown(k.text)
                result[key] = self.item.check(v, self.label.format(where=where, key=shown), loc + (key,), out)
        return result

    def name(self):
        return self._or_null(f"mapping of {self.key_doc} to {self.item.name()}")


@dataclass
class Key:
    type: Type
    required: bool = False


@dataclass
class Record(Type):
    """A mapping with fixed keys; unknown keys are refused, naming the allowed ones."""
    keys: dict = field(default_factory=dict)
    label: tuple = ()      # (key, format): problems name the record by that key's text

    def value(self, node, where, loc, out):
        pairs = _pairs(node, where, out)
        if pairs is None:
            return None
        if self.label:
            named = [v.text for k, v in pairs if k.text == self.label[0] and isinstance(v, Scalar)]
            if named:
                where = self.label[1].format(_shown(named[0]))
        at = f"{where}: " if where else ""
        result = {}
        for k, v in pairs:
            if k.text not in self.keys:
                near = difflib.get_close_matches(k.text, list(self.keys), n=1)
                out.add(k.line, f"{at}unknown key {_shown(k.text)}"
                                f"{f' (did you mean {near[0]!r}?)' if near else ''}; allowed: {', '.join(self.keys)}")
            else:
                result[k.text] = self.keys[k.text].type.check(v, f"{at}{k.text}", loc + (k.text,), out)
        for key, spec in self.keys.items():
            if spec.required and key not in result:
                out.add(node.line, f"{at}'{key}' is required")
        return result

    def name(self):
        return "mapping"


@dataclass
class Hierarchy(Type):
    """`file.csv`, or {file: ..., sep: ...}, or {builder: ..., params: {...}}."""

    def value(self, node, where, loc, out):
        if isinstance(node, Scalar):
            node = Map([(Scalar("file", True, node.line), node)], node.line)
        h = HIERARCHY.check(node, where, loc, out)
        if h is None:
            return None
        if ("file" in h) == ("builder" in h):
            out.add(node.line, f"{where} needs exactly one of 'file' or 'builder'")
            return None
        if "file" in h:
            if "params" in h:
                out.add(node.line, f"{where}: 'params' goes with 'builder', not 'file'")
            return {"file": h["file"], "sep": h.get("sep") or ";"}
        if "sep" in h:
            out.add(node.line, f"{where}: 'sep' goes with 'file', not 'builder'")
        return {"builder": h["builder"], "params": h.get("params") or {}}

    def name(self):
        return "CSV path, or {file, sep}, or {builder, params}"


# --- the declaration file ----------------------------------------------------------------------

ATTRIBUTE = Record(label=("column", "attribute {}"), keys={
    "column": Key(Text(doc="the column's name in the source table"), required=True),
    "role": Key(Choice(choices=ROLES, doc="what the column is (the key column has none)"), required=True),
    "kind": Key(Choice(choices=KINDS, nullable=True,
                       doc="quasi and sensitive columns; inferred from the column's type when absent")),
    "default_level": Key(Int(nullable=True, doc="sensitive columns: the security level of the values "
                             "security_levels does not list; absent: the highest level of level_l")),
})

HIERARCHY = Record(keys={
    "file": Key(Text(doc="ARX-style CSV, one row per leaf, leaf to root; relative to the declaration file")),
    "sep": Key(Text(doc="the CSV's separator (default ;)")),
    "builder": Key(Text(doc="a builder of pganon.build_hierarchy (intervals, dates, redaction, ...)")),
    "params": Key(MapOf(key=Text(), item=Type(), key_doc="parameter", doc="the builder's parameters")),
})

SEMANTIC_RULE = Record(label=("id", "semantic rule {}"), keys={
    "id": Key(Value(doc="the rule's name"), required=True),
    "column": Key(Text(doc="a sensitive attribute"), required=True),
    "predicate": Key(Choice(choices=PREDICATES), required=True),
    "values": Key(ListOf(item=Value(), single=True, doc="values of the column, text as written"), required=True),
    "category": Key(Text(doc="what a class whose records all satisfy the rule reveals"), required=True),
})

#: The declaration file, written down once: every key, its type and meaning. `pganon apply`
#: checks a file against it before writing anything; `describe()` prints it for the docs.
SCHEMA = Record(keys={
    "dataset": Key(Text(doc="the dataset's name (1 to 55 bytes)"), required=True),
    "source": Key(Text(doc="the table or view published from (`pganon apply --source` overrides it)"),
                  required=True),
    "key_column": Key(Text(doc="a unique column, never published"), required=True),
    "person_column": Key(Text(nullable=True, doc="the column naming the person a row belongs to")),
    "force": Key(Bool(doc="accept security levels for values the column does not hold (yet), e.g. a "
                          "file listing a whole domain applied to a sample; default false")),
    "attributes": Key(ListOf(item=ATTRIBUTE, doc="the columns' roles; sensitive ones are used in this order")),
    "security_levels": Key(MapOf(
        key=Text(), key_doc="sensitive attribute", label="sensitive attribute {key}",
        item=MapOf(key=Int(), key_doc="level", label="{where}: level {key}",
                   item=ListOf(item=Value(), single=True, nullable=True)),
        doc="per sensitive attribute: level -> the values at that level (values not listed get default_level)")),
    "level_l": Key(MapOf(key=Int(), key_doc="level", label="level_l: level {key}: l", item=Int(minimum=1),
                         doc="the l of each security level; default {0: 1, 1: 2, 2: 3}")),
    "dependencies": Key(MapOf(key=Text(), key_doc="sensitive attribute", item=ListOf(item=Text(), single=True),
                              label="dependencies: {key}", doc="the sensitive attributes that identify each one")),
    "external_factor": Key(MapOf(key=Text(), key_doc="sensitive attribute", item=Number(nullable=True),
                                 label="external_factor: {key}", doc="chi per sensitive attribute (null removes it)")),
    "delta": Key(Text(nullable=True, doc="the sensitive attribute that links buckets")),
    "zeta": Key(ListOf(item=Text(), nullable=True, doc="the sensitive attributes the relaxed condition ignores")),
    "hierarchies": Key(MapOf(key=Text(), key_doc="column", item=Hierarchy(), label="hierarchies: {key}",
                             doc="generalization hierarchy per column")),
    "semantic_rules": Key(ListOf(item=SEMANTIC_RULE, doc="rules for method semantic")),
    "policy": Key(MapOf(key=Text(), key_doc="risk measure", item=Number(nullable=True), label="policy: {key}",
                        doc="risk thresholds pganon.promote enforces (numbers in [0, 1], or null)")),
})


def describe(record: Record = SCHEMA, indent: str = "") -> str:
    """The schema as a Markdown list (for docs and `pganon apply --help`)."""
    lines = []
    for key, spec in record.keys.items():
        t = spec.type
        lines.append(f"{indent}- `{key}`{' (required)' if spec.required else ''}: {t.name()}"
                     f"{' — ' + t.doc if t.doc else ''}")
        inner = t.item if isinstance(t, ListOf) else None
        if isinstance(inner, Record):
            lines.append(describe(inner, indent + "  "))
    return "\n".join(lines)


def _cross_checks(spec: dict, out: _Problems) -> None:
    """What one key says about another: roles, levels with an l, names and values given twice."""
    line = out.lines.get
    attrs = [(i, a) for i, a in enumerate(spec.get("attributes") or []) if a]
    roles, first = {}, {}
    for i, a in attrs:
        col, at = a.get("column"), line(("attributes", i))
        if col in first:
            out.add(at, f"attribute {_shown(col)} is declared twice (first on line {first[col]})")
        first.setdefault(col, at)
        roles[col] = a.get("role")
        if col is not None and col == spec.get("key_column"):
            out.add(at, f"attribute {_shown(col)} is the key column, which has no role")
    level_l = spec.get("level_l") or DEFAULT_LEVEL_L
    with_l = f"levels with an l: {', '.join(map(str, sorted(level_l)))}"
    for i, a in attrs:
        dl, at = a.get("default_level"), line(("attributes", i, "default_level"))
        if dl is not None and a.get("role") != "sensitive":
            out.add(at, f"attribute {_shown(a['column'])}: default_level is for sensitive attributes only")
        elif dl is not None and dl not in level_l:
            out.add(at, f"sensitive attribute {_shown(a['column'])}: default_level {dl} has no l "
                        f"({with_l}; add it to level_l)", "PA003")

    def sensitive(col, at, what):
        if "attributes" in spec and col is not None and roles.get(col) != "sensitive":
            out.add(at, f"{what} {_shown(col)} is not declared a sensitive attribute in 'attributes'")

    for section in ("security_levels", "dependencies", "external_factor"):
        for col, by in (spec.get(section) or {}).items():
            sensitive(col, line((section, col, "key")), f"{section}:")
            if section == "dependencies":
                for j, other in enumerate(by or []):
                    sensitive(other, line((section, col, j)), f"dependencies: {_shown(col)}: identified by")
    for col, by_level in (spec.get("security_levels") or {}).items():
        seen = {}
        for level, values in (by_level or {}).items():
            if level not in level_l:
                out.add(line(("security_levels", col, level, "key")),
                        f"sensitive attribute {_shown(col)}: level {level} has no l ({with_l}; add it to level_l)",
                        "PA003")
            for j, v in enumerate(values or []):
                at = line(("security_levels", col, level, j))
                if v in seen:
                    out.add(at, f"sensitive attribute {_shown(col)}: value {_shown(v)} is listed twice "
                                f"(first on line {seen[v]})")
                seen.setdefault(v, at)
    if spec.get("delta") is not None:
        sensitive(spec["delta"], line(("delta",)), "delta:")
    for j, col in enumerate(spec.get("zeta") or []):
        sensitive(col, line(("zeta", j)), "zeta:")
    ids = {}
    for i, r in enumerate(spec.get("semantic_rules") or []):
        if not r:
            continue
        at = line(("semantic_rules", i))
        if r.get("id") in ids:
            out.add(at, f"semantic rule {_shown(r['id'])} is declared twice (first on line {ids[r['id']]})")
        ids.setdefault(r.get("id"), at)
        sensitive(r.get("column"), line(("semantic_rules", i, "column")),
                  f"semantic rule {_shown(r.get('id') or '?')}: column")
    for col, h in (spec.get("hierarchies") or {}).items():
        if h and h.get("file") is not None and not (out.path.parent / h["file"]).is_file():
            out.add(line(("hierarchies", col)), f"hierarchies: {_shown(col)}: no file {out.path.parent / h['file']}")


def read(path: str | Path) -> dict:
    """The declaration in `path` (YAML, or JSON when it ends in .json), checked against SCHEMA.
    Raises PganonError (PA002) naming every problem with its line, or returns plain data: values
    as text, levels and l as int, chi and policy thresholds as Decimal."""
    return read_located(path)[0]


def read_located(path: str | Path) -> tuple[dict, dict]:
    """`read`, and the line of every entry by its location, e.g. ("security_levels", "disease",
    2, 0) for the first value at level 2 (None where the parser gives no lines)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise PganonError(f"cannot read {path}: {exc.strerror}", sqlstate="PA001") from None
    except UnicodeDecodeError as exc:
        raise PganonError(f"{path} is not UTF-8 text (byte {exc.start})", sqlstate="PA002") from None
    tree = parse(path, text)
    out = _Problems(path)
    if not isinstance(tree, Map):
        out.add(tree.line, f"expected a mapping (dataset: ..., source: ...) at the top level, not {_what(tree)}")
        out.raise_if_any()
    spec = SCHEMA.check(tree, "", (), out) or {}
    _cross_checks(spec, out)
    out.raise_if_any()
    return spec, out.lines
