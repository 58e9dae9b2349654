"""The embedded server refuses a port that another server holds, before touching anything."""

import socket

import pytest

from pganon import server
from pganon.errors import PganonError


def test_start_on_a_taken_port_says_so(tmp_path):
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        srv = server.LocalServer(home=tmp_path / "home", port=port)
        with pytest.raises(PganonError, match=f"port {port} is already used") as err:
            server.start(srv)
        assert "PGANON_PORT" in err.value.hint


def test_status_of_the_running_test_server(server_dsn):
    st = server.status()
    assert set(st) == {"home", "initialized", "running", "dsn"}


def test_home_moves_out_of_a_checkout_the_cluster_owner_cannot_reach(monkeypatch):
    monkeypatch.delenv("PGANON_HOME", raising=False)
    monkeypatch.setattr(server, "_owner_can_reach", lambda directory: False)
    home = server.default_server().home
    assert str(home).startswith("/var/tmp/pganon-") and home == server.default_server().home
    monkeypatch.setattr(server, "_owner_can_reach", lambda directory: True)
    assert server.default_server().home.name == ".pganon"
