"""Keras fit under tf.distribute.experimental.ParameterServerStrategy with real processes, 1 ps and 2
workers started by TF_CONFIG, each running the same program (keras_ps_trainer.py) as TF 1.15's
independent-worker mode runs it: on the workers fit trains asynchronously on variables that live on
the ps (every worker's updates counted by the one optimizer iteration variable there), the loss
decreases; the ps's fit serves, and every process exits once the workers' have ended."""
from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import keras_ps_trainer as trainer  # noqa: E402
from tf_config_job import TFConfigJob  # noqa: E402

PS = "/job:ps/replica:0/task:0/device:CPU:0"


def test_keras_fit_with_parameter_server_strategy_trains_on_the_ps_variables_and_every_process_exits(tmp_path):
    with TFConfigJob(os.path.join(HERE, "keras_ps_trainer.py"), {"ps": 1, "worker": 2}, str(tmp_path)) as job:
        for task in (("ps", 0), ("worker", 0), ("worker", 1)):
            job.start(*task)
        codes = job.wait_all()
        assert codes == {("ps", 0): 0, ("worker", 0): 0, ("worker", 1): 0}, job.describe()
        assert job.output("ps", 0, stream=0) == ""   # the ps's program did not get past fit
        workers = [job.result("worker", i) for i in range(2)]
    steps = trainer.EPOCHS * trainer.STEPS
    for i, result in enumerate(workers):
        assert result["task"] == ["worker", i]
        assert result["devices"] == [PS] * 5   # 2 kernels, 2 biases, the optimizer's iterations
        assert len(result["loss"]) == trainer.EPOCHS and result["loss"][-1] < result["loss"][0]
        assert result["evaluated"] < result["loss"][0]
        assert steps <= result["iterations"] <= 2 * steps   # its own updates, and some of the other's
    # the worker that read the count last read every update of both
    assert max(r["iterations"] for r in workers) == 2 * steps
