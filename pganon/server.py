"""The embedded default server: a local PostgreSQL 15 cluster in a directory of pganon's own.

`pganon server start` makes a cluster in its home (`default_server`: `$PGANON_HOME`, else `.pganon/`
in a source checkout, else `~/.local/share/pganon` when installed from a wheel), listening on
127.0.0.1 only, and creates the `pganon` database with plpython3u. initdb refuses to run as
root, so when we are root the cluster belongs to the `postgres` OS user and every server command
runs through `runuser`.

Closed: every connection, TCP or unix socket, needs the superuser's password (scram-sha-256), so
another OS user on the machine cannot connect. The password is generated at initdb and kept only
in `<home>/passfile` (libpq's pgpass format, mode 0600, owned by the user who runs pganon);
`LocalServer.dsn()` names that file with libpq's `passfile` parameter, so the password is never
printed. A cluster made by an earlier pganon (trust authentication) gets a password and this
module's pg_hba.conf on its next `start()`, and `start()` checks that a connection without the
password is refused before it returns.

Durable: PostgreSQL's own settings (fsync, synchronous_commit and full_page_writes on), so a
committed transaction survives a crash. Fast mode, `PGANON_SERVER_FAST=1` in the environment of
the process that starts the server (tests/conftest.py sets it), turns the three off: tests only:
may lose the last transactions on a crash (and an OS crash can corrupt the cluster). The
settings go on that start's command line, never into postgresql.conf, and a normal `start()` of a
server running in fast mode restarts it durable.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import pwd
import secrets
import shlex
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from . import source_checkout
from .errors import PganonError

PG_BIN = Path(os.environ.get("PGANON_PG_BIN", "/usr/lib/postgresql/15/bin"))
DEFAULT_PORT = 54329
DEFAULT_DB = "pganon"
SUPERUSER = "postgres"
FAST_ENV = "PGANON_SERVER_FAST"
DURABILITY = ("fsync", "synchronous_commit", "full_page_writes")

# The whole pg_hba.conf of the cluster: any other content (trust from an earlier pganon, an edit)
# is replaced at the next start, after the superuser has its password.
HBA = """\
# Written by pganon (pganon/server.py) at every `pganon server start`: edits are replaced.
# Every connection needs a password; the superuser's is in the passfile next to pgdata/.
# TYPE  DATABASE     USER  ADDRESS       METHOD
local   all          all                 scram-sha-256
host    all          all   127.0.0.1/32  scram-sha-256
host    all          all   ::1/128       scram-sha-256
local   replication  all                 scram-sha-256
host    replication  all   127.0.0.1/32  scram-sha-256
"""
# What a cluster of an earlier pganon starts with while it gets its password: only the superuser,
# only through the socket, whose directory only the cluster owner (and root) can enter.
MIGRATION_HBA = "# pganon: closing this cluster (see pganon/server.py)\nlocal all postgres trust\n"


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

    @property
    def passfile(self) -> Path:
        return self.home / "passfile"

    def dsn(self, dbname: str = DEFAULT_DB) -> str:
        """A libpq URI that connects as the superuser with the password from `passfile`."""
        return (f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/{quote(dbname, safe='')}"
                f"?passfile={quote(str(self.passfile))}")


def default_server() -> LocalServer:
    """Where the embedded server lives: `$PGANON_HOME`; else `.pganon/` in a source checkout; else
    (installed from a wheel: never inside site-packages, which pip may replace or delete)
    `$XDG_DATA_HOME/pganon`, by default `~/.local/share/pganon`. When the cluster owner cannot
    reach that place (`postgres` when we are root, and a checkout or home inside a 0700 directory
    such as /root), a directory of its own in /var/tmp instead, named by a hash of that place."""
    port = int(os.environ.get("PGANON_PORT", DEFAULT_PORT))
    if os.environ.get("PGANON_HOME"):
        return LocalServer(home=Path(os.environ["PGANON_HOME"]).resolve(), port=port)
    project = source_checkout()
    if project is not None:
        home, place = project / ".pganon", project
    else:
        data = os.environ.get("XDG_DATA_HOME", "")
        base = Path(data) if os.path.isabs(data) else Path.home() / ".local" / "share"  # XDG: relative = unset
        home = place = base / "pganon"
    if not _owner_can_reach(_nearest_existing(place)):
        digest = hashlib.sha1(str(place).encode()).hexdigest()[:12]
        home = Path("/var/tmp") / f"pganon-{digest}"
    return LocalServer(home=home, port=port)


def _nearest_existing(path: Path) -> Path:
    """`path`, or its nearest ancestor that exists (the home is made later, with its parents)."""
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


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
    srv.socket_dir.chmod(0o700)   # the socket is for the cluster owner (and root) only
    if owner:  # the owner must be able to reach its directory through every parent
        for parent in srv.home.parents:
            if not os.access(parent, os.X_OK):
                raise PganonError(f"{parent} is not searchable by {owner}", hint="use PGANON_HOME elsewhere")


def _fast_mode() -> bool:
    value = os.environ.get(FAST_ENV, "")
    if value not in ("", "0", "1"):
        raise PganonError(f"{FAST_ENV}={value!r} is neither 1 nor 0",
                          hint=f"set {FAST_ENV}=1 only for the test suite (may lose the last "
                               "transactions on a crash), or unset it")
    return value == "1"


# --- the password --------------------------------------------------------------------------

def _pgpass_field(text: str) -> str:
    return text.replace("\\", "\\\\").replace(":", "\\:")


def _write_passfile(srv: LocalServer, password: str) -> None:
    """Replace `srv.passfile` atomically; created 0600 so the password is never readable by others."""
    hosts = ("127.0.0.1", "localhost", str(srv.socket_dir))
    text = "".join(f"{_pgpass_field(h)}:*:*:{SUPERUSER}:{_pgpass_field(password)}\n" for h in hosts)
    tmp = srv.passfile.with_name(f".passfile.{os.getpid()}")
    tmp.unlink(missing_ok=True)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, srv.passfile)


def _password(srv: LocalServer) -> str | None:
    """The superuser's password from the passfile (None when there is none); libpq ignores a
    passfile that others can read, so its mode is put back to 0600."""
    try:
        text = srv.passfile.read_text()
    except FileNotFoundError:
        return None
    except PermissionError:
        raise PganonError(f"cannot read {srv.passfile}: it belongs to another OS user",
                          hint="run pganon as the user who first started this server, "
                               "or use your own PGANON_HOME") from None
    if srv.passfile.stat().st_mode & 0o077:
        os.chmod(srv.passfile, 0o600)
    for line in text.splitlines():
        if line.startswith("127.0.0.1:"):
            return line.rsplit(":", 1)[1]
    return None


def _initdb(srv: LocalServer) -> None:
    password = secrets.token_urlsafe(32)
    _write_passfile(srv, password)
    pwfile = srv.home / ".initdb-password"   # initdb runs as the cluster owner: it must read this
    pwfile.unlink(missing_ok=True)
    fd = os.open(pwfile, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(password + "\n")
    try:
        if _owner():
            shutil.chown(pwfile, user=_owner())
        _run([str(PG_BIN / "initdb"), "-D", str(srv.data_dir), "-U", SUPERUSER, "--auth=scram-sha-256",
              f"--pwfile={pwfile}", "-E", "UTF8", "--locale=C.UTF-8"])
    finally:
        pwfile.unlink(missing_ok=True)
    (srv.data_dir / "pg_hba.conf").write_text(HBA)


# --- start, stop, status ------------------------------------------------------------------

def is_running(srv: LocalServer) -> bool:
    if not (srv.data_dir / "PG_VERSION").exists():
        return False
    res = _run([str(PG_BIN / "pg_ctl"), "status", "-D", str(srv.data_dir)], check=False)
    return res.returncode == 0


def status(srv: LocalServer | None = None) -> dict:
    """Where the data lives, whether it runs (and durably), and how to connect with psql."""
    srv = srv or default_server()
    running = is_running(srv)
    durability = "-"
    if running:
        try:
            off = _durability_off(srv)
            durability = "on" if not off else f"off ({', '.join(off)}): fast mode, tests only"
        except PganonError as exc:
            durability = f"unknown: {exc}"
    return {
        "home": str(srv.home),
        "data": str(srv.data_dir),
        "initialized": (srv.data_dir / "PG_VERSION").exists(),
        "running": running,
        "durability": durability,
        "dsn": srv.dsn(),
        "passfile": f"{srv.passfile} (the {SUPERUSER} password, readable by you only)",
        "psql": f"psql {shlex.quote(srv.dsn())}",
    }


def start(srv: LocalServer | None = None, dbname: str = DEFAULT_DB) -> str:
    """Initialize (once), start (if stopped), close (an older trust cluster) and return the DSN of
    the local server's database; durable unless `PGANON_SERVER_FAST=1`."""
    srv = srv or default_server()
    fast = _fast_mode()
    if not (PG_BIN / "initdb").exists():
        raise PganonError(f"PostgreSQL 15 is not installed in {PG_BIN}", hint="run scripts/setup.sh")
    if not is_running(srv) and _port_taken(srv.port):   # refuse before creating anything
        raise PganonError(f"port {srv.port} is already used by another server",
                          hint="stop it, or choose another port with PGANON_PORT")
    _prepare_dirs(srv)
    with open(srv.home / ".start.lock", "a") as lock:   # two starts at once: one password, one initdb
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (srv.data_dir / "PG_VERSION").exists():
            _initdb(srv)
        if not is_running(srv):
            if not _hba_is_ours(srv):    # an earlier pganon's trust cluster: closed before it listens
                (srv.data_dir / "pg_hba.conf").write_text(MIGRATION_HBA)
            _pg_start(srv, fast)
        _wait_ready(srv)
        _close(srv)
        if not fast and _durability_off(srv):        # a test server asked to be a real one
            stop(srv)
            _pg_start(srv, fast=False)
            _wait_ready(srv)
            if off := _durability_off(srv):
                raise PganonError(f"the local server still runs with {', '.join(off)} off after a restart: "
                                  "they are set in its configuration files",
                                  hint=f"remove them from {srv.data_dir}/postgresql.conf or run "
                                       "ALTER SYSTEM RESET for each, then `pganon server start`")
    _ensure_database(srv, dbname)
    return srv.dsn(dbname)


