"""Same-host trust (issue 27, defect 1: a squatted socket directory defeated CURVE).

Another user who made $TMPDIR/tensorweave-<uid> first (mode 0777) and listened on the
victim's `<port>.uds` there got the victim client's fed values and had its own answers believed,
while the victim's server dropped its socket in silence. Now: the socket and shared-memory
directories are used only while they are the user's own, 0700 and no link (otherwise a private
one is made beside them, with a warning that names the squatted path); a client talks only to a
socket whose process runs as the servers' user id (SO_PEERCRED); a server that cannot open its
socket says so; with keys on, a same-host connection proves a key as CURVE does over TCP.

The squatter is a real second user, `nobody` (65534), when the tests run as root; otherwise
those tests skip, saying so.
"""
from __future__ import annotations

import glob
import logging
import os
import select
import shutil
import socket
import subprocess
import sys
import tempfile
import time

import numpy as np
import pytest
import zmq
from zmq.utils import z85

import tensorweave as tf
from tensorweave import cli
from tensorweave.distributed import auth, shm, sockets, uds
from tensorweave.distributed import channel as channel_mod
from tensorweave.distributed.cluster import free_ports
from tensorweave.framework import errors

from raw_peer import raw_header, uds_bytes

NOBODY = 65534
PS0 = "/job:ps/replica:0/task:0"
FED = np.array([3.14, 2.71, 1.41, 1.73], np.float32)

# A squatter, run as `nobody` by the system's Python (root's own Python is not readable by
# others): makes the victim's socket directory open to all, listens on the sockets the victim's
# server would make for PORT, prints READY, then one line per connection and what it read.
SQUATTER = r"""
import os, socket, sys
directory, names = sys.argv[1], sys.argv[2:]
os.makedirs(directory, exist_ok=True)
os.chmod(directory, 0o777)
listeners = []
for name in names:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(os.path.join(directory, name))
    os.chmod(os.path.join(directory, name), 0o777)
    s.listen(16)
    s.settimeout(0.2)
    listeners.append(s)
print("READY", flush=True)
while True:
    for s in listeners:
        try:
            conn, _ = s.accept()
        except socket.timeout:
            continue
        conn.settimeout(1.0)
        got = b""
        try:
            while True:
                chunk = conn.recv(65536)
                if not chunk:
                    break
                got += chunk
        except OSError:
            pass
        print("CONNECTED", len(got), flush=True)
        conn.close()
"""


_name = os.path.basename   # (a socket file's name: the port and the network namespace)

def _need_nobody():
    if os.getuid() != 0:
        pytest.skip("the squatter is a real second user (nobody): run as root to test it")
    if not os.access("/usr/bin/python3", os.X_OK):
        pytest.skip("the squatter runs as nobody with /usr/bin/python3, which this machine lacks")


def _squat(directory: str, names: list) -> subprocess.Popen:
    """Starts the squatter as nobody; returns it once it listens."""
    proc = subprocess.Popen(["/usr/bin/python3", "-I", "-c", SQUATTER, directory, *names], user=NOBODY,
                            group=NOBODY, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd="/")
    line = proc.stdout.readline()
    if line.strip() != "READY":
        proc.kill()
        raise AssertionError(f"the squatter did not start: {line!r} {proc.stderr.read()}")
    return proc


def _squatter_log(proc: subprocess.Popen) -> str:
    proc.kill()
    out, _ = proc.communicate(timeout=30)
    return out


@pytest.fixture
def shared_tmp(monkeypatch):
    """A temporary directory like /tmp (1777, reachable by other users) of this test alone,
    the client's too."""
    base = tempfile.mkdtemp(prefix="tw-trust-", dir=tempfile.gettempdir())
    os.chmod(base, 0o1777)
    monkeypatch.setattr(tempfile, "tempdir", base)
    yield base
    shutil.rmtree(base, ignore_errors=True)


REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# The victim's client, a process of its own with the victim's TMPDIR: feeds FED into a variable
# on the ps and prints what it reads back (or the error).
VICTIM = """
import sys
import numpy as np
import tensorweave as tf
with tf.device("/job:ps/task:0"):
    v = tf.Variable(np.zeros(4, np.float32), name="v")
fed = tf.placeholder(tf.float32, [4])
assign = tf.assign(v, fed)
try:
    with tf.Session(sys.argv[1], config=tf.ConfigProto(operation_timeout_in_ms=30000)) as sess:
        sess.run(v.initializer)
        sess.run(assign, {fed: [3.14, 2.71, 1.41, 1.73]})
        print("READ", " ".join(str(x) for x in sess.run(v)))
except tf.errors.OpError as e:
    print(type(e).__name__, e.message)
"""


def _victim(target: str, tmpdir: str) -> str:
    env = dict(os.environ, PYTHONPATH=REPO, TMPDIR=tmpdir)
    out = subprocess.run([sys.executable, "-c", VICTIM, target], env=env, capture_output=True, text=True, timeout=180)
    return out.stdout.strip() or out.stderr.strip()


def _serve_later(start_cluster, env: dict):
    """A one-ps cluster whose port is known before its process starts (the fixture's `in_process`
    gives the port) and a function that starts that process and waits until it serves."""
    c = start_cluster({"ps": 1}, env=env, in_process=(("ps", 0),))

    def start():
        c._spawn("ps", 0)
        c._wait_ready("ps", 0)
    return c, start


def test_a_squatted_socket_directory_is_never_used(start_cluster, shared_tmp):
    _need_nobody()
    c, start = _serve_later(start_cluster, {"TMPDIR": shared_tmp})
    port = int(c.address("ps", 0).rpartition(":")[2])
    squatted = os.path.join(shared_tmp, f"tensorweave-{os.getuid()}")
    squatter = _squat(squatted, [_name(sockets.uds_path_for_port(port)), _name(sockets.ipc_path_for_port(port))])
    try:
        start()
        read_back = _victim(c.target("ps", 0), shared_tmp)
    finally:
        log = _squatter_log(squatter)
    print(f"\nthe victim read: {read_back!r}; the squatter saw: {log!r}; the server said: "
          f"{c.stderr('ps', 0).strip()!r}")
    assert "CONNECTED" not in log   # not even a connection: the client never looked in its directory
    assert read_back.startswith("READ ") and np.array_equal(np.array(read_back.split()[1:], np.float32), FED)
    private = glob.glob(os.path.join(shared_tmp, f"tensorweave-{os.getuid()}-*",
                                     _name(sockets.uds_path_for_port(port))))
    assert len(private) == 1, "the server listens in a private directory of its own"
    assert squatted in c.stderr("ps", 0)   # the warning names the squatted path


def test_a_socket_served_by_another_user_is_refused_by_the_client(shared_tmp):
    """A socket file in the servers' own private directory whose process runs as another user
    (moved there: root can) is refused by the client's SO_PEERCRED check before a byte is sent."""
    _need_nobody()
    port = free_ports(1)[0]
    elsewhere = os.path.join(shared_tmp, "elsewhere")
    squatter = _squat(elsewhere, [_name(sockets.uds_path_for_port(port))])
    mine = os.path.join(shared_tmp, f"tensorweave-{os.getuid()}")
    os.mkdir(mine, 0o700)   # the servers' own private directory
    os.rename(os.path.join(elsewhere, _name(sockets.uds_path_for_port(port))),
              os.path.join(mine, _name(sockets.uds_path_for_port(port))))
    try:
        said = _victim(f"grpc://localhost:{port}", shared_tmp)
        ready, _, _ = select.select([squatter.stdout], [], [], 60)   # (it reports once the client hung up)
        line = squatter.stdout.readline() if ready else ""
    finally:
        _squatter_log(squatter)
    print(f"\nthe client said: {said!r}; the squatter saw: {line!r}")
    assert said.startswith("UnavailableError") and f"runs as user id {NOBODY}, not {os.getuid()}" in said
    assert line.strip() == "CONNECTED 0"   # a connection, and not a byte sent on it


