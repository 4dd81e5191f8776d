"""Authentication and encryption with ZeroMQ CURVE, and the same-host Unix socket private to
its user (issue 15, defect 9: anyone who could reach the port owned the cluster).

With TENSORWEAVE_CURVE_DIR set on every task (keys written by `tensorweave keygen`), a
member runs steps as before, a stranger without the keys or with keys of its own is refused
during the handshake (no message of theirs is read: a `reset` changes nothing), and the
same-host socket admits only this user id."""
from __future__ import annotations

import os
import shutil
import socket
import stat
import tempfile

import numpy as np
import pytest
import zmq
from zmq.utils.monitor import recv_monitor_message

import tensorweave as tf
from tensorweave import cli
from tensorweave.distributed import auth, sockets
from tensorweave.distributed import channel as channel_mod
from tensorweave.framework import errors

from raw_peer import raw_header

PS0 = "/job:ps/replica:0/task:0"


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    directory = str(tmp_path_factory.mktemp("curve") / "keys")
    assert cli.main(["keygen", directory, "--client", "alice"]) == 0
    return directory


@pytest.fixture(scope="module")
def secured(start_cluster_module, keys):
    """A ps and a worker that authenticate (and encrypt) every tcp:// message, task to task too."""
    return start_cluster_module({"ps": 1, "worker": 1},
                                env={"TENSORWEAVE_CURVE_DIR": keys, "TENSORWEAVE_TRANSPORT": "tcp"})


@pytest.fixture
def with_keys(monkeypatch):
    """This process connects over tcp:// with the keys it is given (none: a stranger)."""
    monkeypatch.setattr(sockets, "TRANSPORT", "tcp")
    yield lambda directory: auth.configure(auth.keys_from_directory(directory) if directory else None)
    auth.configure(None)


def _variable_graph():
    with tf.device("/job:ps/task:0"):
        v = tf.Variable(np.float32(1), name="guarded")
        inc = tf.assign_add(v, 1.0)
    with tf.device("/job:worker/task:0"):
        doubled = tf.identity(inc * 2.0)
    return v, doubled


def _stranger(endpoint: str, curve: tuple = ()) -> tuple:
    """A raw DEALER that sends `reset`: (its reply or None, the socket events it saw)."""
    sock = zmq.Context.instance().socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    if curve:
        sock.curve_serverkey, sock.curve_publickey, sock.curve_secretkey = curve
    monitor = sock.get_monitor_socket()
    try:
        sock.connect(endpoint)
        sock.send_multipart([raw_header({"id": 1, "m": "reset", "a": {}})])
        reply = sock.recv_multipart() if sock.poll(2000, zmq.POLLIN) else None
        seen = []
        while monitor.poll(200, zmq.POLLIN):
            seen.append(zmq.Event(recv_monitor_message(monitor)["event"]).name)
        return reply, seen
    finally:
        sock.disable_monitor()
        monitor.close(0)
        sock.close(0)


def test_keygen_writes_private_keys_and_will_not_overwrite_them(keys, capsys):
    for name in ("cluster.key", "cluster.key_secret", "clients/alice/client.key_secret", "clients/alice/cluster.key",
                 "authorized/alice.key"):
        assert os.path.exists(os.path.join(keys, name)), name
    for secret in ("cluster.key_secret", "clients/alice/client.key_secret"):
        assert stat.S_IMODE(os.stat(os.path.join(keys, secret)).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(keys).st_mode) == 0o700
    assert cli.main(["keygen", keys]) == 1
    assert "already holds a cluster key pair" in capsys.readouterr().err
    k = auth.keys_from_directory(keys)
    env = {"TENSORWEAVE_CURVE_PUBLIC_KEY": k.server_public.decode(),
           "TENSORWEAVE_CURVE_SECRET_KEY": k.server_secret.decode(),
           "TENSORWEAVE_CURVE_AUTHORIZED_KEYS": ",".join(x.decode() for x in k.authorized)}
    assert auth.keys_from_environment(env) == k   # the same keys, as variables (a Secret's env)
    assert auth.keys_from_environment({}) is None   # off unless set


def test_members_run_steps_over_an_authenticated_cluster(secured, keys, with_keys):
    with_keys(keys)
    with tf.Graph().as_default():
        v, doubled = _variable_graph()
        with tf.Session(secured.target("worker", 0)) as sess:
            sess.run(v.initializer)
            assert sess.run(doubled) == 4   # the worker's Recv is fed by the ps over CURVE
            assert sess.run(v) == 2


