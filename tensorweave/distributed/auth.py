"""Authentication and encryption for a whole cluster: ZeroMQ CURVE (pyzmq's, libsodium-backed).

Off by default; one setting, the same on every task and client, turns it on:

  TENSORWEAVE_CURVE_DIR=/path    a directory (a mounted Kubernetes Secret, say) holding
      cluster.key         the cluster's public key: every task and client needs it
      cluster.key_secret  the cluster's key pair: every task needs it (a process that has it
                          connects to the others with it too)
      client.key_secret   optional: this process's own key pair, for a client that is not a
                          task and is not given the cluster's secret
      authorized/*.key    optional: the public keys of such clients, which tasks admit

or the same keys as Z85 text in the environment (a Secret mapped to variables):
  TENSORWEAVE_CURVE_PUBLIC_KEY, TENSORWEAVE_CURVE_SECRET_KEY (the cluster's pair),
  TENSORWEAVE_CURVE_CLIENT_PUBLIC_KEY, TENSORWEAVE_CURVE_CLIENT_SECRET_KEY (a client's own),
  TENSORWEAVE_CURVE_AUTHORIZED_KEYS (comma-separated public keys).

`tensorweave keygen DIR [--client NAME ...]` writes these files.

A task admits a connection whose client key is the cluster's or an authorized one: anyone
else fails the CURVE handshake (the ZAP handler below says no) before ZeroMQ hands over a
single message of theirs. Every tcp:// and ipc:// message is then encrypted. The same-host
Unix socket (uds.py) admits only processes of the server's user id and, with keys on, only
after the same proof of key (`hello`/`welcome`/`proof` below: each side shows it holds the
secret of its public key, by X25519 and an HMAC over both sides' nonces); its messages are not
encrypted (they never leave the host, and no other user can reach the socket).

Revocation: the authorized keys of TENSORWEAVE_CURVE_DIR are read again when authorized/ or a
file in it changes (looked at, at most every REREAD_S, by every handshake and by the servers'
sweeps): a removed key's next connection is refused, and a server closes the same-host
connections of a removed key and refuses every further request on its ZeroMQ connections.
`tensorweave keygen DIR --revoke NAME` removes authorized/NAME.key (and clients/NAME/).
"""
from __future__ import annotations

import glob
import hashlib
import hmac
import logging
import os
import shutil
import threading
import time
from dataclasses import dataclass, field
from typing import Optional

import zmq
import zmq.auth
from zmq.utils import z85

ZAP_DOMAIN = "tensorweave"
_ENV_DIR = "TENSORWEAVE_CURVE_DIR"
REREAD_S = 0.2   # the authorized keys' files are looked at no more often than this
_log = logging.getLogger("tensorweave.distributed")


@dataclass(frozen=True)
class CurveKeys:
    """The keys of one process, Z85-encoded."""
    server_public: bytes                # the cluster's public key (what clients check servers by)
    server_secret: Optional[bytes]      # the cluster's secret key (None: this process cannot serve)
    client_public: bytes                # the key pair this process connects with
    client_secret: bytes
    authorized: frozenset               # client public keys servers admit (the cluster's included)
    directory: Optional[str] = field(default=None, compare=False)   # where they were read (re-read on change)


def _z85(value: str, what: str) -> bytes:
    key = value.strip().encode("ascii")
    if len(key) != 40:
        raise ValueError(f"{what} must be a 40-character Z85 CURVE key, got {len(key)} characters")
    return key


def _load(path: str, want_secret: bool) -> tuple:
    try:
        public, secret = zmq.auth.load_certificate(path)
    except (OSError, ValueError) as e:
        raise ValueError(f"Cannot read the CURVE key file {path}: {e}") from None
    if want_secret and not secret:
        raise ValueError(f"{path} holds no secret key")
    return public, secret


