"""Files with one job (issue 14): no source file over LIMIT lines unless its opening says why
("long because ..."), so a module that grows a second job is split, not scrolled."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 700
FOLDERS = ["pganon", "plpython", "sql", "migrations", "tests", "benchmarks", "scripts"]


def test_no_source_file_over_the_limit_without_a_reason():
    long = []
    for folder in FOLDERS:
        for path in sorted((ROOT / folder).rglob("*")):
            if path.suffix not in (".py", ".sql") or "fixtures" in path.parts or "__pycache__" in path.parts:
                continue
            lines = path.read_text(encoding="utf-8").splitlines()
            if len(lines) > LIMIT and "long because" not in "\n".join(lines[:40]):
                long.append(f"{path.relative_to(ROOT)}: {len(lines)} lines")
    assert not long, "split these by responsibility, or say in their opening why they are long:\n" + "\n".join(long)
