"""Checkpoint ops and file formats: SaveV2 / RestoreV2 / MergeV2Checkpoints run on the task that
holds the variables (io_ops.py); our checkpoints are safetensors data files with a JSON index
(bundle.py); TensorFlow's own V2 checkpoints (an sstable `.index` of protobuf records and raw
`.data-?????-of-?????` files) are read and, with TENSORWEAVE_CHECKPOINT_FORMAT=tensorflow,
written by tf_bundle.py; reader.py reads either, and slices.py holds the slice arithmetic both
share (partitioned variables are saved as slices)."""
