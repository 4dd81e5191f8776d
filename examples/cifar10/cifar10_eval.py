"""Evaluates the latest CIFAR-10 checkpoint: precision @ 1 on the test batch, with the moving
averages of the variables restored in their place (as the tutorial does), once (--run_once) or
every --eval_interval_secs, writing a "Precision @ 1" summary to --eval_dir.

    python examples/cifar10/cifar10_eval.py --checkpoint_dir=/tmp/cifar10_train --run_once
"""
import math
import time

import numpy as np

from backend import tf
import cifar10
import cifar10_input

FLAGS = tf.app.flags.FLAGS
tf.app.flags.DEFINE_string("eval_dir", "/tmp/cifar10_eval", "event files of the evaluation")
tf.app.flags.DEFINE_string("checkpoint_dir", "/tmp/cifar10_train", "the trainer's --train_dir")
tf.app.flags.DEFINE_string("data_dir", "/tmp/cifar10_data", "CIFAR-10 binary batches")
tf.app.flags.DEFINE_integer("eval_interval_secs", 60, "seconds between evaluations")
tf.app.flags.DEFINE_boolean("run_once", False, "evaluate the latest checkpoint once and exit")
tf.app.flags.DEFINE_integer("batch_size", 100, "examples per evaluation batch")
tf.app.flags.DEFINE_string("model", "tutorial", "tutorial or xception (as trained)")
tf.app.flags.DEFINE_integer("xception_middle_repeats", 2, "as trained")


def eval_once(saver, summary_writer, top_k_op, summary_op, num_examples: int):
    """Restores the latest checkpoint and returns its precision @ 1 (None without a checkpoint)."""
    ckpt = tf.train.get_checkpoint_state(FLAGS.checkpoint_dir)
    if not (ckpt and ckpt.model_checkpoint_path):
        print(f"No checkpoint in {FLAGS.checkpoint_dir}", flush=True)
        return None
    global_step = ckpt.model_checkpoint_path.split("/")[-1].split("-")[-1]
    with tf.Session() as sess:
        saver.restore(sess, ckpt.model_checkpoint_path)
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess=sess, coord=coord)
        try:
            num_iter = int(math.ceil(num_examples / FLAGS.batch_size))
            correct = sum(int(np.sum(sess.run(top_k_op))) for _ in range(num_iter))
            precision = correct / (num_iter * FLAGS.batch_size)
            summary = tf.Summary()
            summary.ParseFromString(sess.run(summary_op))
            summary.value.add(tag="Precision @ 1", simple_value=precision)
            summary_writer.add_summary(summary, int(global_step))
        finally:
            coord.request_stop()
            coord.join(threads, stop_grace_period_secs=10)
    print(f"step {global_step}: precision @ 1 = {precision:.4f}", flush=True)
    return precision


def main(_):
    cifar10_input.prepare_data(FLAGS.data_dir)
    num_examples = cifar10_input.num_records([f"{FLAGS.data_dir}/{cifar10_input.TEST_FILE}"])
    with tf.Graph().as_default() as g:
        images, labels = cifar10_input.inputs(FLAGS.data_dir, FLAGS.batch_size, eval_data=True)
        logits = cifar10.inference(images, FLAGS.model, is_training=False,
                                   middle_repeats=FLAGS.xception_middle_repeats)
        top_k_op = tf.nn.in_top_k(logits, labels, 1)
        averages = tf.train.ExponentialMovingAverage(cifar10.MOVING_AVERAGE_DECAY)
        saver = tf.train.Saver(averages.variables_to_restore())
        summary_op = tf.summary.merge_all()
        summary_writer = tf.summary.FileWriter(FLAGS.eval_dir, g)
        while True:
            eval_once(saver, summary_writer, top_k_op, summary_op, num_examples)
            if FLAGS.run_once:
                break
            time.sleep(FLAGS.eval_interval_secs)
        summary_writer.close()


if __name__ == "__main__":
    tf.app.run()
