"""The wheel works on its own: built from the source tree, installed into a fresh venv and run from
outside the checkout, `pganon install` installs into a database, publishes, promotes and verifies.

"Why": `pip install .` gave a package without `sql/` and `migrations/` (its `pganon install` ended
in an Alembic traceback), and its embedded server's home landed inside site-packages.

The wheel's dependencies come from a wheelhouse in the pganon cache ($PGANON_CACHE or
~/.cache/pganon, `wheelhouse/`), filled from PyPI the first time (about 40 MB: numpy, pandas ...);
later runs install offline, in seconds.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import psycopg
import pytest

from pganon import datasets, resource_dir, source_checkout

ROOT = source_checkout()
BUILD_INPUTS = ("pyproject.toml", "README.md", "MANIFEST.in", "pganon", "plpython", "sql", "migrations")
JUNK = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", ".pytest_cache")
PIP = [sys.executable, "-m", "pip", "--disable-pip-version-check"]


def _run(cmd: list, env: dict | None = None, **kw) -> subprocess.CompletedProcess:
    """`cmd` in a user's environment (pip too: a PYTHONPATH into the checkout would make pip take
    the checkout's pganon as already installed)."""
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=600,
                          env=env or _outside_env(), **kw)


def _ok(r: subprocess.CompletedProcess, what: str) -> subprocess.CompletedProcess:
    assert r.returncode == 0, f"{what} exited {r.returncode}:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    return r


@pytest.fixture(scope="module")
def work():
    """A scratch directory in /var/tmp (a venv is ~200 MB: removed at the end), readable by the
    cluster owner, so that `server status` of the installed package can look at a home in it."""
    d = Path(tempfile.mkdtemp(prefix="pganon-wheel-", dir="/var/tmp"))
    d.chmod(0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="module")
def wheel(work) -> Path:
    """The wheel pip builds from a copy of the build inputs (the checkout stays untouched)."""
    assert ROOT is not None, "this test builds the wheel from a source checkout"
    src = work / "src"
    src.mkdir()
    for name in BUILD_INPUTS:
        (shutil.copytree(ROOT / name, src / name, ignore=JUNK) if (ROOT / name).is_dir()
         else shutil.copy2(ROOT / name, src / name))
    _ok(_run(PIP + ["wheel", "--quiet", "--no-deps", "--wheel-dir", work / "dist", src]), "pip wheel")
    (built,) = (work / "dist").glob("pganon-*.whl")
    return built


@pytest.fixture(scope="module")
def venv(work, wheel) -> Path:
    """A fresh venv (no system site-packages, nothing of the checkout) with the wheel installed."""
    env = work / "venv"
    _ok(_run([sys.executable, "-m", "venv", "--without-pip", env]), "venv")
    house = datasets.fetch._cache_root(None) / "wheelhouse"
    install = PIP + ["--python", env / "bin" / "python", "install", "--quiet", "--no-compile", "--no-index",
                     "--find-links", house, wheel]
    if _run(install).returncode != 0:    # first run, or the dependencies changed: fetch them once
        house.mkdir(parents=True, exist_ok=True)
        _ok(_run(PIP + ["download", "--quiet", "--dest", house, wheel]), "pip download (PyPI) of the dependencies")
        for own in house.glob("pganon-*.whl"):
            own.unlink()
        _ok(_run(install), "pip install of the wheel")
    return env


