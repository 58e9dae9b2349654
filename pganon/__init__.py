"""pganon: the admin package. Installs the in-database engine, manages the catalog and releases."""

from __future__ import annotations

from pathlib import Path

__version__ = "0.1.0"

RESOURCES = ("sql", "migrations")


def source_checkout() -> Path | None:
    """The source checkout this package runs from (an editable install, or PYTHONPATH), or None
    when it is installed from a wheel: there `sql/` and `migrations/` are inside the package, and
    nothing beside site-packages is ours to write (the embedded server's home goes elsewhere)."""
    root = Path(__file__).resolve().parent.parent
    if (root / "pyproject.toml").is_file() and all((root / name).is_dir() for name in RESOURCES):
        return root
    return None


def resource_dir(name: str) -> Path:
    """Where `sql/` or `migrations/` is: at the top of a source checkout, else inside the installed
    package (the wheel maps both there, pyproject.toml). The one lookup of install and Alembic."""
    if name not in RESOURCES:
        raise ValueError(f"unknown resource {name!r}: one of {', '.join(RESOURCES)}")
    root = source_checkout()
    found = (root or Path(__file__).resolve().parent) / name
    if not found.is_dir():
        from .errors import PganonError
        raise PganonError(f"pganon's {name}/ directory is missing: it is not at {found}",
                          hint="reinstall pganon (pip install --force-reinstall pganon-*.whl); "
                               "a wheel must carry sql/ and migrations/ inside the package")
    return found
