"""The program seed 004 ends with: Google's MNIST sample (a tf.keras.Sequential CNN inside an
Estimator model_fn, a tf.data input_fn, RunConfig, train_and_evaluate, then export_savedmodel),
written here in the sample's shape on MNIST-shaped synthetic data (no download). The same file runs
as every task of a cluster; TF_CONFIG says which (as Kubernetes or Gradient would set it):

    tensorweave launch --ps 1 --chief 1 --workers 2 --evaluator 1 examples/seeds/mnist_sample.py \\
        --model_dir=/tmp/mnist --export_dir=/tmp/mnist_export
    python examples/seeds/mnist_sample.py --model_dir=/tmp/mnist --export_dir=/tmp/mnist_export
"""
from __future__ import annotations

import json
import os

import numpy as np

import tensorweave as tf

flags = tf.app.flags
flags.DEFINE_string("model_dir", os.path.join(os.getcwd(), "models", "mnist"), "Checkpoints and summaries")
flags.DEFINE_string("export_dir", "", "Where the chief exports the final SavedModel (none when empty)")
flags.DEFINE_integer("max_steps", 1000, "Max steps")
flags.DEFINE_integer("batch_size", 100, "Batch size")
flags.DEFINE_integer("train_epochs", 40, "Epochs of the training data")
flags.DEFINE_integer("ckpt_steps", 600, "How frequently to save a model checkpoint")
flags.DEFINE_integer("max_ckpts", 5, "Maximum number of checkpoints to keep")
flags.DEFINE_integer("save_summary_steps", 100, "How frequently to save TensorBoard summaries")
flags.DEFINE_integer("log_step_count_steps", 100, "How frequently to log loss & global steps/s")
flags.DEFINE_integer("eval_secs", 600, "How frequently to run evaluation")
flags.DEFINE_string("data_format", None, "channels_first or channels_last")
flags.DEFINE_integer("inter_op_parallelism_threads", 0, "Inter-op threads")
flags.DEFINE_integer("intra_op_parallelism_threads", 0, "Intra-op threads")
FLAGS = flags.FLAGS
LEARNING_RATE = 1e-4


def synthetic_mnist(n: int, seed: int):
    """n MNIST-shaped examples: 784 pixels in [0, 1] near one of 10 fixed prototypes, int32 labels."""
    prototypes = np.random.RandomState(42).rand(10, 784).astype(np.float32)
    rng = np.random.RandomState(seed)
    labels = rng.randint(0, 10, n)
    images = np.clip(prototypes[labels] + 0.5 * rng.randn(n, 784), 0.0, 1.0).astype(np.float32)
    return tf.data.Dataset.from_tensor_slices((images, labels.astype(np.int32)))


def create_model(data_format):
    """The sample's network: two 5x5 convolutions with 2x2 max pooling (one pooling layer, used
    twice), a 1024-unit dense layer with dropout, and 10 logits."""
    input_shape = [1, 28, 28] if data_format == "channels_first" else [28, 28, 1]
    layers = tf.keras.layers
    max_pool = layers.MaxPooling2D((2, 2), (2, 2), padding="same", data_format=data_format)
    return tf.keras.Sequential([
        layers.Reshape(target_shape=input_shape, input_shape=(28 * 28,)),
        layers.Conv2D(32, 5, padding="same", data_format=data_format, activation=tf.nn.relu),
        max_pool,
        layers.Conv2D(64, 5, padding="same", data_format=data_format, activation=tf.nn.relu),
        max_pool,
        layers.Flatten(),
        layers.Dense(1024, activation=tf.nn.relu),
        layers.Dropout(0.4),
        layers.Dense(10)])


