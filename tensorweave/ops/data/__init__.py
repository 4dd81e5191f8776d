"""tf.data: datasets as chains of ops whose run-time values are pipelines (pipeline.py).

structure.py    element structures (nests of Tensors / SparseTensors) and their components
pipeline.py     run-time stages: generators, run-ahead threads, parallel map, batching helpers
dataset_ops.py  the dataset ops (sources and transformations) and their kernels
iterator_ops.py iterator resources and ops (IteratorV2, OneShotIterator, MakeIterator, GetNext, handles)
iterator.py     tf.data.Iterator
dataset.py      tf.data.Dataset and the file datasets
experimental.py tf.data.experimental: transformations, CSV/SQL/random sources, pipeline readers
"""