def _pg_start(srv: LocalServer, fast: bool) -> None:
    opts = (f"-p {srv.port} -k {srv.socket_dir} -c listen_addresses=127.0.0.1 "
            "-c shared_buffers=256MB -c work_mem=64MB -c maintenance_work_mem=256MB -c max_wal_size=4GB")
    if fast:   # this start only: the next start without PGANON_SERVER_FAST is durable
        opts += "".join(f" -c {name}=off" for name in DURABILITY)
    _run([str(PG_BIN / "pg_ctl"), "start", "-w", "-t", "60", "-D", str(srv.data_dir),
          "-l", str(srv.log_file), "-o", opts])


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
        res = subprocess.run([str(PG_BIN / "pg_isready"), "-h", str(srv.socket_dir), "-p", str(srv.port),
                              "-U", SUPERUSER, "-d", "postgres"], capture_output=True)
        if res.returncode == 0:
            return
        time.sleep(0.2)
    raise PganonError(f"the local server did not accept connections within {timeout:.0f}s",
                      hint=f"see {srv.log_file}")


def _connect(srv: LocalServer, dbname: str = "postgres", dsn: str | None = None):
    """A superuser connection with search_path pinned to pg_catalog: nothing planted runs."""
    import psycopg
    try:
        return psycopg.connect(dsn or srv.dsn(dbname), autocommit=True, connect_timeout=10,
                               options="-c search_path=pg_catalog,pg_temp")
    except psycopg.OperationalError as exc:
        reason = str(exc).strip().splitlines()[-1]
        raise PganonError(f"cannot connect to the local server as {SUPERUSER}: {reason}",
                          hint=f"its password is in {srv.passfile}; if that file is lost, restore it "
                               "(or start over with an empty PGANON_HOME)") from exc


