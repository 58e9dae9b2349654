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