def test_a_stranger_is_refused_before_any_message_is_read(secured, keys, with_keys):
    with_keys(keys)
    with tf.Graph().as_default():   # (state of its own: the strangers below send `reset`s)
        v, _ = _variable_graph()
        with tf.Session(secured.target("worker", 0)) as sess:
            sess.run(tf.variables_initializer([v]))
    endpoint = "tcp://" + secured.address("ps", 0)
    reply, seen = _stranger(endpoint)   # no keys at all
    print(f"\nstranger without keys saw: reply={reply}, events={seen}")
    assert reply is None and "HANDSHAKE_SUCCEEDED" not in seen
    assert any(e.startswith("HANDSHAKE_FAILED") for e in seen)   # (the mechanisms differ: NULL against CURVE)
    impostor = zmq.curve_keypair()
    reply, seen = _stranger(endpoint, (auth.keys_from_directory(keys).server_public,) + impostor)
    print(f"stranger with keys of its own saw: reply={reply}, events={seen}")
    assert reply is None and "HANDSHAKE_FAILED_AUTH" in seen
    host, port = secured.address("ps", 0).split(":")
    with socket.create_connection((host, int(port)), timeout=3) as raw:   # not even ZMTP
        raw.sendall(b"GET / HTTP/1.1\r\n\r\n" * 4)
        raw.settimeout(3)
        try:
            assert raw.recv(4096)[:1] in (b"", b"\xff")   # a greeting at most, then nothing it asked for
        except (ConnectionResetError, socket.timeout):
            pass
    with_keys(None)   # tensorweave's own client without the keys: refused, told why it may be
    ch = channel_mod.Channel(secured.address("ps", 0), PS0, 1.0)
    with pytest.raises(errors.UnavailableError, match="authentication"):
        ch.call("get_status", {})
    ch.close()
    with_keys(keys)   # the `reset`s were never read: the state is intact
    with tf.Graph().as_default():
        v, _ = _variable_graph()
        with tf.Session(secured.target("worker", 0)) as sess:
            assert sess.run(v) >= 1


def test_an_authorized_client_key_is_admitted(secured, keys, with_keys):
    with_keys(os.path.join(keys, "clients", "alice"))   # cluster.key + its own pair, no cluster secret
    ch = channel_mod.Channel(secured.address("ps", 0), PS0, 5.0)
    try:
        assert ch.call("get_status", {})["job"] == "ps"
    finally:
        ch.close()


def test_the_unix_socket_is_private_to_its_user(start_cluster):
    if os.getuid() != 0:
        pytest.skip("needs root to act as another user")
    tmpdir = tempfile.mkdtemp(prefix="tw-uid-test-")   # (a socket directory of its own: others' servers
    os.chmod(tmpdir, 0o755)                            # would close it again while the test opens it)
    c = start_cluster({"local": 1}, env={"TMPDIR": tmpdir})
    port = int(c.address("local", 0).rpartition(":")[2])
    path = os.path.join(tmpdir, f"tensorweave-{os.getuid()}", os.path.basename(sockets.uds_path_for_port(port)))
    assert stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600

    def as_nobody_connect() -> str:
        """In a child that is user 65534: what connecting and reading gave."""
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:   # the child: plain sockets only, then _exit
            try:
                os.setgid(65534)
                os.setuid(65534)
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.settimeout(3)
                try:
                    s.connect(path)
                    s.sendall(b"\0" * 12)
                    out = b"hung up" if s.recv(1) == b"" else b"answered"
                except PermissionError:
                    out = b"permission denied"
                except (ConnectionResetError, BrokenPipeError):   # (closed before or while it wrote)
                    out = b"hung up"
                except socket.timeout:
                    out = b"timed out"
                os.write(w, out)
            finally:
                os._exit(0)
        os.close(w)
        os.waitpid(pid, 0)
        with os.fdopen(r, "rb") as f:
            return f.read().decode()

    assert as_nobody_connect() == "permission denied"   # the directory is 0700
    # Were the directory and socket opened up (a careless umask, a chmod), the server still
    # refuses a peer of another user id: it checks the peer's credentials on accept.
    os.chmod(os.path.dirname(path), 0o711)
    os.chmod(path, 0o777)
    try:
        assert as_nobody_connect() == "hung up"
    finally:
        os.chmod(path, 0o600)
        os.chmod(os.path.dirname(path), 0o700)
    assert tf.Session(c.target("local", 0)).run(tf.constant(3)) == 3
    c.stop()
    shutil.rmtree(tmpdir, ignore_errors=True)
