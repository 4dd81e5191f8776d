"""State ops: resource variables (storage, reads, assignment, scatter updates), the optimizers'
fused apply ops, initializers, tf.Variable and variable scopes."""
