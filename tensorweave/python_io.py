"""tf.python_io: TFRecord files from Python (ops/io/tfrecord.py)."""
from __future__ import annotations

from tensorweave.ops.io.tfrecord import TFRecordCompressionType, TFRecordOptions, TFRecordWriter, tf_record_iterator  # noqa: F401
