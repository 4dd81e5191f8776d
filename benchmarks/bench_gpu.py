"""The CIFAR-10 tutorial net (examples/cifar10's: conv-relu-pool-LRN, conv-relu-LRN-pool, dense 384,
dense 192, softmax linear; batch 128, plain SGD) training on one GPU: tensorweave with every op
under tf.device('/gpu:0') beside the same net in PyTorch on the same GPU, in the same run.

    python benchmarks/bench_gpu.py                      # GPU (goal: tensorweave >= 0.5x PyTorch)
    python benchmarks/bench_gpu.py --device cpu         # a quick CPU run of both (smoke test)
    TENSORWEAVE_STANDIN_GPUS=1 python benchmarks/bench_gpu.py --window_s 1 --windows 2   # CI-style

The input is one constant batch of random images and labels, put on the device once (a
non-trainable variable; PyTorch: a device tensor), so the figure is the training step alone.
Each side warms up, then times --windows windows of about --window_s seconds each (whole steps,
ended by a device sync: a small fetch for tensorweave, torch.cuda.synchronize for PyTorch); the
figure is the median window's examples/s. Ops that ran on the CPU (soft placement: no GPU kernel
yet) are listed. Without PyTorch (or without CUDA for it) its side is skipped with a message.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
sys.path.insert(0, os.path.join(REPO, "examples", "cifar10"))

import tensorweave as tf  # noqa: E402
import cifar10  # noqa: E402  (the example's net)

IMAGE = 24   # the tutorial's crop
WEIGHT_DECAY = 0.004   # on the two hidden dense layers' weights, as the tutorial


def measure(step, sync, batch: int, warmup: int, windows: int, window_s: float) -> float:
    """Median examples/s over `windows` timed windows of about `window_s` seconds each, after
    `warmup` steps (or `window_s` seconds of them, whichever ends first)."""
    step()
    sync()   # the first step builds and compiles: never timed
    start, done = time.perf_counter(), 0
    while done < max(warmup, 2) and (done < 2 or time.perf_counter() - start < window_s):
        step()
        done += 1
    sync()
    per_step = (time.perf_counter() - start) / done
    steps = max(1, round(window_s / per_step))
    rates = []
    for _ in range(windows):
        t = time.perf_counter()
        for _ in range(steps):
            step()
        sync()
        rates.append(steps * batch / (time.perf_counter() - t))
    return statistics.median(rates)


def tensorweave_rate(images: np.ndarray, labels: np.ndarray, device: str, args) -> tuple:
    """(examples/s, sorted op types that ran on the CPU although pinned to the GPU)."""
    with tf.Graph().as_default() as graph, tf.device(device):
        x = tf.Variable(images, trainable=False, name="images")
        y = tf.Variable(labels, trainable=False, name="labels")
        total_loss = cifar10.loss(cifar10.tutorial_inference(x), y)
        train_op = tf.train.GradientDescentOptimizer(0.1).minimize(total_loss)
        with tf.variable_scope("softmax_linear", reuse=True):
            probe = tf.get_variable("biases")   # a small fetch: waits for the steps before it
        init = tf.global_variables_initializer()
    # soft placement: an op without a GPU kernel runs on the CPU (and is listed) instead of failing
    with tf.Session(graph=graph, config=tf.ConfigProto(allow_soft_placement=True)) as sess:
        sess.run(init)
        meta = tf.RunMetadata()
        sess.run(train_op, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE), run_metadata=meta)
        on_cpu = set()
        if "gpu" in device:
            names = {op.name: op.type for op in graph.get_operations()}
            for dev in meta.step_stats.dev_stats:
                if "GPU" not in dev.device.upper():
                    on_cpu.update(names[s.node_name] for s in dev.node_stats if s.node_name in names)
        rate = measure(lambda: sess.run(train_op), lambda: sess.run(probe), len(images), args.warmup,
                       args.windows, args.window_s)
        if args.profile:
            profile(sess, train_op, probe, args.profile)
    return rate, sorted(on_cpu)


def profile(sess, train_op, probe, steps: int) -> None:
    """Where tensorweave's step goes: wall and CPU seconds a step (CPU about wall: the host is the
    bound, the device waits), each op type's time a step from FULL_TRACE (a kernel's host time:
    the launch, or the whole kernel when it waits for the device), and cProfile's top functions."""
    import cProfile
    import pstats
    from collections import Counter
    sess.run(probe)
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(steps):
        sess.run(train_op)
    sess.run(probe)
    wall, cpu = (time.perf_counter() - wall) / steps, (time.process_time() - cpu) / steps
    print(f"profile: {wall * 1e3:.2f} ms a step, {cpu * 1e3:.2f} ms of CPU a step ({steps} steps)")
    per_type, ops = Counter(), Counter()
    options = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
    types = {op.name: op.type for op in train_op.graph.get_operations()}
    for _ in range(10):
        meta = tf.RunMetadata()
        sess.run(train_op, options=options, run_metadata=meta)
        for dev in meta.step_stats.dev_stats:
            for s in dev.node_stats:
                t = types.get(s.node_name, s.node_name)
                per_type[t] += s.all_end_rel_micros / 10
                ops[t] += 1 / 10
    print(f"  FULL_TRACE: {sum(ops.values()):.0f} ops, {sum(per_type.values()):.0f} us of kernel time a step; "
          "by op type (us a step, ops):")
    for t, us in per_type.most_common(25):
        print(f"    {us:8.0f}  {ops[t]:4.0f}  {t}")
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(steps):
        sess.run(train_op)
    sess.run(probe)
    prof.disable()
    stats = pstats.Stats(prof)
    stats.sort_stats("tottime").print_stats(30)


