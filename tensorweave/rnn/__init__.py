"""Recurrent networks: the cells of tf.nn.rnn_cell (cells.py, wrappers.py) and the loops that run
them (loops.py: dynamic_rnn, static_rnn, their bidirectional forms, raw_rnn). Cells are
tf.layers Layers, so this package sits beside layers/, above the op library."""
