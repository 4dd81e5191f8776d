"""Sparse tensor ops (tf.sparse and TF1's sparse_* names): a SparseTensor
(framework/sparse_tensor.py) is three dense tensors, and each op here takes and returns those
parts. core: building, converting and reordering; combine: slicing, splitting, concatenating,
adding; math: products, reductions, softmax and elementwise ops with dense tensors
(embedding_lookup_sparse builds on them: nn/sparse_embedding.py; crosses of sparse features,
which hash strings, are strings/cross.py)."""
