"""Live revocation of client keys and connection errors that say what happened (issue 27,
defects 2 and 4).

Defect 2: after `rm keys/authorized/alice.key`, alice's live session went on, a new alice
process was admitted, and so was anyone holding a copy of alice's keys: the keys were read once
at start. Now tasks read authorized/ again when it changes: a removed key opens no new
connection (Unix socket or TCP) within a second, its open Unix connections are closed and its
open ZeroMQ connections are refused every further request; `tensorweave keygen --revoke NAME`.

Defect 4: "is it serving with authentication this client has no key for?" was added to a plain
refused connection with authentication off, and missing for a client with a wrong key. Now a
connection that never came up says refused, timed out, or handshake failed for authentication.
"""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time

import pytest

from tensorweave import cli
from tensorweave.distributed import auth, uds
from tensorweave.distributed import channel as channel_mod
from tensorweave.distributed.cluster import free_ports
from tensorweave.framework import errors

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PS0 = "/job:ps/replica:0/task:0"


@pytest.fixture
def keys(tmp_path):
    directory = str(tmp_path / "keys")
    assert cli.main(["keygen", directory, "--client", "alice", "--client", "bob"]) == 0
    return directory


@pytest.fixture
def client_keys():
    """This process connects with the keys it is given (None: without keys)."""
    yield lambda directory: auth.configure(auth.keys_from_directory(directory) if directory else None)
    auth.configure(None)


def _admitted(address: str) -> bool:
    """Whether a new connection of this process (a new channel) is served; False when its key is
    refused (anything else fails the test)."""
    ch = channel_mod.Channel(address, PS0, 10.0)
    try:
        return ch.call("get_status", {})["job"] == "ps"
    except errors.UnavailableError as e:
        assert "handshake failed for authentication" in e.message, e.message
        return False
    finally:
        ch.close()


def _first_refusal(address: str, revoked_at: float) -> tuple:
    """(the latest start of an admitted connection, the end of the first refused one), both in
    seconds after the revocation; polls until refused (30 s at most)."""
    last_admitted = None
    while True:
        started = time.monotonic()
        assert started - revoked_at < 30, "the revoked key is still admitted after 30 s"
        if not _admitted(address):
            return last_admitted, time.monotonic() - revoked_at
        last_admitted = started - revoked_at


def test_a_revoked_key_opens_no_new_connection_and_its_open_ones_are_closed(start_cluster, keys, client_keys,
                                                                          tmp_path):
    c = start_cluster({"ps": 1}, env={"TENSORWEAVE_CURVE_DIR": keys})
    address = c.address("ps", 0)
    alice_copy = str(tmp_path / "alice-copy")   # what someone holding a copy of alice's keys has
    shutil.copytree(os.path.join(keys, "clients", "alice"), alice_copy)
    client_keys(alice_copy)
    over_unix = channel_mod.Channel(address, PS0, 10.0)
    over_tcp = channel_mod.Channel("tcp://" + address, PS0, 10.0)
    try:
        assert over_unix.preferred_route().name == "unix" and over_tcp.preferred_route().name == "zeromq"
        for ch in (over_unix, over_tcp):
            assert ch.call("get_status", {})["job"] == "ps"   # admitted, and the connections kept
        (unix_conn,) = over_unix._free
        assert isinstance(unix_conn, uds.Conn) and not unix_conn.ended()

        os.remove(os.path.join(keys, "authorized", "alice.key"))   # (what `keygen --revoke alice` does first)
        revoked_at = time.monotonic()

        deadline = time.monotonic() + 30
        while not unix_conn.ended():   # the server closes the open Unix connection itself
            assert time.monotonic() < deadline, "the revoked key's open Unix connection was not closed"
            time.sleep(0.01)
        closed_unix = time.monotonic() - revoked_at
        latest_unix, refused_unix = _first_refusal(address, revoked_at)
        latest_tcp, refused_tcp = _first_refusal("tcp://" + address, revoked_at)
        with pytest.raises(errors.UnauthenticatedError, match="revoked"):
            over_tcp.call("get_status", {})   # its open ZeroMQ connection is served no more
        print(f"\nrevocation: the open Unix connection closed {closed_unix:.3f} s after; a new Unix connection "
              f"refused by {refused_unix:.3f} s (the last admitted began at {latest_unix}), a new TCP connection "
              f"refused by {refused_tcp:.3f} s (the last admitted began at {latest_tcp})")
        for latest in (latest_unix, latest_tcp):
            assert latest is None or latest < 1.0   # no connection begun a second after the revocation is admitted
    finally:
        over_unix.close()
        over_tcp.close()

    client_keys(os.path.join(keys, "clients", "bob"))   # the other client goes on
    assert _admitted(address) and _admitted("tcp://" + address)

    # A new process with the copy of alice's keys is refused, and told it was for authentication.
    script = ("import tensorweave as tf\n"
              "try:\n"
              f"    tf.Session('grpc://{address}', config=tf.ConfigProto(operation_timeout_in_ms=20000)).run("
              "tf.constant(1))\n"
              "    print('ADMITTED')\n"
              "except tf.errors.OpError as e:\n"
              "    print(type(e).__name__, e.message)\n")
    for transport in ("auto", "tcp"):
        env = dict(os.environ, PYTHONPATH=REPO, TENSORWEAVE_CURVE_DIR=alice_copy, TENSORWEAVE_TRANSPORT=transport)
        out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
        print(f"a new alice process ({transport}): {out.stdout.strip()}")
        assert out.stdout.startswith("UnavailableError") and "handshake failed for authentication" in out.stdout, \
            out.stdout + out.stderr