def test_links_and_squatted_directories_are_replaced_by_private_ones(tmp_path, caplog):
    """Without root: a link to a private directory, and a directory open to others that is not
    the user's (here: one the user cannot change, as root's is nobody's), are never used; the
    shared-memory buffers then live in a private directory of their own, and a tensor still
    goes through them."""
    target = tmp_path / "target"
    target.mkdir(mode=0o700)
    link = str(tmp_path / f"tensorweave-{os.getuid()}")
    os.symlink(target, link)
    with caplog.at_level(logging.WARNING, logger="tensorweave.distributed"):
        chosen = sockets.private_dir(link)
    assert chosen != link and os.path.dirname(chosen) == str(tmp_path) and not os.path.islink(chosen)
    assert (os.stat(chosen).st_mode & 0o777) == 0o700 and os.stat(chosen).st_uid == os.getuid()
    assert link in caplog.text
    assert sockets.trusted_dirs(link, os.getuid()) == [chosen]   # where every process of the user looks
    assert sockets.private_dir(link) == chosen                   # and finds the same one again

    open_dir = tmp_path / "open" / f"tensorweave-{os.getuid()}"
    open_dir.parent.mkdir()
    open_dir.mkdir()
    os.chmod(open_dir, 0o777)   # the user's own: closed again (0700) and used
    assert sockets.private_dir(str(open_dir)) == str(open_dir) and (os.stat(open_dir).st_mode & 0o777) == 0o700


def test_shared_memory_in_a_squatted_directory_moves_to_a_private_one(shared_tmp, monkeypatch, caplog):
    """The shared-memory directory squatted by nobody (root runs this): buffers go to a private
    directory, a tensor put by one pool is read back by the receiving side."""
    _need_nobody()
    squatted = os.path.join(shared_tmp, f"tensorweave-{os.getuid()}")
    squat = "import os, sys; os.mkdir(sys.argv[1]); os.chmod(sys.argv[1], 0o777)"
    subprocess.run(["/usr/bin/python3", "-I", "-c", squat,
                    squatted], user=NOBODY, group=NOBODY, check=True, cwd="/")
    monkeypatch.setattr(shm, "_primary_dir", lambda: squatted)
    with caplog.at_level(logging.WARNING, logger="tensorweave.distributed"):
        directory = shm.directory()
    assert directory is not None and directory != squatted and squatted in caplog.text
    pool = shm.Pool()
    value = np.arange(1 << 16, dtype=np.float32)
    name, generation = pool.put(value)
    assert os.path.exists(os.path.join(directory, name)) and not os.listdir(squatted)
    back = shm.Attached().take(name, generation, value.dtype, value.shape, value.nbytes)
    assert np.array_equal(back, value)


def test_a_server_that_cannot_open_its_socket_says_so(start_cluster, tmp_path):
    """A socket path too long for AF_UNIX: the server serves over ZeroMQ and says why."""
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    c = start_cluster({"local": 1}, env={"TMPDIR": str(deep)})
    assert tf.Session(c.target("local", 0)).run(tf.constant(7)) == 7
    err = c.stderr("local", 0)
    port = c.address("local", 0).rpartition(":")[2]
    print(f"\nthe server said: {err.strip()!r}")
    assert "could not open the same-host socket" in err and port in err


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    directory = str(tmp_path_factory.mktemp("curve") / "keys")
    assert cli.main(["keygen", directory, "--client", "alice"]) == 0
    return directory


@pytest.fixture
def client_keys():
    """This process connects with the keys it is given (None: without keys)."""
    yield lambda directory: auth.configure(auth.keys_from_directory(directory) if directory else None)
    auth.configure(None)


