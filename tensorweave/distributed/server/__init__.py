"""tf.train.Server: one task of a cluster, serving its worker service over its transports.

Run as a process: ``python -m tensorweave.distributed.server --cluster JSON --job_name J
--task_index I`` (or with TF_CONFIG set); the entry point is this package's __main__.py, so
runpy never re-executes this module (which it has already imported as the package). It
prints "SERVING <target>" once listening, stops cleanly on SIGTERM/SIGINT, and prints its
threads' stacks on SIGUSR1.

A Server lives until the process ends or stop() is called, whether or not the program
keeps a reference to it (TF's rule: TF1 programs create servers and drop them); join()
returns once it has really stopped serving.

Binding: a task listens on the address its ClusterSpec entry names when that is a loopback
address ("localhost", 127.x, ::1) or an address of one of this host's interfaces, and on all
interfaces otherwise (a host name: a Kubernetes service, a DNS name, which may resolve to an
address this host does not have). TENSORWEAVE_BIND_ADDRESS (or Server(bind_address=...),
`tensorweave server --bind_address`) overrides: an address, or "*" for all interfaces.

Every op kernel is registered before a server serves: it runs graphs other processes built, so this
module imports `tensorweave.ops` (all kernels), never the graph-building namespaces.
"""
from __future__ import annotations

import argparse
import faulthandler
import ipaddress
import json
import os
import signal
import socket
import sys
import threading
import time
from typing import Optional

import tensorweave.ops  # noqa: F401  (the registry: it loads the kernels of the ops in the graphs received)
from tensorweave.distributed import master  # noqa: F401  (the master side of Session("grpc://..."))
from tensorweave.distributed.cluster import ClusterSpec, free_ports, from_tf_config
from tensorweave.distributed.transport import TransportServer
from tensorweave.distributed.worker import WorkerService, register_local, unregister_local
from tensorweave.runtime import inter_op
from tensorweave.runtime.devices import visible_gpus
from tensorweave.framework import errors
from tensorweave.framework.tf_export import tf_export
from tensorweave.framework.tf_protos import ServerDef


_ALL_INTERFACES = ("*", "0.0.0.0", "::", "[::]", "all")
_LIVE_SERVERS: set = set()   # started, not stopped: alive whether or not the program keeps them


def bind_endpoint(address: str, bind_address: Optional[str] = None) -> str:
    """The ZeroMQ endpoint a task at `address` ("host:port") listens on (see the module
    docstring): the override, else the named address when it is this host's, else all
    interfaces."""
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        raise errors.InvalidArgumentError(None, None, f"Could not parse task address {address!r}: expected host:port")
    override = bind_address or os.environ.get("TENSORWEAVE_BIND_ADDRESS", "").strip()
    if override:
        chosen = "*" if override in _ALL_INTERFACES else override
    else:
        chosen = _bind_host(host)
    if ":" in chosen and not chosen.startswith("["):
        chosen = f"[{chosen}]"
    return f"tcp://{chosen}:{port}"


def _bind_host(host: str) -> str:
    name = host.strip("[]")
    if name in _ALL_INTERFACES or not name:
        return "*"
    if name == "localhost":
        return "127.0.0.1"
    try:
        ip = ipaddress.ip_address(name)
    except ValueError:
        return "*"   # a host name: it may resolve elsewhere to an address this host does not have
    if ip.is_loopback or _is_local_interface(ip):
        return str(ip)
    return "*"


def _is_local_interface(ip) -> bool:
    """Whether `ip` is an address of one of this host's interfaces (one can bind it)."""
    family = socket.AF_INET6 if ip.version == 6 else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_STREAM) as s:
            s.bind((str(ip), 0))
        return True
    except OSError:
        return False