def keys_from_directory(directory: str) -> CurveKeys:
    """The keys under TENSORWEAVE_CURVE_DIR (see the module docstring)."""
    cluster_public, cluster_secret = None, None
    secret_file = os.path.join(directory, "cluster.key_secret")
    if os.path.exists(secret_file):
        cluster_public, cluster_secret = _load(secret_file, True)
    else:
        cluster_public, _ = _load(os.path.join(directory, "cluster.key"), False)
    client_file = os.path.join(directory, "client.key_secret")
    if os.path.exists(client_file):
        client_public, client_secret = _load(client_file, True)
    elif cluster_secret is not None:
        client_public, client_secret = cluster_public, cluster_secret
    else:
        raise ValueError(f"{directory} holds neither cluster.key_secret nor client.key_secret: this process "
                         "has no key pair to connect with")
    authorized = {cluster_public}
    for path in sorted(glob.glob(os.path.join(directory, "authorized", "*.key"))):
        authorized.add(_load(path, False)[0])
    return CurveKeys(cluster_public, cluster_secret, client_public, client_secret, frozenset(authorized), directory)


def _authorized_files(directory: str) -> tuple:
    """What tells a change of authorized/: its own mtime and each key file's name, mtime, size."""
    folder = os.path.join(directory, "authorized")
    try:
        seen = [("", os.stat(folder).st_mtime_ns, 0)]
    except OSError:
        return ()
    for path in sorted(glob.glob(os.path.join(folder, "*.key"))):
        try:
            st = os.stat(path)
        except OSError:
            continue   # (removed meanwhile)
        seen.append((path, st.st_mtime_ns, st.st_size))
    return tuple(seen)


class _Authorized:
    """The client keys admitted now: those of the configured keys, read again from their
    directory when it changed (a key file that cannot be read is left out and named)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._keys: Optional[CurveKeys] = None
        self._files: tuple = ()
        self._checked = 0.0
        self.allowed: frozenset = frozenset()

    def reset(self, k: Optional[CurveKeys]) -> None:
        with self._lock:
            self._keys, self._checked = k, 0.0
            self._files = _authorized_files(k.directory) if k is not None and k.directory else ()
            self.allowed = k.authorized if k is not None else frozenset()

    def now(self) -> frozenset:
        k = self._keys
        if k is None or k.directory is None or time.monotonic() - self._checked < REREAD_S:
            return self.allowed
        with self._lock:
            self._checked = time.monotonic()
            files = _authorized_files(k.directory)
            if files != self._files:
                allowed = {k.server_public}
                for path, _, _ in files[1:]:
                    try:
                        allowed.add(_load(path, False)[0])
                    except ValueError as e:
                        _log.warning("auth: %s: left out of the authorized keys", e)
                self._files, self.allowed = files, frozenset(allowed)
        return self.allowed


_AUTHORIZED = _Authorized()


def authorized() -> frozenset:
    """The client public keys a server of this process admits now (empty with keys off)."""
    if not _configured:
        keys()
    return _AUTHORIZED.now()


def keys_from_environment(env=None) -> Optional[CurveKeys]:
    """The keys the environment configures, or None when authentication is off."""
    env = os.environ if env is None else env
    directory = env.get(_ENV_DIR, "").strip()
    if directory:
        return keys_from_directory(directory)
    public = env.get("TENSORWEAVE_CURVE_PUBLIC_KEY", "").strip()
    if not public:
        return None
    server_public = _z85(public, "TENSORWEAVE_CURVE_PUBLIC_KEY")
    raw_secret = env.get("TENSORWEAVE_CURVE_SECRET_KEY", "").strip()
    server_secret = _z85(raw_secret, "TENSORWEAVE_CURVE_SECRET_KEY") if raw_secret else None
    client_public = env.get("TENSORWEAVE_CURVE_CLIENT_PUBLIC_KEY", "").strip()
    if client_public:
        client = (_z85(client_public, "TENSORWEAVE_CURVE_CLIENT_PUBLIC_KEY"),
                  _z85(env.get("TENSORWEAVE_CURVE_CLIENT_SECRET_KEY", ""), "TENSORWEAVE_CURVE_CLIENT_SECRET_KEY"))
    elif server_secret is not None:
        client = (server_public, server_secret)
    else:
        raise ValueError("TENSORWEAVE_CURVE_PUBLIC_KEY is set without TENSORWEAVE_CURVE_SECRET_KEY or a client "
                         "key pair (TENSORWEAVE_CURVE_CLIENT_PUBLIC_KEY/_SECRET_KEY)")
    authorized = {server_public}
    for k in env.get("TENSORWEAVE_CURVE_AUTHORIZED_KEYS", "").split(","):
        if k.strip():
            authorized.add(_z85(k, "each of TENSORWEAVE_CURVE_AUTHORIZED_KEYS"))
    return CurveKeys(server_public, server_secret, client[0], client[1], frozenset(authorized))


_configured: list = []        # [CurveKeys or None] once read
_lock = threading.Lock()
_authenticator: list = []     # the process's ZAP handler, started with its first secured server


def keys() -> Optional[CurveKeys]:
    """This process's keys (read from the environment once), or None when authentication is off."""
    if not _configured:
        with _lock:
            if not _configured:
                k = keys_from_environment()
                _AUTHORIZED.reset(k)
                _configured.append(k)
    return _configured[0]


