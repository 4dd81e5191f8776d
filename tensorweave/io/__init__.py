"""tf.io: files, records, parsing and decoding (ops/io/), with the string codecs TF1 files here."""
from __future__ import annotations

from tensorweave.io import gfile  # noqa: F401
from tensorweave.ops.io.decoding import decode_compressed, decode_csv, decode_raw  # noqa: F401
from tensorweave.ops.image.codecs import (  # noqa: F401  (TF1 files the image codecs under tf.io too)
    decode_bmp, decode_gif, decode_image, decode_jpeg, decode_png, encode_jpeg, encode_png)
from tensorweave.ops.data_flow.queues import (  # noqa: F401
    PaddingFIFOQueue, PriorityQueue, QueueBase, RandomShuffleQueue)
from tensorweave.ops.io.file_ops import match_filenames_once, matching_files, read_file, write_file  # noqa: F401
from tensorweave.ops.io.parsing import (  # noqa: F401
    FixedLenFeature, FixedLenSequenceFeature, VarLenFeature, parse_example, parse_single_example)
from tensorweave.ops.io.tfrecord import (  # noqa: F401
    TFRecordCompressionType, TFRecordOptions, TFRecordWriter, tf_record_iterator)
from tensorweave.ops.strings.conversion import decode_base64, encode_base64  # noqa: F401
