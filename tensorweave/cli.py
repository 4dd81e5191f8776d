"""The `tensorweave` command line: `server` (one task), `launch` (a local cluster of
processes, like torchrun), `status` (which tasks of a cluster answer), `keygen` (the keys
of a cluster that authenticates and encrypts its traffic, distributed/auth.py), `saved_model`
(TF's saved_model_cli: show and run a SavedModel's signatures) and `serve` (TensorFlow Serving's
REST API over a model directory's versions; serving/).

    tensorweave server --ps_hosts=localhost:2222 --worker_hosts=localhost:2223 --job_name=ps --task_index=0
    tensorweave launch --ps 1 --workers 2 trainer.py --job_name={job_name} --task_index={task_index}
    tensorweave launch --ps 1 --chief 1 --workers 2 --evaluator 1 estimator_trainer.py   # by TF_CONFIG
    tensorweave launch --workers 2 mwms_trainer.py   # no ps: MultiWorkerMirroredStrategy's collectives
    tensorweave launch --ps 1 --workers 2 --num_gpus 2 trainer.py   # a GPU per worker, the ps on its CPU
    tensorweave status --cluster '{"ps": ["localhost:2222"], "worker": ["localhost:2223"]}'
    tensorweave keygen ./keys --client laptop     # then TENSORWEAVE_CURVE_DIR=./keys on every task
    tensorweave saved_model show --dir /models/mnist/1 --all
    tensorweave serve --model_dir /models/mnist --model_name mnist --port 8501
"""
from __future__ import annotations

import argparse
import ctypes
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from typing import Callable, Optional

from tensorweave import __version__
from tensorweave.distributed import auth
from tensorweave.distributed.cluster import free_ports, from_tf_config
from tensorweave.framework.limits import available_cores

# The server, master and worker modules load the op library (every kernel): each command that needs
# them imports them itself, so `tensorweave --help`, `launch` and `keygen` start fast.


# -- cluster arguments shared by the subcommands -------------------------------------------------
def _add_cluster_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--cluster", help='the cluster as JSON, e.g. \'{"ps": ["localhost:2222"], "worker": [...]}\'')
    p.add_argument("--ps_hosts", help="comma-separated host:port list of the ps job")
    p.add_argument("--worker_hosts", help="comma-separated host:port list of the worker job")
    p.add_argument("--chief_hosts", help="comma-separated host:port list of the chief job")


def _cluster_from_args(args) -> Optional[dict]:
    """The cluster dict from --cluster, --*_hosts or TF_CONFIG (in that order), or None."""
    if getattr(args, "cluster", None):
        return json.loads(args.cluster)
    jobs = {}
    for job in ("chief", "ps", "worker"):
        hosts = getattr(args, f"{job}_hosts", None)
        if hosts:
            jobs[job] = [h.strip() for h in hosts.split(",") if h.strip()]
    if jobs:
        return jobs
    cluster = from_tf_config()[0]
    return cluster.as_dict() if cluster else None


# -- server ----------------------------------------------------------------------------------------
def cmd_server(args) -> int:
    """Serves one task until SIGTERM/SIGINT."""
    from tensorweave.distributed import server as server_lib
    cluster = _cluster_from_args(args)
    ns = argparse.Namespace(cluster=json.dumps(cluster) if cluster else None, job_name=args.job_name,
                            task_index=args.task_index, bind_address=args.bind_address)
    return server_lib.serve(ns)


# -- launch ----------------------------------------------------------------------------------------
_AFTER_LINE_END = re.compile(rb"(?<=[\r\n])")