def configure(curve_keys: Optional[CurveKeys]) -> None:
    """Sets this process's keys in place of the environment's (None: authentication off).
    Sockets made before keep what they had."""
    with _lock:
        _AUTHORIZED.reset(curve_keys)
        _configured[:] = [curve_keys]


def secure_client(sock: zmq.Socket) -> None:
    """Makes a client socket authenticate with this process's key pair, when one is configured."""
    k = keys()
    if k is None:
        return
    sock.curve_serverkey = k.server_public
    sock.curve_publickey = k.client_public
    sock.curve_secretkey = k.client_secret


class _AllowedKeys:
    """The ZAP handler's verdict on a client key: the cluster's key or one authorized now."""

    def callback(self, domain: str, key: bytes) -> bool:
        return key in authorized()


def secure_server(sock: zmq.Socket) -> None:
    """Makes a server socket a CURVE server admitting only the authorized keys, when keys
    are configured (before it binds: a connection accepted earlier would not be checked)."""
    k = keys()
    if k is None:
        return
    if k.server_secret is None:
        raise ValueError("Authentication is on but this process has no cluster secret key (cluster.key_secret or "
                         "TENSORWEAVE_CURVE_SECRET_KEY): it cannot serve")
    with _lock:
        if not _authenticator:
            # Imported here, when a server first authenticates: zmq.auth.thread loads asyncio and
            # ssl (~50 ms), which every process of a cluster without keys would pay at start-up.
            from zmq.auth.thread import ThreadAuthenticator
            auth = ThreadAuthenticator(sock.context)
            auth.start()
            auth.configure_curve_callback(domain=ZAP_DOMAIN, credentials_provider=_AllowedKeys())
            _authenticator.append(auth)
    sock.zap_domain = ZAP_DOMAIN.encode()
    sock.curve_server = True
    sock.curve_publickey = k.server_public
    sock.curve_secretkey = k.server_secret


# -- the same-host proof of key (uds.py) -----------------------------------------------------------
HELLO = b"tensorweave-curve-1"   # the first frame of a client's hello on a same-host socket


def x25519(scalar: bytes, point: bytes) -> bytes:
    """RFC 7748's X25519 (the Diffie-Hellman function of CURVE's keys), 32 bytes each, by the
    `cryptography` package; ValueError for a low-order point (an all-zero shared secret)."""
    # (imported here, by a cluster with keys only, not at every task's start-up)
    from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
    return X25519PrivateKey.from_private_bytes(scalar).exchange(X25519PublicKey.from_public_bytes(point))


_shared_cache: dict = {}


def _shared(secret: bytes, public: bytes) -> bytes:
    """The X25519 secret of a Z85 secret key and a Z85 public key (cached)."""
    key = (secret, public)
    got = _shared_cache.get(key)
    if got is None:
        got = x25519(z85.decode(secret), z85.decode(public))
        if len(_shared_cache) < 1024:
            _shared_cache[key] = got
    return got


def _mac(shared: bytes, role: bytes, client_public: bytes, client_nonce: bytes, server_nonce: bytes) -> bytes:
    return hmac.new(shared, role + client_public + client_nonce + server_nonce, hashlib.sha256).digest()


class HandshakeFailed(Exception):
    """A same-host handshake failed for authentication: the text says how."""


def client_hello(k: CurveKeys) -> tuple:
    """(the client's hello frames, its nonce)."""
    nonce = os.urandom(32)
    return [HELLO, k.client_public, nonce], nonce


