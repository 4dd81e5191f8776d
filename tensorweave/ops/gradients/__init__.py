"""tf.gradients and its central helpers (SumToShape undoes broadcasting once for every op)."""