@tf_export("distribute.Server", "train.Server")
class Server:
    """tf.train.Server(server_or_cluster_def, job_name=None, task_index=None, protocol=None,
    config=None, start=True): an in-process server of one task of the cluster.
    `server_or_cluster_def` is a tf.train.ServerDef (the other arguments, when given, override
    its fields), a tf.train.ClusterDef, a tf.train.ClusterSpec or a dict ClusterSpec accepts."""

    def __init__(self, server_or_cluster_def, job_name: Optional[str] = None, task_index: Optional[int] = None,
                 protocol: Optional[str] = None, config=None, start: bool = True, bind_address: Optional[str] = None):
        if isinstance(server_or_cluster_def, ServerDef):
            # TF's rule: the arguments given override the ServerDef's fields
            server_def = server_or_cluster_def
            cluster = ClusterSpec(server_def.cluster)
            job_name = job_name or server_def.job_name or None
            task_index = server_def.task_index if task_index is None else task_index
            protocol = protocol or server_def.protocol or None
            if config is None and server_def.HasField("default_session_config"):
                config = server_def.default_session_config
        else:
            cluster = ClusterSpec(server_or_cluster_def)
        if protocol not in (None, "grpc", "zmq"):
            raise ValueError(f"Unsupported protocol {protocol!r}: tensorweave serves 'grpc' targets over ZeroMQ")
        if job_name is None:
            if len(cluster.jobs) != 1:
                raise ValueError("Must specify an explicit `job_name` when the cluster has more than one job.")
            job_name = cluster.jobs[0]
        if job_name not in cluster.jobs:
            raise ValueError(f"Job {job_name!r} is not in the cluster {cluster.as_dict()}")
        if task_index is None:
            indices = cluster.task_indices(job_name)
            if len(indices) != 1:
                raise ValueError(f"Must specify an explicit `task_index` when job {job_name!r} has more than one task.")
            task_index = indices[0]
        task_index = int(task_index)
        if task_index not in cluster.task_indices(job_name):
            raise ValueError(f"Task {task_index} is not in job {job_name!r} of the cluster {cluster.as_dict()}")
        self._cluster = cluster
        self._job_name = job_name
        self._task_index = task_index
        self._config = config
        self._address = cluster.task_address(job_name, task_index)
        self._protocol = protocol or "grpc"
        cpus = config.device_count.get("CPU", 1) if config is not None else 1
        self.service = WorkerService(cluster, job_name, task_index, cpus=cpus, gpus=visible_gpus(config),
                                     inter_op_pool=inter_op.server_pool(config))
        try:
            self._bind = bind_endpoint(self._address, bind_address)
            self._transport = TransportServer(self._address, self._bind, self.service.dispatch, self.service.ping,
                                              self.service.may_inline, oneway=self.service.oneway,
                                              tick=self.service.tick, may_block=self.service.may_block)
        except errors.UnknownError as e:
            raise errors.UnknownError(
                None, None, f"Could not start server for /job:{job_name}/task:{task_index} at {self._address}: "
                            f"{e.message}") from None
        self._started = False
        self._stopped = threading.Event()
        if start:
            self.start()

    @property
    def server_def(self) -> ServerDef:
        """The tf.train.ServerDef of this server: cluster, job_name, task_index, protocol, and the
        default_session_config of a ServerDef it was started from (a tf.ConfigProto record given as
        `config` is not a protocol buffer and is not carried)."""
        server_def = ServerDef(cluster=self._cluster.as_cluster_def(), job_name=self._job_name,
                               task_index=self._task_index, protocol=self._protocol)
        if isinstance(self._config, type(server_def.default_session_config)):
            server_def.default_session_config.CopyFrom(self._config)
        return server_def

    @property
    def target(self) -> str:
        """The target a Session uses to reach this server: 'grpc://localhost:<port>', or
        'grpc://<address>:<port>' when it listens on one non-loopback address only."""
        host = self._bind.partition("://")[2].rpartition(":")[0]
        if host in ("*", "") or host.startswith("127.") or host == "[::1]":
            host = "localhost"
        return f"grpc://{host}:{self._address.rpartition(':')[2]}"

    def start(self) -> None:
        """Starts serving (a no-op when already started)."""
        if self._stopped.is_set():
            raise errors.FailedPreconditionError(None, None, "Server has been stopped and cannot be restarted")
        if self._started:
            return
        self._started = True
        _LIVE_SERVERS.add(self)   # serves on when the program drops its reference (TF's rule)
        self._transport.start()
        register_local(self._address, self.service)
        register_local(self.target, self.service)

    def join(self) -> None:
        """Blocks until the server has stopped serving: stopped, or its transport ended."""
        while not self._stopped.is_set():
            if self._started and not self._transport.serving:
                break
            self._stopped.wait(0.5)
        if self._started:
            self._transport.wait()

    @property
    def serving(self) -> bool:
        """Whether the server is started and its transport still serves."""
        return self._started and not self._stopped.is_set() and self._transport.serving

    def stop(self) -> None:
        """Stops serving; join() returns. (TF servers cannot be stopped; tests and embedding
        programs can stop these.)"""
        if self._stopped.is_set():
            return
        unregister_local(self._address, self.service)
        unregister_local(self.target, self.service)
        self._transport.stop()
        self._stopped.set()
        _LIVE_SERVERS.discard(self)

    @staticmethod
    def create_local_server(config=None, start: bool = True) -> "Server":
        """A one-task server {"local": ["localhost:<free port>"]} (tf.train.Server.create_local_server)."""
        return Server({"local": [f"localhost:{free_ports(1)[0]}"]}, job_name="local", task_index=0,
                      protocol="grpc", config=config, start=start)