def torch_rate(images: np.ndarray, labels: np.ndarray, on_gpu: bool, args):
    """PyTorch's examples/s for the same net and step, or None (with the reason printed)."""
    try:
        import torch
        from torch import nn
    except ImportError:
        print("PyTorch is not installed: its side is skipped")
        return None
    if on_gpu and not torch.cuda.is_available():
        print("PyTorch finds no CUDA GPU: its side is skipped")
        return None
    dev = torch.device("cuda:0" if on_gpu else "cpu")
    torch.backends.cudnn.benchmark = True   # as a PyTorch user runs fixed-shape convolutions
    torch.manual_seed(0)
    # TF's LRN: depth_radius 4 (a window of 9), alpha not divided by the window (PyTorch's is); SAME pooling
    lrn = dict(size=9, alpha=0.001 / 9.0 * 9, beta=0.75, k=1.0)
    local3, local4 = nn.Linear(64 * 6 * 6, 384), nn.Linear(384, 192)
    net = nn.Sequential(nn.Conv2d(3, 64, 5, padding=2), nn.ReLU(), nn.MaxPool2d(3, 2, padding=1),
                        nn.LocalResponseNorm(**lrn), nn.Conv2d(64, 64, 5, padding=2), nn.ReLU(),
                        nn.LocalResponseNorm(**lrn), nn.MaxPool2d(3, 2, padding=1), nn.Flatten(),
                        local3, nn.ReLU(), local4, nn.ReLU(), nn.Linear(192, 10)).to(dev)
    x = torch.from_numpy(np.ascontiguousarray(images.transpose(0, 3, 1, 2))).to(dev)
    y = torch.from_numpy(labels.astype(np.int64)).to(dev)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)

    def step():
        opt.zero_grad(set_to_none=True)
        loss = nn.functional.cross_entropy(net(x), y)
        loss = loss + WEIGHT_DECAY * 0.5 * (local3.weight.square().sum() + local4.weight.square().sum())
        loss.backward()
        opt.step()

    sync = torch.cuda.synchronize if on_gpu else (lambda: None)
    return measure(step, sync, len(images), args.warmup, args.windows, args.window_s)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", choices=("gpu", "cpu"), default="gpu")
    parser.add_argument("--batch_size", type=int, default=128)
    parser.add_argument("--warmup", type=int, default=20, help="untimed steps before the windows")
    parser.add_argument("--windows", type=int, default=5)
    parser.add_argument("--window_s", type=float, default=4.0, help="seconds per timed window (whole steps)")
    parser.add_argument("--profile", type=int, default=0, metavar="STEPS",
                        help="after timing, profile tensorweave's step over STEPS steps (wall/CPU, per op, cProfile)")
    args = parser.parse_args()
    rng = np.random.RandomState(0)
    images = rng.standard_normal((args.batch_size, IMAGE, IMAGE, 3)).astype(np.float32)
    labels = rng.randint(0, cifar10.NUM_CLASSES, args.batch_size).astype(np.int32)
    on_gpu = args.device == "gpu"
    ours, on_cpu = tensorweave_rate(images, labels, "/gpu:0" if on_gpu else "/cpu:0", args)
    what = f"CIFAR-10 tutorial net, batch {args.batch_size}, SGD, on the {args.device.upper()}"
    print(f"{what}: tensorweave {ours:.0f} examples/s", flush=True)
    if on_cpu:
        print(f"  ops that ran on the CPU (no GPU kernel): {', '.join(on_cpu)}")
    theirs = torch_rate(images, labels, on_gpu, args)
    if theirs is not None:
        print(f"{what}: PyTorch {theirs:.0f} examples/s; tensorweave/PyTorch ratio {ours / theirs:.2f}x "
              f"(goal >= 0.5x)")
    print(f"(medians of {args.windows} windows of ~{args.window_s:g} s; load average "
          f"{' '.join(f'{v:.2f}' for v in os.getloadavg())}, {os.cpu_count()} CPUs)")


if __name__ == "__main__":
    main()
