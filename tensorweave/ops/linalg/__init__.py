"""tf.linalg.LinearOperator and its family (TF's tensorflow/python/ops/linalg): matrices that are
described by their structure (a diagonal, a Kronecker product, a circulant's spectrum) and
multiplied, solved and reduced through it, never materialised unless to_dense() is asked for."""
