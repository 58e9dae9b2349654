"""The embedded default server: a local PostgreSQL 15 cluster in a project-local directory.

`pganon server start` makes a cluster under `.pganon/` (or `$PGANON_HOME`), listening on
127.0.0.1 only, and creates the `pganon` database with plpython3u. initdb refuses to run as
root, so when we are root the cluster belongs to the `postgres` OS user and every server command
runs through `runuser`. Trust authentication is safe here only because the cluster listens on
loopback and its socket directory is private to the cluster owner.
"""

from __future__ import annotations

import hashlib
import os
import pwd
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from .errors import PganonError

PG_BIN = Path(os.environ.get("PGANON_PG_BIN", "/usr/lib/postgresql/15/bin"))
DEFAULT_PORT = 54329
DEFAULT_DB = "pganon"
SUPERUSER = "postgres"


@dataclass(frozen=True)
class LocalServer:
    home: Path
    port: int = DEFAULT_PORT

    @property
    def data_dir(self) -> Path:
        return self.home / "pgdata"

    @property
    def socket_dir(self) -> Path:
        return self.home / "run"

    @property
    def log_file(self) -> Path:
        return self.home / "server.log"

    def dsn(self, dbname: str = DEFAULT_DB) -> str:
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/{dbname}"


def default_server() -> LocalServer:
    """`$PGANON_HOME`, else `.pganon/` in the project, else (when the cluster owner cannot reach
    the project, e.g. a checkout inside a 0700 directory) a per-project directory in /var/tmp."""
    port = int(os.environ.get("PGANON_PORT", DEFAULT_PORT))
    if os.environ.get("PGANON_HOME"):
        return LocalServer(home=Path(os.environ["PGANON_HOME"]).resolve(), port=port)
    project = Path(__file__).resolve().parents[1]
    home = project / ".pganon"
    if not _owner_can_reach(project):
        digest = hashlib.sha1(str(project).encode()).hexdigest()[:12]
        home = Path("/var/tmp") / f"pganon-{digest}"
    return LocalServer(home=home, port=port)


def _owner_can_reach(directory: Path) -> bool:
    owner = _owner()
    if owner is None:
        return True
    res = subprocess.run(["runuser", "-u", owner, "--", "test", "-x", str(directory)], capture_output=True)
    return res.returncode == 0


def _owner() -> str | None:
    """The OS user that owns the cluster: `postgres` when we are root, else ourselves (None)."""
    return SUPERUSER if os.geteuid() == 0 else None


def _run(args: list[str], check: bool = True, **kw) -> subprocess.CompletedProcess:
    owner = _owner()
    cmd = (["runuser", "-u", owner, "--"] if owner else []) + args
    try:
        return subprocess.run(cmd, check=check, capture_output=True, text=True, **kw)
    except FileNotFoundError as exc:
        raise PganonError(f"cannot run {args[0]}", hint="run scripts/setup.sh to install PostgreSQL 15") from exc
    except subprocess.CalledProcessError as exc:
        raise PganonError(f"{Path(args[0]).name} failed: {(exc.stderr or exc.stdout).strip()}") from exc


def _prepare_dirs(srv: LocalServer) -> None:
    srv.home.mkdir(parents=True, exist_ok=True)
    owner = _owner()
    for d in (srv.home, srv.socket_dir):
        d.mkdir(parents=True, exist_ok=True)
        if owner:
            shutil.chown(d, user=owner, group=pwd.getpwnam(owner).pw_gid)
    if owner:  # the owner must be able to reach its directory through every parent
        for parent in srv.home.parents:
            if not os.access(parent, os.X_OK):
                raise PganonError(f"{parent} is not searchable by {owner}", hint="use PGANON_HOME elsewhere")


def is_running(srv: LocalServer) -> bool:
    if not (srv.data_dir / "PG_VERSION").exists():
        return False
    res = _run([str(PG_BIN / "pg_ctl"), "status", "-D", str(srv.data_dir)], check=False)
    return res.returncode == 0


def status(srv: LocalServer | None = None) -> dict:
    srv = srv or default_server()
    return {
        "home": str(srv.home),
        "initialized": (srv.data_dir / "PG_VERSION").exists(),
        "running": is_running(srv),
        "dsn": srv.dsn(),
    }


def start(srv: LocalServer | None = None, dbname: str = DEFAULT_DB) -> str:
    """Initialize (once), start (if stopped) and return the DSN of the local server's database."""
    srv = srv or default_server()
    if not (PG_BIN / "initdb").exists():
        raise PganonError(f"PostgreSQL 15 is not installed in {PG_BIN}", hint="run scripts/setup.sh")
    if not is_running(srv) and _port_taken(srv.port):   # refuse before creating anything
        raise PganonError(f"port {srv.port} is already used by another server",
                          hint="stop it, or choose another port with PGANON_PORT")
    _prepare_dirs(srv)
    if not (srv.data_dir / "PG_VERSION").exists():
        _run([str(PG_BIN / "initdb"), "-D", str(srv.data_dir), "-U", SUPERUSER, "--auth=trust",
              "-E", "UTF8", "--locale=C.UTF-8"])
    if not is_running(srv):
        opts = (f"-p {srv.port} -k {srv.socket_dir} -c listen_addresses=127.0.0.1 "
                "-c shared_buffers=256MB -c work_mem=64MB -c maintenance_work_mem=256MB "
                "-c max_wal_size=4GB -c fsync=off -c synchronous_commit=off -c full_page_writes=off")
        _run([str(PG_BIN / "pg_ctl"), "start", "-w", "-t", "60", "-D", str(srv.data_dir),
              "-l", str(srv.log_file), "-o", opts])
    _wait_ready(srv)
    _ensure_database(srv, dbname)
    return srv.dsn(dbname)


def stop(srv: LocalServer | None = None) -> bool:
    srv = srv or default_server()
    if not is_running(srv):
        return False
    _run([str(PG_BIN / "pg_ctl"), "stop", "-w", "-m", "fast", "-D", str(srv.data_dir)])
    return True


def _port_taken(port: int) -> bool:
    import socket
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


def _wait_ready(srv: LocalServer, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        res = subprocess.run([str(PG_BIN / "pg_isready"), "-h", "127.0.0.1", "-p", str(srv.port)],
                             capture_output=True)
        if res.returncode == 0:
            return
        time.sleep(0.2)
    raise PganonError(f"the local server did not accept connections within {timeout:.0f}s",
                      hint=f"see {srv.log_file}")


def _ensure_database(srv: LocalServer, dbname: str) -> None:
    import psycopg
    from psycopg import sql

    with psycopg.connect(srv.dsn("postgres"), autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (dbname,)).fetchone()
        if not exists:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(dbname)))
