"""The engine's layers (docs/architecture.md): a module imports only its own layer or lower ones,
and the method families form no cycle. A move that breaks the map fails here, not in review."""

import ast
from pathlib import Path

import pganon_engine

ENGINE = Path(pganon_engine.__file__).resolve().parent
LAYERS = ["core", "hierarchy", "models", "metrics", "methods", "risk", "release"]


def _modules():
    for path in sorted(ENGINE.rglob("*.py")):
        rel = path.relative_to(ENGINE.parent).with_suffix("")
        parts = list(rel.parts)
        is_pkg = parts[-1] == "__init__"
        yield path, ".".join(parts[:-1] if is_pkg else parts), is_pkg


def _imports(path, name, is_pkg):
    """Every pganon_engine module or package `path` imports, at any depth of the file."""
    package = name if is_pkg else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names if a.name.split(".")[0] == "pganon_engine")
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                mod = f"{base}.{node.module}" if node.module else base
            else:
                mod = node.module or ""
            if mod.split(".")[0] == "pganon_engine":
                yield mod
                yield from (f"{mod}.{a.name}" for a in node.names)


def _layer(dotted):
    parts = dotted.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in LAYERS else None


def test_the_top_level_is_the_map():
    entries = sorted(p.name for p in ENGINE.iterdir() if p.name != "__pycache__")
    assert entries == sorted(["__init__.py", *LAYERS])


def test_every_package_says_what_lives_there():
    for path, name, is_pkg in _modules():
        if is_pkg:
            doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
            assert doc and len(doc) > 60, f"{name}/__init__.py needs a docstring saying what lives there"


def test_no_layer_imports_a_higher_one():
    bad = []
    for path, name, is_pkg in _modules():
        own = _layer(name)
        if own is None:
            continue
        for target in _imports(path, name, is_pkg):
            other = _layer(target)
            if other is not None and LAYERS.index(other) > LAYERS.index(own):
                bad.append(f"{name} ({own}) imports {target} ({other})")
    assert not bad, "\n".join(bad)


def test_method_families_form_no_cycle():
    edges = {}
    for path, name, is_pkg in _modules():
        parts = name.split(".")
        if len(parts) < 3 or parts[1] != "methods":
            continue
        for target in _imports(path, name, is_pkg):
            t = target.split(".")
            if len(t) >= 3 and t[1] == "methods" and t[2] != parts[2]:
                edges.setdefault(parts[2], set()).add(t[2])
    seen, stack = set(), []

    def visit(node):
        assert node not in stack, f"method families import each other in a cycle: {stack + [node]}"
        if node in seen:
            return
        stack.append(node)
        for nxt in edges.get(node, ()):
            visit(nxt)
        stack.pop()
        seen.add(node)

    for node in list(edges):
        visit(node)
