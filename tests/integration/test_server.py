"""The embedded server: refuses a taken port before touching anything; durable by default (an
acknowledged commit survives an immediate shutdown); fast only when the test suite asks, for that
start only; closed to other OS users (password only), also a trust cluster of an earlier pganon."""

import os
import shlex
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

import psycopg
import pytest

from pganon import server
from pganon.errors import PganonError

PG_BIN = server.PG_BIN
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="acting as another OS user needs root (runuser)")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _new_home(tag: str) -> Path:
    """Under /var/tmp, not tmp_path: pytest's tmp_path is 0700 root, which the cluster owner
    (`postgres` when we are root) cannot reach."""
    d = Path(tempfile.mkdtemp(prefix=f"pganon-test-{tag}-", dir="/var/tmp"))
    d.chmod(0o755)
    return d


def _no_password(srv: server.LocalServer, host: str = "127.0.0.1") -> str:
    return (f"host={host} port={srv.port} user=postgres dbname=postgres password='' "
            f"passfile={srv.home}/none connect_timeout=5")


def _durability(srv: server.LocalServer) -> dict:
    with psycopg.connect(srv.dsn("postgres")) as c:
        return {n: c.execute(f"SHOW {n}").fetchone()[0] for n in server.DURABILITY}


def _remove(srv: server.LocalServer) -> None:
    server._run([str(PG_BIN / "pg_ctl"), "stop", "-m", "immediate", "-D", str(srv.data_dir)], check=False)
    shutil.rmtree(srv.home.parent, ignore_errors=True)


@pytest.fixture(scope="module")
def srv():
    """One server of this module's own (own home, free port), made and started the default way."""
    s = server.LocalServer(home=_new_home("server") / "home", port=_free_port())
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv(server.FAST_ENV, raising=False)
        server.start(s)
    yield s
    _remove(s)


@pytest.fixture
def durable(monkeypatch):
    monkeypatch.delenv(server.FAST_ENV, raising=False)


def test_start_on_a_taken_port_says_so(tmp_path):
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        srv = server.LocalServer(home=tmp_path / "home", port=port)
        with pytest.raises(PganonError, match=f"port {port} is already used") as err:
            server.start(srv)
        assert "PGANON_PORT" in err.value.hint
        assert not (tmp_path / "home").exists()


def test_status_of_the_running_test_server(server_dsn):
    st = server.status()
    assert set(st) == {"home", "data", "initialized", "running", "durability", "dsn", "passfile", "psql"}
    assert st["running"] and st["durability"] != "-"


def test_home_moves_out_of_a_checkout_the_cluster_owner_cannot_reach(monkeypatch):
    monkeypatch.delenv("PGANON_HOME", raising=False)
    monkeypatch.setattr(server, "_owner_can_reach", lambda directory: False)
    home = server.default_server().home
    assert str(home).startswith("/var/tmp/pganon-") and home == server.default_server().home
    monkeypatch.setattr(server, "_owner_can_reach", lambda directory: True)
    assert server.default_server().home.name == ".pganon"


def test_home_of_an_installed_package_is_outside_site_packages(monkeypatch):
    """"Why": installed from a wheel, the home was `.pganon/` beside the package, in site-packages."""
    monkeypatch.delenv("PGANON_HOME", raising=False)
    monkeypatch.setattr(server, "source_checkout", lambda: None)      # as in an installed wheel
    data = _new_home("xdg")
    try:
        monkeypatch.setenv("XDG_DATA_HOME", str(data))
        assert server.default_server().home == data / "pganon"
        monkeypatch.setenv("XDG_DATA_HOME", "relative/dir")             # XDG: a relative path is ignored
        monkeypatch.setenv("HOME", str(data))
        assert server.default_server().home == data / ".local" / "share" / "pganon"
        monkeypatch.setenv("PGANON_HOME", str(data / "mine"))
        assert server.default_server().home == data / "mine"
    finally:
        shutil.rmtree(data, ignore_errors=True)


@as_root
def test_home_of_an_installed_package_moves_out_of_a_home_the_cluster_owner_cannot_reach(monkeypatch, tmp_path):
    """Root's ~/.local/share is inside /root (0700): `postgres` could not reach a cluster there."""
    monkeypatch.delenv("PGANON_HOME", raising=False)
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    monkeypatch.setattr(server, "source_checkout", lambda: None)
    tmp_path.chmod(0o700)
    monkeypatch.setenv("HOME", str(tmp_path))
    home = server.default_server().home
    assert home.parent == Path("/var/tmp") and home.name.startswith("pganon-")
    assert home == server.default_server().home                         # the same place every time


def test_an_acknowledged_commit_survives_an_immediate_shutdown(srv, durable):
    assert _durability(srv) == {"fsync": "on", "synchronous_commit": "on", "full_page_writes": "on"}
    with psycopg.connect(srv.dsn("postgres"), autocommit=True) as c:
        c.execute("CREATE TABLE IF NOT EXISTS acked (n int)")
        for n in range(20):                  # 20 acknowledged commits, the last just before the kill
            c.execute("INSERT INTO acked VALUES (%s)", (n,))
    server._run([str(PG_BIN / "pg_ctl"), "stop", "-m", "immediate", "-D", str(srv.data_dir)])
    assert not server.is_running(srv)
    server.start(srv)
    with psycopg.connect(srv.dsn("postgres"), autocommit=True) as c:
        assert c.execute("SELECT count(*), max(n) FROM acked").fetchone() == (20, 19)
        c.execute("DROP TABLE acked")


