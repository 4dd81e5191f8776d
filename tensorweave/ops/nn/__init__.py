"""Neural-network ops: activations, losses' primitives, convolution and pooling (each with its numpy
kernels module), fused batch norm, and the Python composites of tf.nn (impl.py)."""
