"""The few tf.contrib names TF1 programs commonly use, without tf.contrib itself."""
from __future__ import annotations

from tensorweave.contrib import layers, rnn, training  # noqa: F401
