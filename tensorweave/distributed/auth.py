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
Unix socket (uds.py) carries no key: it admits only processes of this user id, who could
read the key files anyway.
"""
from __future__ import annotations

import glob
import os
import threading
from dataclasses import dataclass
from typing import Optional

import zmq
import zmq.auth

ZAP_DOMAIN = "tensorweave"
_ENV_DIR = "TENSORWEAVE_CURVE_DIR"


@dataclass(frozen=True)
class CurveKeys:
    """The keys of one process, Z85-encoded."""
    server_public: bytes                # the cluster's public key (what clients check servers by)
    server_secret: Optional[bytes]      # the cluster's secret key (None: this process cannot serve)
    client_public: bytes                # the key pair this process connects with
    client_secret: bytes
    authorized: frozenset               # client public keys servers admit (the cluster's included)


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
    return CurveKeys(cluster_public, cluster_secret, client_public, client_secret, frozenset(authorized))


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
                _configured.append(keys_from_environment())
    return _configured[0]


def configure(curve_keys: Optional[CurveKeys]) -> None:
    """Sets this process's keys in place of the environment's (None: authentication off).
    Sockets made before keep what they had."""
    with _lock:
        _configured[:] = [curve_keys]
        if _authenticator and curve_keys is not None:
            _authenticator[0].allowed = curve_keys.authorized


def secure_client(sock: zmq.Socket) -> None:
    """Makes a client socket authenticate with this process's key pair, when one is configured."""
    k = keys()
    if k is None:
        return
    sock.curve_serverkey = k.server_public
    sock.curve_publickey = k.client_public
    sock.curve_secretkey = k.client_secret


class _AllowedKeys:
    """The ZAP handler's verdict on a client key: the cluster's key or an authorized one."""

    def __init__(self, allowed: frozenset):
        self.allowed = allowed

    def callback(self, domain: str, key: bytes) -> bool:
        return key in self.allowed


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
            provider = _AllowedKeys(k.authorized)
            auth = ThreadAuthenticator(sock.context)
            auth.start()
            auth.configure_curve_callback(domain=ZAP_DOMAIN, credentials_provider=provider)
            _authenticator.append(provider)
            _authenticator.append(auth)
        else:
            _authenticator[0].allowed = k.authorized
    sock.zap_domain = ZAP_DOMAIN.encode()
    sock.curve_server = True
    sock.curve_publickey = k.server_public
    sock.curve_secretkey = k.server_secret


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
