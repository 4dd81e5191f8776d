"""The TF1 API this example runs on: tensorweave by default, TensorFlow's `tensorflow.compat.v1`
when CIFAR10_BACKEND=tensorflow (the same files run unchanged on both, which is the point).
BoundedStalenessOptimizer (cifar10_train.py's --staleness) is a tensorweave extension: None on
TensorFlow."""
import os

if os.environ.get("CIFAR10_BACKEND", "tensorweave") == "tensorflow":
    import tensorflow.compat.v1 as tf
    tf.disable_v2_behavior()
    tf.logging.set_verbosity(tf.logging.ERROR)
    BoundedStalenessOptimizer = None
else:
    import tensorweave as tf
    from tensorweave.train.bounded_staleness import BoundedStalenessOptimizer  # noqa: F401 (re-exported)