def test_fast_mode_is_asked_for_and_lasts_one_start(srv, monkeypatch):
    server.stop(srv)
    monkeypatch.setenv(server.FAST_ENV, "1")
    server.start(srv)
    assert _durability(srv) == {"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off"}
    assert "fast mode, tests only" in server.status(srv)["durability"]
    with psycopg.connect(srv.dsn("postgres")) as c:      # on this start's command line, in no file
        sources = c.execute("SELECT DISTINCT source FROM pg_settings WHERE name IN "
                            "('fsync', 'synchronous_commit', 'full_page_writes')").fetchall()
    assert sources == [("command line",)]
    monkeypatch.delenv(server.FAST_ENV)
    server.start(srv)                                   # running fast: a normal start restarts it
    assert _durability(srv) == {"fsync": "on", "synchronous_commit": "on", "full_page_writes": "on"}
    assert server.status(srv)["durability"] == "on"
    monkeypatch.setenv(server.FAST_ENV, "1")
    server.start(srv)                                   # running durable: a fast start leaves it so
    assert _durability(srv)["fsync"] == "on"


def test_fast_mode_takes_only_1_or_0(srv, monkeypatch):
    monkeypatch.setenv(server.FAST_ENV, "yes")
    with pytest.raises(PganonError, match="PGANON_SERVER_FAST='yes' is neither 1 nor 0"):
        server.start(srv)


def test_no_connection_without_the_password(srv, durable):
    for host in ("127.0.0.1", str(srv.socket_dir)):
        with pytest.raises(psycopg.OperationalError, match="no password supplied"):
            psycopg.connect(_no_password(srv, host))
    with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
        psycopg.connect(_no_password(srv).replace("password=''", "password=guess"))
    with psycopg.connect(srv.dsn("postgres")) as c:
        assert {r[0] for r in c.execute("SELECT auth_method FROM pg_hba_file_rules")} == {"scram-sha-256"}
    st = srv.passfile.stat()
    assert st.st_mode & 0o777 == 0o600 and st.st_uid == os.geteuid()
    password = server._password(srv)
    assert len(password) >= 32
    assert all(password not in str(v) for v in (*server.status(srv).values(), srv.dsn()))


def test_status_says_where_the_data_is_and_how_to_connect_with_psql(srv, durable):
    st = server.status(srv)
    assert st["data"] == str(srv.data_dir) and st["running"] and str(srv.passfile) in st["passfile"]
    r = subprocess.run([*shlex.split(st["psql"]), "-w", "-Atc", "SELECT current_user"], capture_output=True,
                       text=True, env={**os.environ, "PATH": f"{PG_BIN}:{os.environ['PATH']}"}, timeout=30)
    assert r.returncode == 0 and r.stdout.strip() == "postgres", r.stderr


def _as_nobody(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["runuser", "-u", "nobody", "--", *args], capture_output=True, text=True,
                          cwd="/", timeout=30)


def _nobody_connects(srv: server.LocalServer, host: str = "127.0.0.1") -> subprocess.CompletedProcess:
    return _as_nobody(str(PG_BIN / "psql"), "-w", "-h", host, "-p", str(srv.port), "-U", "postgres",
                      "-d", "postgres", "-Atc", "SELECT 1")


@as_root
def test_another_os_user_cannot_connect_or_read_the_password(srv, durable):
    for host in ("127.0.0.1", str(srv.socket_dir)):
        r = _nobody_connects(srv, host)
        assert r.returncode != 0 and r.stdout == "", r.stdout
    assert "no password supplied" in _nobody_connects(srv).stderr
    r = _as_nobody("cat", str(srv.passfile))
    assert r.returncode != 0 and "Permission denied" in r.stderr


@pytest.mark.parametrize("state", ["running", "stopped"])
def test_a_trust_cluster_of_an_earlier_pganon_is_closed_on_the_next_start(durable, state):
    """Made and started exactly as pganon did before: initdb --auth=trust, fast settings."""
    old = server.LocalServer(home=_new_home("trust") / "home", port=_free_port())
    try:
        server._prepare_dirs(old)
        server._run([str(PG_BIN / "initdb"), "-D", str(old.data_dir), "-U", "postgres", "--auth=trust",
                     "-E", "UTF8", "--locale=C.UTF-8", "--no-sync"])
        server._run([str(PG_BIN / "pg_ctl"), "start", "-w", "-D", str(old.data_dir), "-l", str(old.log_file),
                     "-o", f"-p {old.port} -k {old.socket_dir} -c listen_addresses=127.0.0.1 "
                           "-c fsync=off -c synchronous_commit=off -c full_page_writes=off"])
        with psycopg.connect(_no_password(old), autocommit=True) as c:     # open to anyone
            c.execute("CREATE TABLE kept AS SELECT 42 AS answer")
        if os.geteuid() == 0:
            assert _nobody_connects(old).stdout.strip() == "1"
        assert not old.passfile.exists()
        if state == "stopped":
            server.stop(old)

        dsn = server.start(old)

        for host in ("127.0.0.1", str(old.socket_dir)):
            with pytest.raises(psycopg.OperationalError, match="no password supplied"):
                psycopg.connect(_no_password(old, host))
        if os.geteuid() == 0:
            r = _nobody_connects(old)
            assert r.returncode != 0 and r.stdout == ""
        with psycopg.connect(old.dsn("postgres")) as c:
            assert c.execute("SELECT answer FROM kept").fetchone() == (42,)
            assert {r[0] for r in c.execute("SELECT auth_method FROM pg_hba_file_rules")} == {"scram-sha-256"}
        assert old.passfile.stat().st_mode & 0o777 == 0o600
        assert _durability(old) == {"fsync": "on", "synchronous_commit": "on", "full_page_writes": "on"}
        psycopg.connect(dsn).close()
    finally:
        _remove(old)