def _pump(stream, out, prefix: str) -> None:
    """Copies a task's output, prefixing every line; a line ended by a carriage return (a progress
    line redrawn in place) stays one, so a terminal redraws it while a log file keeps each. Only
    whole lines are written, each chunk in one write: two tasks' lines never mix (a print reaches
    the pipe as its text, then its newline)."""
    tag = prefix.encode()
    pending = b""
    for chunk in iter(lambda: stream.read1(65536), b""):
        lines = _AFTER_LINE_END.split((pending + chunk).replace(b"\r\n", b"\n"))
        pending = lines.pop()   # the unfinished end (b"" after a line end)
        if lines:
            out.buffer.write(b"".join(tag + line for line in lines))
            out.buffer.flush()
    if pending:
        out.buffer.write(tag + pending + b"\n")
        out.buffer.flush()
    stream.close()


def _die_with_launcher() -> Optional[Callable[[], None]]:
    """On Linux, a child's request to be killed when the launcher is gone (even SIGKILLed, which
    leaves it no chance to stop its tasks). SIGKILL, not SIGTERM: a task's graceful stop waits on
    its peers, which are going too. Resolved here, before any fork: the child only makes the one
    system call."""
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    return lambda: prctl(1, signal.SIGKILL)   # PR_SET_PDEATHSIG


_DIE_WITH_LAUNCHER = _die_with_launcher() if sys.platform.startswith("linux") else None


class _Task:
    def __init__(self, job: str, index: int, cmd: list, env: dict, main: bool, prefix: bool):
        self.job, self.index, self.main = job, index, main
        self.proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     start_new_session=True, preexec_fn=_DIE_WITH_LAUNCHER)
        tag = f"[{job}:{index}] " if prefix else ""
        self.pumps = [threading.Thread(target=_pump, args=(self.proc.stdout, sys.stdout, tag), daemon=True),
                      threading.Thread(target=_pump, args=(self.proc.stderr, sys.stderr, tag), daemon=True)]
        for t in self.pumps:
            t.start()

    def stop(self, grace_s: float) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(grace_s)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
            except ProcessLookupError:
                pass


def launch_cluster_spec(ps: int, workers: int, chief: int, host: str, port: int) -> dict:
    counts = [("chief", chief), ("ps", ps), ("worker", workers)]
    n = sum(c for _, c in counts)
    ports = list(range(port, port + n)) if port else free_ports(n, host)
    cluster = {}
    for job, c in counts:
        if c:
            cluster[job] = [f"{host}:{ports.pop(0)}" for _ in range(c)]
    return cluster