def test_keygen_revoke_removes_the_key_and_names_what_it_cannot_revoke(keys, capsys):
    assert cli.main(["keygen", keys, "--revoke", "alice"]) == 0
    assert not os.path.exists(os.path.join(keys, "authorized", "alice.key"))
    assert not os.path.exists(os.path.join(keys, "clients", "alice"))
    assert os.path.exists(os.path.join(keys, "authorized", "bob.key"))
    assert auth.keys_from_directory(keys).authorized == {auth.keys_from_directory(keys).server_public,
                                                         auth.keys_from_directory(os.path.join(keys, "clients",
                                                                                               "bob")).client_public}
    assert cli.main(["keygen", keys, "--revoke", "carol"]) == 1
    assert "no client 'carol' is authorized" in capsys.readouterr().err
    assert cli.main(["keygen", keys, "--revoke", "../cluster"]) == 1
    assert os.path.exists(os.path.join(keys, "cluster.key_secret"))


def _error_of(address: str, connect_timeout_s: float = 2.0) -> str:
    ch = channel_mod.Channel(address, PS0, connect_timeout_s)
    try:
        with pytest.raises(errors.UnavailableError) as e:
            ch.call("get_status", {})
        return e.value.message
    finally:
        ch.close()


def test_connection_errors_say_what_happened(start_cluster, keys, client_keys, tmp_path):
    client_keys(None)   # authentication off
    port = free_ports(1)[0]
    refused = _error_of(f"tcp://127.0.0.1:{port}")   # nothing listens there
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(1)   # takes connections (the kernel does) and never answers
    try:
        timed_out = _error_of(f"tcp://127.0.0.1:{silent.getsockname()[1]}")
    finally:
        silent.close()
    print(f"\nrefused: {refused}\nsilent: {timed_out}")
    assert "connection refused" in refused and "authentication" not in refused
    assert "timed out" in timed_out and "authentication" not in timed_out

    c = start_cluster({"ps": 1}, env={"TENSORWEAVE_CURVE_DIR": keys})
    tcp = "tcp://" + c.address("ps", 0)
    without_keys = _error_of(tcp)
    impostor = tmp_path / "impostor"
    impostor.mkdir()
    shutil.copy(os.path.join(keys, "cluster.key"), impostor / "cluster.key")
    auth._create(str(impostor), "client")   # a key pair of its own, not authorized
    client_keys(str(impostor))
    wrong_key = _error_of(tcp)
    print(f"without keys: {without_keys}\nwith a wrong key: {wrong_key}")
    assert "handshake failed" in without_keys and "serving with authentication this client has no key" in without_keys
    assert "handshake failed for authentication" in wrong_key and "refused this client's key" in wrong_key
