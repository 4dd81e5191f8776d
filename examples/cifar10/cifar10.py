"""The CIFAR-10 models and their training ops, as the TensorFlow tutorial builds them.

`--model tutorial`: conv 5x5x64, max-pool, LRN, conv 5x5x64, LRN, max-pool, dense 384, dense
192, softmax linear; weight decay on the dense layers. `--model xception`: a reduced Xception for
32x32 inputs (xception.py). Training: exponentially decaying learning rate, gradient descent
(wrapped in SyncReplicasOptimizer with --sync_replicas), moving averages of the loss and of
every trainable variable (the evaluation restores the averages). Several towers (one per GPU,
as TF's cifar10_multi_gpu_train) each compute their gradients on their own device; the update
applies their mean.
"""
import contextlib
import re

from backend import tf
import cifar10_input
import xception

NUM_CLASSES = cifar10_input.NUM_CLASSES
MOVING_AVERAGE_DECAY = 0.9999
NUM_EPOCHS_PER_DECAY = 350.0
LEARNING_RATE_DECAY_FACTOR = 0.1
INITIAL_LEARNING_RATE = 0.1


def _activation_summary(x) -> None:
    name = re.sub("tower_[0-9]*/", "", x.op.name)
    tf.summary.histogram(name + "/activations", x)
    tf.summary.scalar(name + "/sparsity", tf.nn.zero_fraction(x))


def _variable_with_weight_decay(name, shape, stddev, wd):
    var = tf.get_variable(name, shape, tf.float32, tf.truncated_normal_initializer(stddev=stddev, dtype=tf.float32))
    if wd is not None:
        tf.add_to_collection("losses", tf.multiply(tf.nn.l2_loss(var), wd, name="weight_loss"))
    return var


def _conv_relu(scope_name, images, shape, bias):
    with tf.variable_scope(scope_name) as scope:
        kernel = _variable_with_weight_decay("weights", shape, stddev=5e-2, wd=None)
        conv = tf.nn.conv2d(images, kernel, [1, 1, 1, 1], padding="SAME")
        biases = tf.get_variable("biases", [shape[-1]], initializer=tf.constant_initializer(bias))
        out = tf.nn.relu(tf.nn.bias_add(conv, biases), name=scope.name)
    _activation_summary(out)
    return out


def _dense(scope_name, x, n_in, n_out, stddev, wd, bias, relu=True):
    with tf.variable_scope(scope_name) as scope:
        weights = _variable_with_weight_decay("weights", [n_in, n_out], stddev=stddev, wd=wd)
        biases = tf.get_variable("biases", [n_out], initializer=tf.constant_initializer(bias))
        out = tf.add(tf.matmul(x, weights), biases)
        out = tf.nn.relu(out, name=scope.name) if relu else tf.identity(out, name=scope.name)
    _activation_summary(out)
    return out


def tutorial_inference(images):
    """The tutorial network's logits for a batch of 24x24x3 images."""
    conv1 = _conv_relu("conv1", images, [5, 5, 3, 64], 0.0)
    pool1 = tf.nn.max_pool(conv1, ksize=[1, 3, 3, 1], strides=[1, 2, 2, 1], padding="SAME", name="pool1")
    norm1 = tf.nn.lrn(pool1, 4, bias=1.0, alpha=0.001 / 9.0, beta=0.75, name="norm1")
    conv2 = _conv_relu("conv2", norm1, [5, 5, 64, 64], 0.1)
    norm2 = tf.nn.lrn(conv2, 4, bias=1.0, alpha=0.001 / 9.0, beta=0.75, name="norm2")
    pool2 = tf.nn.max_pool(norm2, ksize=[1, 3, 3, 1], strides=[1, 2, 2, 1], padding="SAME", name="pool2")
    dim = pool2.get_shape()[1:].num_elements()
    flat = tf.reshape(pool2, [-1, dim])
    local3 = _dense("local3", flat, dim, 384, stddev=0.04, wd=0.004, bias=0.1)
    local4 = _dense("local4", local3, 384, 192, stddev=0.04, wd=0.004, bias=0.1)
    return _dense("softmax_linear", local4, 192, NUM_CLASSES, stddev=1 / 192.0, wd=None, bias=0.0, relu=False)