BLAS_THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def blas_threads_env(num_tasks: int) -> dict:
    """The cores shared out between the tasks, as BLAS thread counts (as torchrun sets
    OMP_NUM_THREADS): several processes each running a BLAS thread per core on the same cores
    spend their time spinning against each other (ps training ran 3-4x slower). The cores are
    those the launcher may use, a container's CPU quota included. Nothing is set when the user
    chose any of these variables."""
    if any(v in os.environ for v in BLAS_THREAD_VARS):
        return {}
    per_task = str(max(1, available_cores() // max(1, num_tasks)))
    return {v: per_task for v in BLAS_THREAD_VARS}


def present_gpus() -> list:
    """The CUDA ids of this machine's GPUs a launch may hand out: CUDA_VISIBLE_DEVICES's, else all."""
    listed = os.environ.get("CUDA_VISIBLE_DEVICES")
    if listed is not None:
        return [x.strip() for x in listed.split(",") if x.strip() and not x.strip().startswith("-")]
    from tensorweave.runtime.devices import physical_gpu_count
    return [str(i) for i in range(physical_gpu_count())]


def gpu_shares(roles: list, gpus: list) -> dict:
    """{(job, index): CUDA_VISIBLE_DEVICES} for a launch: ps tasks hold variables on their CPU and
    get no GPU; the other tasks get the GPUs shared out in contiguous blocks (with fewer GPUs than
    tasks, tasks share one), so each trains a tower per GPU it sees."""
    trainers = [r for r in roles if r[0] != "ps"]
    shares = {r: "" for r in roles}
    n, g = len(trainers), len(gpus)
    for k, role in enumerate(trainers if gpus else ()):
        shares[role] = ",".join(gpus[k * g // n:(k + 1) * g // n] if g >= n else [gpus[k % g]])
    return shares


def cmd_launch(args) -> int:
    """Starts one process per task with TF_CONFIG set; stops them all when the script's
    non-ps tasks are done, when one fails, or on Ctrl-C/SIGTERM."""
    cluster = launch_cluster_spec(args.ps, args.workers, args.chief, args.host, args.port)
    if not cluster:
        print("tensorweave launch: the cluster is empty (use --ps/--workers/--chief)", file=sys.stderr)
        return 2
    if args.evaluator and not args.script:
        print("tensorweave launch: --evaluator runs the script as the evaluator task: give a script",
              file=sys.stderr)
        return 2
    print(f"tensorweave launch: cluster {json.dumps(cluster)}", file=sys.stderr, flush=True)
    blas_env = blas_threads_env(sum(len(a) for a in cluster.values()))
    if blas_env:
        print(f"tensorweave launch: {next(iter(blas_env.values()))} BLAS/OpenMP thread(s) per task (set "
              "OMP_NUM_THREADS to choose)", file=sys.stderr, flush=True)
    stop = threading.Event()

    def on_signal(signum, frame):
        stop.set()

    old = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    tasks: list = []
    # The evaluator is no member of the cluster (TF's rule): it gets the cluster and its own task only.
    roles = [(job, i) for job, addrs in cluster.items() for i in range(len(addrs))]
    roles += [("evaluator", i) for i in range(args.evaluator)]
    gpus = present_gpus() if args.num_gpus is None else present_gpus()[:args.num_gpus]
    if args.num_gpus is not None and len(gpus) < args.num_gpus:
        print(f"tensorweave launch: --num_gpus {args.num_gpus}, but {len(gpus)} GPU(s) present", file=sys.stderr)
        return 2
    # without GPUs (and without --num_gpus) the tasks' environment stays as it is
    shares = gpu_shares(roles, gpus) if gpus or args.num_gpus is not None else {}
    if gpus:
        print(f"tensorweave launch: GPUs {json.dumps({f'{j}:{i}': shares[(j, i)] for j, i in roles})} "
              "(CUDA_VISIBLE_DEVICES per task)", file=sys.stderr, flush=True)
    try:
        for job, i in roles:
            env = dict(os.environ)
            env.update(blas_env)
            env["TF_CONFIG"] = json.dumps({"cluster": cluster, "task": {"type": job, "index": i}})
            env["PYTHONUNBUFFERED"] = "1"
            if shares:
                env["CUDA_VISIBLE_DEVICES"] = shares[(job, i)]
            if sys.stdout.isatty():   # the tasks' output reaches a terminal: progress lines may redraw
                env["TENSORWEAVE_TTY"] = "1"
            as_script = bool(args.script) and not (job == "ps" and args.ps_as_server)
            if as_script:
                fmt = {"job_name": job, "task_index": i, "cluster": json.dumps(cluster)}
                cmd = [sys.executable, args.script] + [a.format(**fmt) if "{" in a else a
                                                       for a in args.script_args]
            else:
                cmd = [sys.executable, "-m", "tensorweave.cli", "server"]
            tasks.append(_Task(job, i, cmd, env, main=as_script and job != "ps", prefix=not args.no_prefix))
        mains = [t for t in tasks if t.main]
        rc = 0
        while not stop.is_set():
            failed = [t for t in tasks if t.proc.poll() not in (None, 0)]
            if failed:
                t = failed[0]
                print(f"tensorweave launch: /job:{t.job}/task:{t.index} exited with {t.proc.returncode}",
                      file=sys.stderr, flush=True)
                rc = t.proc.returncode if t.proc.returncode > 0 else 1
                break
            if mains and all(t.proc.poll() is not None for t in mains):
                break
            if not mains and all(t.proc.poll() is not None for t in tasks):
                break
            time.sleep(0.05)
        if stop.is_set() and mains:
            rc = 130
        return rc
    finally:
        for t in tasks:
            t.stop(args.grace)
        for t in tasks:
            for p in t.pumps:
                p.join(2)
        for s, h in old.items():
            signal.signal(s, h)


# -- status ----------------------------------------------------------------------------------------
def probe(cluster: dict, timeout_s: float) -> list:
    """[(task name, address, status dict or None, error or None)] for every task, in parallel."""
    from tensorweave.distributed.connector import task_address, task_client
    from tensorweave.runtime.placer import cluster_task_names
    names = cluster_task_names(cluster)
    results: list = [None] * len(names)

    def one(i: int, name: str) -> None:
        addr = task_address(cluster, name)
        try:
            results[i] = (name, addr, task_client(cluster, name, timeout_s).get_status(), None)
        except Exception as e:  # noqa: BLE001 - a task that does not answer is reported, not raised
            results[i] = (name, addr, None, e)

    threads = [threading.Thread(target=one, args=(i, n), daemon=True) for i, n in enumerate(names)]
    for t in threads:
        t.start()
    for i, t in enumerate(threads):
        t.join(timeout_s + 5)
        if results[i] is None:
            results[i] = (names[i], task_address(cluster, names[i]), None, TimeoutError("no answer"))
    return results


def cmd_status(args) -> int:
    """Prints each task of the cluster as UP or DOWN; exit status 0 only when all are up."""
    from tensorweave.distributed.connector import Connection
    cluster = _cluster_from_args(args)
    if args.target:
        try:
            cluster = Connection(args.target, args.timeout).cluster
        except Exception as e:  # noqa: BLE001
            print(f"{args.target}  DOWN  {type(e).__name__}: {e}")
            return 1
    if not cluster:
        print("tensorweave status: no cluster given (a target, --cluster, --*_hosts or TF_CONFIG)",
              file=sys.stderr)
        return 2
    results = probe(cluster, args.timeout)
    if args.json:
        print(json.dumps([{"task": n, "address": a, "up": s is not None,
                           "incarnation": s["incarnation"] if s else None,
                           "error": None if e is None else f"{type(e).__name__}: {e}"}
                          for n, a, s, e in results]))
    else:
        width = max(len(n) for n, *_ in results)
        for name, addr, status, err in results:
            if status is not None:
                print(f"{name:<{width}}  {addr}  UP    incarnation={status['incarnation']}")
            else:
                msg = str(err).splitlines()[0] if str(err) else type(err).__name__
                print(f"{name:<{width}}  {addr}  DOWN  {type(err).__name__}: {msg}")
    return 0 if all(s is not None for _, _, s, _ in results) else 1


# -- keygen ----------------------------------------------------------------------------------------
def cmd_keygen(args) -> int:
    """Writes a cluster key pair (and client key pairs) for CURVE authentication, or revokes
    clients' keys (--revoke NAME: running tasks refuse them within a second)."""
    try:
        if args.revoke:
            if args.client:
                raise ValueError("--revoke and --client do not go together")
            for name in args.revoke:
                for path in auth.revoke(args.directory, name):
                    print(f"removed {path}")
            print("Tasks that read their keys from this directory refuse these keys from now on and close their "
                  "connections; copies of the directory elsewhere need the same removal.", file=sys.stderr)
            return 0
        written = auth.write_keys(args.directory, tuple(args.client or ()))
    except (FileExistsError, FileNotFoundError, ValueError, OSError) as e:
        print(f"tensorweave keygen: {e}", file=sys.stderr)
        return 1
    for path in written:
        print(path)
    print(f"Set TENSORWEAVE_CURVE_DIR={os.path.abspath(args.directory)} on every task (and client) of the cluster; "
          "give a client only its clients/<name>/ directory.", file=sys.stderr)
    return 0


# -- saved_model -----------------------------------------------------------------------------------
def cmd_saved_model(args) -> int:
    """show / run, printing what TF's saved_model_cli prints; an error is its class and message."""
    from tensorweave.serving import saved_model_cli
    try:
        if args.saved_model_command == "show":
            sys.stdout.write(saved_model_cli.show(args.dir, args.tag_set, args.signature_def, args.all,
                                                  args.list_ops))
        else:
            if not (args.inputs or args.input_exprs or args.input_examples):
                raise AttributeError("At least one of --inputs, --input_exprs or --input_examples must be required")
            feeds = saved_model_cli.load_inputs(args.inputs, args.input_exprs, args.input_examples)
            saved_model_cli.run(args.dir, args.tag_set, args.signature_def, feeds, args.outdir, args.overwrite)
    except (OSError, ValueError, RuntimeError, AttributeError, TypeError) as e:
        print(f"{type(e).__name__}: {e}", file=sys.stderr)
        return 1
    return 0


# -- serve -----------------------------------------------------------------------------------------
def cmd_serve(args) -> int:
    """Serves a model directory's versions over TF Serving's REST API until SIGTERM/SIGINT."""
    try:
        from tensorweave.serving import model_server
    except ImportError as e:
        if getattr(e, "name", "") != "aiohttp":
            raise
        print("tensorweave serve needs aiohttp: pip install 'tensorweave[serving]'", file=sys.stderr)
        return 2
    if not args.model_dir or args.port is None:
        print("tensorweave serve: --model_dir (--model_base_path) and --port (--rest_api_port) are required",
              file=sys.stderr)
        return 2
    return model_server.serve(args.model_name, args.model_dir, args.port, args.host, args.saved_model_tags.split(","),
                              args.file_system_poll_wait_seconds, args.rest_api_num_threads)


# -- entry point -----------------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tensorweave", description="Distributed TF1 graphs on numpy and ZeroMQ.")
    parser.add_argument("--version", action="version", version=f"tensorweave {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("server", help="serve one task of a cluster (from flags or TF_CONFIG)")
    _add_cluster_args(p)
    p.add_argument("--job_name", help="this task's job (default: TF_CONFIG's task.type)")
    p.add_argument("--task_index", type=int, help="this task's index (default: TF_CONFIG's task.index)")
    p.add_argument("--bind_address", help="listen on this address ('*': all interfaces) instead of the one the "
                                          "cluster names (see TENSORWEAVE_BIND_ADDRESS)")
    p.set_defaults(func=cmd_server)

    p = sub.add_parser("launch", help="run a whole local cluster of processes, one per task",
                       description="Starts one process per task with TF_CONFIG set: the script (its "
                                   "arguments may use {job_name}, {task_index}, {cluster}), or a bare "
                                   "server when no script is given. Stops them all on exit or Ctrl-C.")
    p.add_argument("--ps", type=int, default=0, help="number of ps tasks")
    p.add_argument("--workers", type=int, default=1, help="number of worker tasks")
    p.add_argument("--chief", type=int, default=0, help="number of chief tasks (0 or 1)")
    p.add_argument("--evaluator", type=int, default=0, choices=(0, 1),
                   help="also run the script as an Estimator `evaluator` task, outside the cluster (0 or 1)")
    p.add_argument("--host", default="localhost")
    p.add_argument("--port", type=int, default=0, help="first port (default: free ports)")
    p.add_argument("--ps_as_server", action="store_true", help="run bare servers, not the script, for ps tasks")
    p.add_argument("--no_prefix", action="store_true", help="do not prefix output lines with [job:index]")
    p.add_argument("--grace", type=float, default=5.0, help="seconds between SIGTERM and SIGKILL at exit")
    p.add_argument("--num_gpus", type=int, help="GPUs shared out to the non-ps tasks (CUDA_VISIBLE_DEVICES; "
                                                "ps tasks get none); default: all present, 0: CPUs only")
    p.add_argument("script", nargs="?", help="the program to run in every task")
    p.add_argument("script_args", nargs=argparse.REMAINDER)
    p.set_defaults(func=cmd_launch)

    p = sub.add_parser("status", help="which tasks of a cluster answer")
    p.add_argument("target", nargs="?", help="grpc://host:port of any task (asks it for the cluster)")
    _add_cluster_args(p)
    p.add_argument("--timeout", type=float, default=2.0, help="seconds to wait for each task")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_status)

    p = sub.add_parser("keygen", help="write the keys of an authenticated, encrypted cluster (ZeroMQ CURVE)",
                       description="Writes DIR/cluster.key and DIR/cluster.key_secret (every task needs both; "
                                   "TENSORWEAVE_CURVE_DIR=DIR turns authentication on) and, for each --client NAME, "
                                   "DIR/clients/NAME/ (the cluster's public key and the client's own key pair: "
                                   "all a client that is not a task needs) with DIR/authorized/NAME.key.")
    p.add_argument("directory")
    p.add_argument("--client", action="append", metavar="NAME", help="also write a key pair for this client")
    p.add_argument("--revoke", action="append", metavar="NAME",
                   help="remove this client's authorized key (and clients/NAME/): tasks refuse it from then on")
    p.set_defaults(func=cmd_keygen)

    p = sub.add_parser("saved_model", help="show or run a SavedModel's signatures (TF's saved_model_cli)")
    smc = p.add_subparsers(dest="saved_model_command", metavar="show|run", required=True)
    for name, text in (("show", "print the tag-sets, signatures, their tensors and ops"),
                       ("run", "run a signature on inputs from files or expressions, print and save the outputs")):
        q = smc.add_parser(name, help=text)
        q.add_argument("--dir", required=True, help="the SavedModel's directory")
        q.add_argument("--tag_set", required=name == "run", help="the MetaGraph's tags, comma-separated")
        q.add_argument("--signature_def", required=name == "run", help="the signature's key")
        if name == "show":
            q.add_argument("--all", action="store_true", help="everything in the SavedModel")
            q.add_argument("--list_ops", action="store_true", help="the op types of the MetaGraph")
        else:
            q.add_argument("--inputs", default="", help="'key=file.npy;key2=file.npz[array]' (no pickles)")
            q.add_argument("--input_exprs", default="",
                           help="'key=expression': literals, + - * / and numpy constructors (np.ones((2,3)), "
                                "np.random.rand(4), ...), parsed, never evaluated")
            q.add_argument("--input_examples", default="", help="'key=[{\"feature\": [values]}, ...]' as tf.Examples")
            q.add_argument("--outdir", help="save each output as OUTDIR/<key>.npy")
            q.add_argument("--overwrite", action="store_true", help="replace existing output files")
        q.set_defaults(func=cmd_saved_model)

    p = sub.add_parser("serve", help="serve a model over TensorFlow Serving's REST API",
                       description="Serves the newest version (numeric subdirectory) of --model_dir at "
                                   "http://HOST:PORT/v1/models/NAME (:predict, :classify, :regress, /metadata), "
                                   "loading newer versions as they appear.")
    p.add_argument("--model_dir", "--model_base_path", dest="model_dir", help="the directory of numbered versions")
    p.add_argument("--model_name", default="default", help="the name in the URLs (default: default)")
    p.add_argument("--port", "--rest_api_port", dest="port", type=int, help="the HTTP port")
    p.add_argument("--host", default="0.0.0.0", help="the address to listen on (default: all interfaces)")
    p.add_argument("--saved_model_tags", default="serve", help="the MetaGraph's tags, comma-separated")
    p.add_argument("--file_system_poll_wait_seconds", type=float, default=1.0,
                   help="seconds between looks for a new version")
    p.add_argument("--rest_api_num_threads", type=int, default=None,
                   help="requests run at once (default: the number of cores)")
    p.set_defaults(func=cmd_serve)
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