def server_welcome(frames: list) -> tuple:
    """The server's answer to a hello: (reply frames, the proof expected from the client, the
    client's public key); the proof is None when the client is refused (the reply says why)."""
    k = keys()
    if k is None or k.server_secret is None:
        return [b"no", b"this task serves without authentication"], None, None
    if len(frames) != 3 or bytes(frames[0]) != HELLO or len(frames[1]) != 40 or len(frames[2]) != 32:
        return [b"no", b"a malformed hello"], None, None
    client_public, client_nonce = bytes(frames[1]), bytes(frames[2])
    if client_public not in authorized():
        return [b"no", b"this client's key is not authorized"], None, None
    try:
        shared = _shared(k.server_secret, client_public)
    except ValueError:
        return [b"no", b"a malformed key"], None, None
    nonce = os.urandom(32)
    proof = _mac(shared, b"client", client_public, client_nonce, nonce)
    return [b"ok", nonce, _mac(shared, b"server", client_public, client_nonce, nonce)], proof, client_public


def client_proof(k: CurveKeys, client_nonce: bytes, reply: list) -> list:
    """The client's proof frames for the server's welcome, once the server proved it holds the
    cluster's secret key; HandshakeFailed otherwise."""
    if len(reply) == 2 and bytes(reply[0]) == b"no":
        raise HandshakeFailed(f"the task refused the handshake: {bytes(reply[1]).decode('utf-8', 'replace')}")
    if len(reply) != 3 or bytes(reply[0]) != b"ok" or len(reply[1]) != 32:
        raise HandshakeFailed("the task answered the handshake with something else (is it serving without "
                              "authentication, or is it not a tensorweave task?)")
    shared = _shared(k.client_secret, k.server_public)
    server_nonce = bytes(reply[1])
    if not hmac.compare_digest(bytes(reply[2]), _mac(shared, b"server", k.client_public, client_nonce, server_nonce)):
        raise HandshakeFailed("the process at the other end holds no secret key of this cluster")
    return [_mac(shared, b"client", k.client_public, client_nonce, server_nonce)]


def revoke(directory: str, name: str) -> list:
    """`tensorweave keygen DIR --revoke NAME`: removes authorized/NAME.key (servers refuse the
    key from then on and close its connections) and clients/NAME/. Returns what it removed."""
    if not name or os.sep in name or name.startswith("."):
        raise ValueError(f"Bad client name {name!r}")
    authorized_key = os.path.join(directory, "authorized", f"{name}.key")
    home = os.path.join(directory, "clients", name)
    if not os.path.exists(authorized_key):
        raise FileNotFoundError(f"{authorized_key} does not exist: no client {name!r} is authorized in {directory}")
    os.unlink(authorized_key)
    removed = [authorized_key]
    if os.path.isdir(home):
        shutil.rmtree(home)
        removed.append(home)
    return removed


def write_keys(directory: str, clients: tuple = ()) -> list:
    """`tensorweave keygen`: writes a cluster key pair to `directory` (cluster.key,
    cluster.key_secret) and, for each client name, a ready-to-ship directory
    clients/<name>/ (cluster.key and its own client.key_secret) whose public key goes to
    authorized/<name>.key. Refuses to overwrite a cluster key pair. Returns the files written."""
    os.makedirs(directory, mode=0o700, exist_ok=True)
    written = []
    if not os.path.exists(os.path.join(directory, "cluster.key_secret")):
        written += _create(directory, "cluster")
    elif not clients:
        raise FileExistsError(f"{directory} already holds a cluster key pair")
    cluster_public = os.path.join(directory, "cluster.key")
    for name in clients:
        if not name or os.sep in name or name.startswith("."):
            raise ValueError(f"Bad client name {name!r}")
        home = os.path.join(directory, "clients", name)
        os.makedirs(home, mode=0o700, exist_ok=True)
        pub, secret = _create(home, "client")
        with open(cluster_public, "rb") as src, open(os.path.join(home, "cluster.key"), "wb") as dst:
            dst.write(src.read())
        os.makedirs(os.path.join(directory, "authorized"), exist_ok=True)
        authorized = os.path.join(directory, "authorized", f"{name}.key")
        with open(pub, "rb") as src, open(authorized, "wb") as dst:
            dst.write(src.read())
        written += [pub, secret, os.path.join(home, "cluster.key"), authorized]
    return written


def _create(directory: str, name: str) -> list:
    old = os.umask(0o077)   # secret files readable by their owner only
    try:
        public, secret = zmq.auth.create_certificates(directory, name)
    finally:
        os.umask(old)
    return [public, secret]
