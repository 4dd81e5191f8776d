"""tf.keras.layers.Embedding (TF 1.15's keras/layers/embeddings.py)."""
from __future__ import annotations

from tensorweave.framework.shapes import TensorShape
from tensorweave.framework.tf_export import tf_export
from tensorweave.keras import backend as K, constraints, initializers, regularizers
from tensorweave.keras.engine.base_layer import Layer, take_weight_options
from tensorweave.ops.nn.impl import embedding_lookup


@tf_export("keras.layers.Embedding")
class Embedding(Layer):
    """Embedding(input_dim, output_dim, embeddings_initializer='uniform', embeddings_regularizer=None,
    activity_regularizer=None, embeddings_constraint=None, mask_zero=False, input_length=None):
    integer ids [batch, ...] -> rows of the `embeddings` weight [input_dim, output_dim]; with
    `mask_zero`, id 0 is padding and the output mask is `ids != 0`; `input_length` fixes the
    sequence length (needed before Flatten/Dense)."""

    def __init__(self, input_dim, output_dim, embeddings_initializer="uniform", embeddings_regularizer=None,
                 activity_regularizer=None, embeddings_constraint=None, mask_zero=False, input_length=None,
                 **kwargs):
        if "input_shape" not in kwargs:
            kwargs["input_shape"] = (input_length,) if input_length else (None,)
        kwargs.setdefault("dtype", K.floatx())
        super().__init__(activity_regularizer=regularizers.get(activity_regularizer), **kwargs)
        self.input_dim = int(input_dim)
        self.output_dim = int(output_dim)
        take_weight_options(self, "embeddings", embeddings_initializer, embeddings_regularizer, embeddings_constraint)
        self.mask_zero = mask_zero
        self.supports_masking = mask_zero
        self.input_length = input_length

    def build(self, input_shape) -> None:
        self.embeddings = self.add_weight("embeddings", shape=(self.input_dim, self.output_dim),
                                          initializer=self.embeddings_initializer,
                                          regularizer=self.embeddings_regularizer,
                                          constraint=self.embeddings_constraint, dtype=self.dtype)
        self.built = True

    def call(self, inputs):
        if inputs.dtype.base_dtype.name not in ("int32", "int64"):
            inputs = K.cast(inputs, "int32")
        return embedding_lookup(self.embeddings, inputs)

    def compute_mask(self, inputs, mask=None):
        if not self.mask_zero:
            return None
        return K.not_equal(inputs, 0)

    def compute_output_shape(self, input_shape):
        dims = TensorShape(input_shape).as_list()
        if self.input_length is None:
            return TensorShape(dims + [self.output_dim])
        lengths = list(self.input_length) if isinstance(self.input_length, (list, tuple)) else [self.input_length]
        if len(lengths) != len(dims) - 1:
            raise ValueError(f'"input_length" is {self.input_length}, but received input has shape {tuple(dims)}')
        for i, (given, seen) in enumerate(zip(lengths, dims[1:])):
            if given is not None and seen is not None and given != seen:
                raise ValueError(f'"input_length" is {self.input_length}, but received input has shape '
                                 f"{tuple(dims)}")
            if given is None:
                lengths[i] = seen
        return TensorShape([dims[0]] + lengths + [self.output_dim])

    def get_config(self) -> dict:
        return {**super().get_config(), "input_dim": self.input_dim, "output_dim": self.output_dim,
                "embeddings_initializer": initializers.serialize(self.embeddings_initializer),
                "embeddings_regularizer": regularizers.serialize(self.embeddings_regularizer),
                "activity_regularizer": regularizers.serialize(self.activity_regularizer),
                "embeddings_constraint": constraints.serialize(self.embeddings_constraint),
                "mask_zero": self.mask_zero, "input_length": self.input_length}
