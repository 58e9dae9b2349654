"""The repository is self-contained: no file of it reads anything beside the clone. Two tests once
read the design notes' spec files beside the clone, so `make test` failed in a plain clone; the
facts they need are data in tests/fixtures/ now, and this scan keeps any new reference out."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SKIP_DIRS = {".git", ".venv", ".pganon", "__pycache__", ".pytest_cache", ".hypothesis", "build", "dist"}

# Built from pieces so that this file does not match itself.
OUTSIDE = [
    (re.compile(r"\.\./" + "shared" + r"""(?:/|['"])"""), "a path into ../" + "shared"),
    (re.compile(r"""['"]""" + "shared" + r"""['"]\s*/\s*['"]spec"""), "a path into " + "shared/spec"),
    (re.compile(r"(?<![\w.~-])/" + "work" + r"(?:/|\b)"), "an absolute /" + "work path"),
]
PARENTS = re.compile(r"Path\(__file__\)(?:\.resolve\(\))?\.parents\[(\d+)\]")
PARENT_CHAIN = re.compile(r"Path\(__file__\)(?:\.resolve\(\))?((?:\.parent\b)+)")


def _files() -> list[Path]:
    """The files of the repository: git's list (tracked and new, not ignored) when git is there,
    else every file outside the ignored directories (a copy without .git)."""
    try:
        out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                             cwd=ROOT, capture_output=True, text=True, check=True, timeout=60).stdout
        return [ROOT / p for p in out.split("\0") if p and (ROOT / p).is_file()]
    except (OSError, subprocess.CalledProcessError):
        found = []
        for d, dirs, names in os.walk(ROOT):
            dirs[:] = [x for x in dirs if x not in SKIP_DIRS and not x.endswith(".egg-info")]
            found += [Path(d) / n for n in names]
        return found


def references_outside(rel: Path, text: str) -> list[str]:
    """What in `text` (the file at `rel` in the repository) points outside the repository."""
    found = [f"{why}: {m.group(0)!r}" for pattern, why in OUTSIDE for m in pattern.finditer(text)]
    if rel.suffix == ".py":
        depth = len(rel.parts)  # parents[depth - 1] is the repository's root
        found += [f"Path(__file__).parents[{m.group(1)}] leaves the repository"
                  for m in PARENTS.finditer(text) if int(m.group(1)) >= depth]
        found += [f"Path(__file__){m.group(1)} leaves the repository"
                  for m in PARENT_CHAIN.finditer(text) if m.group(1).count(".parent") > depth]
    return found


def test_no_file_refers_outside_the_repository():
    files = _files()
    assert len(files) > 100 and ROOT / "pyproject.toml" in files   # the scan sees the repository
    bad = []
    for path in files:
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue   # binary
        rel = path.relative_to(ROOT)
        bad += [f"{rel}: {what}" for what in references_outside(rel, text)]
    assert not bad, "files that read outside the repository (copy the facts into tests/fixtures/):\n" + \
        "\n".join(bad)


def test_the_scan_catches_each_shape():
    """The shapes that broke a plain clone, and near misses that must pass."""
    test_file = Path("tests/unit/test_x.py")
    spec, up = "shared", "Path(__file__)"   # pieces, so that this file does not match itself
    for text in (f'SPEC = {up}.resolve().parents[3] / "other" / "000.md"',
                 f'SPEC = ROOT / "{spec}" / "spec" / "000.md"',
                 f"open('../{spec}/spec/000-lsl-diversity.md')",
                 f'Path("../{spec}")',
                 "cat /" + "work/shared/DESIGN.md",
                 f"ROOT = {up}.parent.parent.parent.parent"):
        assert references_outside(test_file, text), text
    for text in ('ROOT = Path(__file__).resolve().parents[2]', "https://example.org/" + "work/x",
                 f"a clone has no ../{spec}: the papers are cited", "shared_buffers = 256MB",
                 "tests/fixtures/adult_counts.json"):
        assert not references_outside(test_file, text), text
    assert references_outside(Path("bench.py"), f"{up}.resolve().parents[1]")
