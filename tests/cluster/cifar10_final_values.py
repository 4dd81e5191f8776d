"""Runs the CIFAR-10 example's trainer (examples/cifar10/cifar10_train.py, unchanged) with the
arguments after OUT_DIR, and writes every global variable's value on this worker, as its
MonitoredTrainingSession ends, to OUT_DIR/worker-<task>.npz ("/" in names as "|"), so that a test
can compare the workers of a MultiWorkerMirroredStrategy job (tests/cluster/test_cifar10_example.py):

    tensorweave launch --workers 2 cifar10_final_values.py OUT_DIR --strategy=multi_worker_mirrored ...
"""
from __future__ import annotations

import json
import os
import runpy
import sys

import numpy as np

import tensorweave as tf

TRAINER = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                       "examples", "cifar10", "cifar10_train.py")


class _KeepFinalValues(tf.train.SessionRunHook):
    def __init__(self, path: str):
        self._path = path

    def end(self, session):
        values = session.run({v.op.name: v for v in tf.global_variables()})
        np.savez(self._path, **{name.replace("/", "|"): value for name, value in values.items()})


def main() -> None:
    out_dir, args = sys.argv[1], sys.argv[2:]
    task = json.loads(os.environ.get("TF_CONFIG") or "{}").get("task", {}).get("index", 0)
    monitored_training_session = tf.train.MonitoredTrainingSession

    def with_final_values(*a, hooks=None, **kw):
        return monitored_training_session(
            *a, hooks=list(hooks or []) + [_KeepFinalValues(os.path.join(out_dir, f"worker-{task}.npz"))], **kw)
    tf.train.MonitoredTrainingSession = with_final_values   # (in this process only)
    sys.path.insert(0, os.path.dirname(TRAINER))
    sys.argv = [TRAINER, *args]
    runpy.run_path(TRAINER, run_name="__main__")


if __name__ == "__main__":
    main()