def _outside_env(**extra) -> dict:
    """The environment of a user's shell: nothing pointing at the checkout or its server."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PGANON_DSN", "PGANON_HOME", "VIRTUAL_ENV")}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if not p.startswith(str(ROOT)))
    return {**env, **extra}


def test_the_wheel_carries_the_engine_sql_and_migrations(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    want = {f"pganon/sql/{p.relative_to(ROOT / 'sql').as_posix()}" for p in (ROOT / "sql").rglob("*.sql")}
    want |= {f"pganon/migrations/versions/{p.name}" for p in (ROOT / "migrations" / "versions").glob("*.py")}
    want |= {"pganon/migrations/env.py", "pganon/migrations/script.py.mako", "pganon/data/table1.csv"}
    want |= {f"pganon_engine/{p.relative_to(ROOT / 'plpython' / 'pganon_engine')}"
             for p in (ROOT / "plpython" / "pganon_engine").rglob("*.py")}
    assert len(want) > 60 and want <= names, sorted(want - names)
    assert not [n for n in names if "__pycache__" in n or n.startswith(("tests/", "benchmarks/", "sql/"))]


def test_installed_wheel_installs_publishes_and_verifies_from_outside_the_checkout(venv, work, make_db):
    dsn = make_db("wheel")
    cwd = work / "elsewhere"
    cwd.mkdir()
    env = _outside_env()
    where = _ok(_run([venv / "bin" / "python", "-c",
                      "import json, pganon, pganon_engine, pganon.install as i; print(json.dumps(["
                      "pganon.__file__, pganon_engine.__file__, str(pganon.resource_dir('sql')), "
                      "str(pganon.resource_dir('migrations')), str(i.ENGINE_DIR), pganon.source_checkout()]))"],
                     cwd=cwd, env=env), "import from the venv")
    *paths, checkout = json.loads(where.stdout)
    site = venv.resolve() / "lib"
    assert checkout is None and all(Path(p).resolve().is_relative_to(site) for p in paths), paths
    assert not any(Path(p).resolve().is_relative_to(ROOT) for p in paths)

    pganon = venv / "bin" / "pganon"
    steps = [("install",), ("dataset", "load", "table1"), ("publish", "table1", "mbf_mslf", "--promote"),
             ("verify", "table1")]
    out = {s[0]: _ok(_run([pganon, *s, "--dsn", dsn], cwd=cwd, env=env), f"pganon {' '.join(s)}") for s in steps}
    assert "Traceback" not in "".join(r.stderr for r in out.values())

    heads = sorted(p.name.split("_")[0] for p in (resource_dir("migrations") / "versions").glob("0*.py"))
    with psycopg.connect(dsn) as c:
        assert c.execute("SELECT version_num FROM pganon.alembic_version").fetchone()[0] == heads[-1]
        assert c.execute("SELECT count(*) FROM pganon._engine_module").fetchone()[0] == \
            len(list((ROOT / "plpython" / "pganon_engine").rglob("*.py")))
        release, method = c.execute("SELECT r.id, r.method FROM pganon.release r JOIN pganon.dataset d "
                                    "ON d.id = r.dataset_id WHERE d.name = 'table1' AND r.status = 'current'").fetchone()
        checks = c.execute('SELECT "check", passed FROM pganon.verify(%s)', (release,)).fetchall()
        assert method == "mbf_mslf" and checks and all(passed for _, passed in checks), checks
        assert c.execute("SELECT count(*) FROM pganon_release.table1_gt").fetchone()[0] == 9


def test_installed_server_home_is_outside_site_packages(venv, work):
    data = work / "xdg-data"
    data.mkdir()
    data.chmod(0o755)
    env = _outside_env(XDG_DATA_HOME=str(data))
    r = _ok(_run([venv / "bin" / "python", "-c", "from pganon import server; print(server.default_server().home)"],
                 cwd=work, env=env), "default_server")
    assert Path(r.stdout.strip()) == data / "pganon"
    status = _ok(_run([venv / "bin" / "pganon", "server", "status"], cwd=work, env=env), "pganon server status")
    assert str(data / "pganon") in status.stdout and str(venv) not in status.stdout
    env["PGANON_HOME"] = str(work / "own-home")
    r = _ok(_run([venv / "bin" / "python", "-c", "from pganon import server; print(server.default_server().home)"],
                 cwd=work, env=env), "default_server with PGANON_HOME")
    assert Path(r.stdout.strip()) == work / "own-home"
