"""The wheel ships every package: pyproject.toml lists packages by name (the engine lives outside
the admin package's folder), so a new subpackage missing from that list would be left out of
the wheel while the editable checkout hides it. The wheel test proves it end to end, slowly;
this catches the omission at once."""

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_every_python_package_is_listed_in_pyproject():
    conf = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    listed = set(conf["packages"])
    dirs = {name: ROOT / path for name, path in conf["package-dir"].items()}
    found = set()
    for top in ("pganon", "pganon_engine"):
        base = dirs[top]
        for init in base.rglob("__init__.py"):
            if "__pycache__" in init.parts:
                continue
            rel = init.parent.relative_to(base)
            found.add(".".join((top, *rel.parts)))
    missing = sorted(found - listed)
    assert not missing, f"add to [tool.setuptools] packages in pyproject.toml: {missing}"
