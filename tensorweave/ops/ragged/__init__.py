"""Ragged tensors: the RaggedTensor composite and its value (ragged_tensor.py), and the ways to
make one from Python lists, ranges or other ragged tensors (factory.py), and tf.ragged's array ops
(array_ops.py: boolean_mask, stack, stack_dynamic_partitions)."""
