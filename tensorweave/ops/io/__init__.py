"""Input and output: files (gfile), TFRecord framing, tf.train.Example protos and their parsing,
record decoding (raw bytes, CSV, numbers) and the reader ops (readers.py, stateful like queues).

gfile.py        local files with TF's error classes; every kernel opens files through it
tfrecord.py     TFRecord framing and masked crc32c; RecordFile; tf.python_io
example_proto.py  tf.train.Example and its parts (protobuf messages)
parsing.py      parse_example / parse_single_example and the feature configurations
decoding.py     decode_raw, decode_csv, string_to_number, decode_compressed
file_ops.py     read_file, write_file, matching_files
serialized_tensors.py  serialize_tensor / parse_tensor (TF's TensorProto bytes)
"""