def test_with_keys_a_same_host_connection_proves_its_key(start_cluster, keys, client_keys, tmp_path):
    """Authentication on, the transport left to choose (the Unix socket): a member's steps go
    over the Unix socket after the proof of key; a client with a key of its own, or none, is
    refused there as over TCP, and a raw request on the socket is answered only with the refusal."""
    c = start_cluster({"ps": 1}, env={"TENSORWEAVE_CURVE_DIR": keys})
    address = c.address("ps", 0)
    client_keys(os.path.join(keys, "clients", "alice"))
    ch = channel_mod.Channel(address, PS0, 5.0)
    try:
        assert ch.preferred_route().name == "unix"
        assert ch.call("get_status", {})["job"] == "ps"
        assert [type(x) for x in ch._free] == [uds.Conn]   # the call went over the Unix socket
    finally:
        ch.close()

    impostor = tmp_path / "impostor"
    impostor.mkdir()
    shutil.copy(os.path.join(keys, "cluster.key"), impostor / "cluster.key")
    auth._create(str(impostor), "client")   # a key pair of its own, not authorized
    client_keys(str(impostor))
    ch = channel_mod.Channel(address, PS0, 5.0)
    try:
        with pytest.raises(errors.UnavailableError, match="handshake failed for authentication.*not authorized"):
            ch.call("get_status", {})
    finally:
        ch.close()

    client_keys(None)
    ch = channel_mod.Channel(address, PS0, 5.0)
    try:
        assert ch.preferred_route().name == "unix"
        with pytest.raises(errors.UnauthenticatedError, match="prove a key"):
            ch.call("get_status", {})
    finally:
        ch.close()

    raw = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    raw.settimeout(10)
    raw.connect(uds.uds_path_of(address))
    raw.sendall(uds_bytes([raw_header({"id": 7, "m": "get_status", "a": {}})]))
    got = b""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        chunk = raw.recv(65536)
        if not chunk:
            break
        got += chunk
    raw.close()
    assert b"prove a key" in got and b'"job"' not in got and b"ps" not in got.replace(b"prove", b"")


def test_the_proof_of_key_uses_x25519_as_curve_does():
    """The same-host proof rests on X25519: RFC 7748's test vector, the public keys libzmq makes
    from secret keys, and one shared secret from either side; a client whose key pair does not
    match its public key cannot answer the server's welcome."""
    scalar = bytes.fromhex("a546e36bf0527c9d3b16154b82465edd62144c0ac1fc5a18506a2244ba449ac4")
    point = bytes.fromhex("e6db6867583030db3594c1a424b15f7c726624ec26b3353b10a903a6d0ab1c4c")
    assert auth.x25519(scalar, point).hex() == "c3da55379de9c6908e94ea4df28d084f32eccf03491c71f754b4075577a28552"
    (a_pub, a_sec), (b_pub, b_sec) = zmq.curve_keypair(), zmq.curve_keypair()
    base = (9).to_bytes(32, "little")
    assert z85.encode(auth.x25519(z85.decode(a_sec), base)) == a_pub
    shared = auth.x25519(z85.decode(a_sec), z85.decode(b_pub))
    assert shared == auth.x25519(z85.decode(b_sec), z85.decode(a_pub)) and shared != bytes(32)

    cluster, alice = zmq.curve_keypair(), zmq.curve_keypair()
    server = auth.CurveKeys(cluster[0], cluster[1], cluster[0], cluster[1], frozenset({cluster[0], alice[0]}))
    auth.configure(server)
    try:
        honest = auth.CurveKeys(cluster[0], None, alice[0], alice[1], frozenset())
        hello, nonce = auth.client_hello(honest)
        welcome, expected, who = auth.server_welcome(hello)
        assert who == alice[0] and auth.client_proof(honest, nonce, welcome) == [expected]
        liar = auth.CurveKeys(cluster[0], None, alice[0], zmq.curve_keypair()[1], frozenset())   # alice's name only
        hello, nonce = auth.client_hello(liar)
        welcome, expected, _ = auth.server_welcome(hello)
        with pytest.raises(auth.HandshakeFailed, match="no secret key of this cluster"):
            auth.client_proof(liar, nonce, welcome)   # (its shared secret differs: the server's proof fails)
        fake_server = auth.CurveKeys(cluster[0], None, alice[0], alice[1], frozenset())
        auth.configure(auth.CurveKeys(cluster[0], zmq.curve_keypair()[1], cluster[0], cluster[1],
                                      frozenset({cluster[0], alice[0]})))   # a server without the real secret
        hello, nonce = auth.client_hello(fake_server)
        with pytest.raises(auth.HandshakeFailed, match="no secret key of this cluster"):
            auth.client_proof(fake_server, nonce, auth.server_welcome(hello)[0])
    finally:
        auth.configure(None)