def model_fn(features, labels, mode, params):
    model = create_model(params["data_format"])
    image = features["image"] if isinstance(features, dict) else features
    if mode == tf.estimator.ModeKeys.PREDICT:
        logits = model(image, training=False)
        predictions = {"classes": tf.argmax(logits, axis=1), "probabilities": tf.nn.softmax(logits)}
        return tf.estimator.EstimatorSpec(mode=mode, predictions=predictions,
                                          export_outputs={"classify": tf.estimator.export.PredictOutput(predictions)})
    logits = model(image, training=mode == tf.estimator.ModeKeys.TRAIN)
    loss = tf.losses.sparse_softmax_cross_entropy(labels=labels, logits=logits)
    accuracy = tf.metrics.accuracy(labels=labels, predictions=tf.argmax(logits, axis=1))
    if mode == tf.estimator.ModeKeys.EVAL:
        return tf.estimator.EstimatorSpec(mode=mode, loss=loss, eval_metric_ops={"accuracy": accuracy})
    tf.identity(LEARNING_RATE, "learning_rate")
    tf.identity(loss, "cross_entropy")
    tf.identity(accuracy[1], name="train_accuracy")
    tf.summary.scalar("train_accuracy", accuracy[1])
    optimizer = tf.train.AdamOptimizer(learning_rate=LEARNING_RATE)
    return tf.estimator.EstimatorSpec(mode=mode, loss=loss,
                                      train_op=optimizer.minimize(loss, tf.train.get_or_create_global_step()))


def run_mnist(flags_obj) -> None:
    session_config = tf.ConfigProto(inter_op_parallelism_threads=flags_obj.inter_op_parallelism_threads,
                                    intra_op_parallelism_threads=flags_obj.intra_op_parallelism_threads,
                                    allow_soft_placement=True)
    run_config = tf.estimator.RunConfig(session_config=session_config, save_checkpoints_steps=flags_obj.ckpt_steps,
                                        keep_checkpoint_max=flags_obj.max_ckpts,
                                        save_summary_steps=flags_obj.save_summary_steps,
                                        log_step_count_steps=flags_obj.log_step_count_steps)
    data_format = flags_obj.data_format or ("channels_first" if tf.test.is_built_with_cuda() else "channels_last")
    classifier = tf.estimator.Estimator(model_fn=model_fn, model_dir=flags_obj.model_dir, config=run_config,
                                        params={"data_format": data_format})

    def train_input_fn():
        ds = synthetic_mnist(2000, seed=1)
        return ds.cache().shuffle(buffer_size=2000).batch(flags_obj.batch_size).repeat(flags_obj.train_epochs)

    def eval_input_fn():
        return synthetic_mnist(500, seed=2).batch(flags_obj.batch_size).make_one_shot_iterator().get_next()

    train_hooks = [tf.train.LoggingTensorHook(["learning_rate", "cross_entropy", "train_accuracy"], every_n_iter=100)]
    train_spec = tf.estimator.TrainSpec(input_fn=train_input_fn, hooks=train_hooks, max_steps=flags_obj.max_steps)
    eval_spec = tf.estimator.EvalSpec(input_fn=eval_input_fn, steps=None, start_delay_secs=0,
                                      throttle_secs=flags_obj.eval_secs)
    result = tf.estimator.train_and_evaluate(classifier, train_spec, eval_spec)

    exported = None
    if flags_obj.export_dir and run_config.is_chief:     # the chief, or the only process
        image = tf.placeholder(tf.float32, [None, 28, 28])
        input_fn = tf.estimator.export.build_raw_serving_input_receiver_fn({"image": image})
        exported = classifier.export_savedmodel(flags_obj.export_dir, input_fn, strip_default_attrs=True)
    line = {"task": [run_config.task_type, run_config.task_id]}
    if result is not None:
        line["accuracy"] = float(result[0]["accuracy"])
    if exported is not None:
        line["export"] = exported.decode() if isinstance(exported, bytes) else exported
    print(json.dumps(line), flush=True)


def main(_):
    run_mnist(FLAGS)


if __name__ == "__main__":
    tf.logging.set_verbosity(tf.logging.INFO)
    tf.app.run(main)