def running_server(cluster, job_name: str, task_index: int) -> Optional[Server]:
    """The started server of /job:`job_name`/task:`task_index` of `cluster` in this process, if any
    (TF's distribute coordinator starts a task's standard server only when none serves it yet)."""
    address = ClusterSpec(cluster).task_address(job_name, int(task_index))
    return next((s for s in list(_LIVE_SERVERS) if s.serving and s._address == address
                 and (s._job_name, s._task_index) == (job_name, int(task_index))), None)


# -- the server process ------------------------------------------------------------------------
def build_parser(parser: Optional[argparse.ArgumentParser] = None) -> argparse.ArgumentParser:
    parser = parser or argparse.ArgumentParser(prog="python -m tensorweave.distributed.server",
                                               description="Serve one task of a tensorweave cluster.")
    parser.add_argument("--cluster", help='cluster as JSON, e.g. \'{"ps": ["localhost:2222"]}\' '
                                          "(default: TF_CONFIG's cluster)")
    parser.add_argument("--job_name", help="this task's job (default: TF_CONFIG's task.type)")
    parser.add_argument("--task_index", type=int, help="this task's index (default: TF_CONFIG's task.index)")
    parser.add_argument("--bind_address", help="listen on this address ('*': all interfaces) instead of the one "
                                               "the rule picks (see TENSORWEAVE_BIND_ADDRESS)")
    return parser


def serve(args: argparse.Namespace) -> int:
    """Runs one task until SIGTERM/SIGINT; returns the exit status. A crash, or SIGUSR1 (for a
    task that hangs), prints every thread's stack to stderr."""
    faulthandler.enable()
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    env_cluster, env_job, env_index = from_tf_config()
    cluster = ClusterSpec(json.loads(args.cluster)) if args.cluster else env_cluster
    job = args.job_name or env_job
    index = args.task_index if args.task_index is not None else env_index
    if cluster is None:
        print("error: no cluster given (--cluster JSON or TF_CONFIG)", file=sys.stderr)
        return 2
    try:
        server = Server(cluster, job_name=job, task_index=index, bind_address=getattr(args, "bind_address", None))
    except (ValueError, errors.OpError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1

    signals: list = []

    def on_signal(signum, frame):
        # Only a list append: the handler runs between two bytecodes of the main thread, which
        # may hold any lock then (an Event's, inside its wait): taking one here could deadlock.
        signals.append(signum)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    print(f"SERVING {server.target} /job:{server._job_name}/task:{server._task_index} "
          f"incarnation={server.service.incarnation}", flush=True)
    while not signals and server.serving:
        time.sleep(0.1)
    if signals:
        server.stop()
    server.join()
    if not server._stopped.is_set():
        print("error: the server's transport stopped unexpectedly", file=sys.stderr)
        return 1
    return 0


def main(argv=None) -> int:
    return serve(build_parser().parse_args(argv))