def inference(images, model: str = "tutorial", is_training: bool = True, middle_repeats: int = 2):
    if model == "tutorial":
        return tutorial_inference(images)
    if model == "xception":
        return xception.inference(images, NUM_CLASSES, is_training=is_training, middle_repeats=middle_repeats)
    raise ValueError(f"unknown --model {model!r} (tutorial or xception)")


def loss(logits, labels, scope=None):
    """Mean cross-entropy plus every weight-decay term in the "losses" collection (of the tower
    whose name scope is `scope`, when given)."""
    labels = tf.cast(labels, tf.int64)
    cross_entropy = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits,
                                                                   name="cross_entropy_per_example")
    tf.add_to_collection("losses", tf.reduce_mean(cross_entropy, name="cross_entropy"))
    return tf.add_n(tf.get_collection("losses", scope), name="total_loss")


def average_gradients(tower_grads):
    """[(mean gradient, variable)] over the towers' compute_gradients lists (same variables, same order)."""
    if len(tower_grads) == 1:
        return tower_grads[0]
    scale = 1.0 / len(tower_grads)
    return [(tf.multiply(tf.add_n([g for g, _ in pairs]), scale), pairs[0][1]) for pairs in zip(*tower_grads)]


def _add_loss_summaries(total_losses):
    averages = tf.train.ExponentialMovingAverage(0.9, name="avg")
    losses = tf.get_collection("losses") + total_losses
    averages_op = averages.apply(losses)
    for each in losses:
        tf.summary.scalar(each.op.name + " (raw)", each)
        tf.summary.scalar(each.op.name, averages.average(each))
    return averages_op


def train(total_loss, global_step, batch_size: int, num_examples_per_epoch: int, sync_replicas: int = 0,
          tower_devices=None, wrap_optimizer=None):
    """The training op; with sync_replicas=N, also the SyncReplicasOptimizer (for its hook), and
    with `wrap_optimizer` (a function of the optimizer: cifar10_train.py's --staleness) the wrapped
    optimizer. `total_loss`: the loss, or a list of the towers' losses, whose gradients are computed
    under the matching `tower_devices` (device names or functions) and averaged."""
    total_losses = list(total_loss) if isinstance(total_loss, (list, tuple)) else [total_loss]
    tower_devices = tower_devices or [None] * len(total_losses)
    decay_steps = int(num_examples_per_epoch / batch_size * NUM_EPOCHS_PER_DECAY)
    lr = tf.train.exponential_decay(INITIAL_LEARNING_RATE, global_step, decay_steps, LEARNING_RATE_DECAY_FACTOR,
                                    staircase=True)
    tf.summary.scalar("learning_rate", lr)
    loss_averages_op = _add_loss_summaries(total_losses)
    variable_averages = tf.train.ExponentialMovingAverage(MOVING_AVERAGE_DECAY, global_step)
    opt = tf.train.GradientDescentOptimizer(lr)
    if sync_replicas:
        opt = tf.train.SyncReplicasOptimizer(opt, replicas_to_aggregate=sync_replicas,
                                             total_num_replicas=sync_replicas,
                                             variable_averages=variable_averages,
                                             variables_to_average=tf.trainable_variables())
    elif wrap_optimizer is not None:
        opt = wrap_optimizer(opt)
    # under a tf.distribute strategy the replicas' gradients are summed (TF 1.15's v1 optimizers
    # leave the scaling to the model outside an Estimator): each replica's loss over the replicas
    replicas = tf.distribute.get_strategy().num_replicas_in_sync
    tower_grads = []
    for each, device in zip(total_losses, tower_devices):
        with tf.device(device) if device is not None else contextlib.nullcontext(), \
                tf.control_dependencies([loss_averages_op] + tf.get_collection(tf.GraphKeys.UPDATE_OPS)):
            tower_grads.append(opt.compute_gradients(each / replicas if replicas > 1 else each))
    apply_op = opt.apply_gradients(average_gradients(tower_grads), global_step=global_step)
    for var in tf.trainable_variables():
        tf.summary.histogram(var.op.name, var)
    if sync_replicas:   # SyncReplicasOptimizer averages the variables itself, on the chief
        return apply_op, opt
    with tf.control_dependencies([apply_op]):
        return variable_averages.apply(tf.trainable_variables()), (opt if wrap_optimizer is not None else None)