def _durability_off(srv: LocalServer) -> list[str]:
    with _connect(srv) as conn:
        rows = conn.execute(
            "SELECT name FROM pg_catalog.pg_settings "
            "WHERE name OPERATOR(pg_catalog.=) ANY(%s::pg_catalog.text[]) AND setting OPERATOR(pg_catalog.=) 'off' ORDER BY name", (list(DURABILITY),)).fetchall()
    return [r[0] for r in rows]


def _hba_is_ours(srv: LocalServer) -> bool:
    return (srv.data_dir / "pg_hba.conf").read_text() == HBA


def _close(srv: LocalServer) -> None:
    """Make the cluster password-only: a no-op when pg_hba.conf is ours; else (a trust cluster of
    an earlier pganon, an edited file) give the superuser the passfile's password (a new one if
    there is none), write pg_hba.conf, reload, and check that no password means no connection."""
    import psycopg
    from psycopg import sql
    from psycopg.conninfo import make_conninfo

    if _hba_is_ours(srv):
        return
    password = _password(srv)
    if password is None:
        password = secrets.token_urlsafe(32)
        _write_passfile(srv, password)
    socket_dsn = make_conninfo(host=str(srv.socket_dir), port=srv.port, user=SUPERUSER, dbname="postgres",
                               passfile=str(srv.passfile))
    with _connect(srv, dsn=socket_dsn) as conn:
        # a SCRAM verifier made here: the password itself never reaches the server or its log
        verifier = conn.pgconn.encrypt_password(password.encode(), SUPERUSER.encode(), b"scram-sha-256")
        conn.execute(sql.SQL("ALTER ROLE {} PASSWORD {}").format(
            sql.Identifier(SUPERUSER), sql.Literal(verifier.decode())))
        (srv.data_dir / "pg_hba.conf").write_text(HBA)
        conn.execute("SELECT pg_catalog.pg_reload_conf()")
    deadline = time.monotonic() + 10
    for host in (srv.socket_dir, "127.0.0.1"):
        while True:
            try:
                psycopg.connect(make_conninfo(
                    host=str(host), port=srv.port, user=SUPERUSER, dbname="postgres", password="",
                    passfile=str(srv.home / "no-passfile"), connect_timeout=5)).close()
            except psycopg.OperationalError:
                break
            if time.monotonic() > deadline:
                raise PganonError("the local server still accepts connections without a password after "
                                  "pg_hba.conf was rewritten", hint=f"see {srv.log_file}; stop it with "
                                  "`pganon server stop`")
            time.sleep(0.1)


def _ensure_database(srv: LocalServer, dbname: str) -> None:
    from psycopg import sql

    with _connect(srv) as conn:
        exists = conn.execute(
            "SELECT 1 FROM pg_catalog.pg_database WHERE datname OPERATOR(pg_catalog.=) %s::pg_catalog.name",
            (dbname,)).fetchone()
        if not exists:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(dbname)))
