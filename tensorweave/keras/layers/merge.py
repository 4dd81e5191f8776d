"""tf.keras.layers merge layers (TF 1.15's keras/layers/merge.py): Add, Subtract, Multiply,
Average, Maximum, Minimum (elementwise, broadcasting as numpy after lower-rank inputs gain axes
after the batch axis), Concatenate and Dot, and their functional forms add, concatenate, ...
Inputs whose shapes cannot be merged raise ValueError naming the layer and the shapes."""
from __future__ import annotations

import functools
import operator

from tensorweave.framework.shapes import TensorShape
from tensorweave.framework.tf_export import tf_export
from tensorweave.keras import backend as K
from tensorweave.keras.engine.base_layer import Layer, shape_tuple


def _shapes(input_shape) -> list:
    return [shape_tuple(s) for s in input_shape]


class _Merge(Layer):
    """An elementwise merge of a list of at least 2 inputs with the same batch size; the output
    mask is the AND of the input masks."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True

    def _broadcast_shape(self, shape1, shape2):
        if shape1 is None or shape2 is None:
            return None
        if len(shape1) < len(shape2):
            return self._broadcast_shape(shape2, shape1)
        if not shape2:
            return tuple(shape1)
        out = list(shape1[:-len(shape2)])
        for i, j in zip(shape1[-len(shape2):], shape2):
            if i is None or j is None:
                out.append(None)
            elif i == 1 or j == 1:
                out.append(j if i == 1 else i)
            elif i != j:
                raise ValueError(f"Layer {self.name}: Operands could not be broadcast together with shapes "
                                 f"{shape1} {shape2}")
            else:
                out.append(i)
        return tuple(out)

    def _check_inputs(self, input_shape) -> list:
        if not isinstance(input_shape, (list, tuple)) or not input_shape or \
                not isinstance(input_shape[0], (list, tuple, TensorShape)) or isinstance(input_shape, TensorShape):
            raise ValueError(f"Layer {self.name}: a merge layer should be called on a list of inputs.")
        shapes = _shapes(input_shape)
        if len(shapes) < 2:
            raise ValueError(f"Layer {self.name}: a merge layer should be called on a list of at least 2 inputs. "
                             f"Got {len(shapes)} inputs.")
        batch_sizes = {s[0] for s in shapes if s is not None} - {None}
        if len(batch_sizes) > 1:
            raise ValueError(f"Layer {self.name}: can not merge tensors with different batch sizes. Got tensors with "
                             f"shapes : {shapes}")
        return shapes

    def _output_shape(self, shapes):
        output = shapes[0][1:] if shapes[0] is not None else None
        for s in shapes[1:]:
            output = self._broadcast_shape(output, s[1:] if s is not None else None)
        return output

    def build(self, input_shape) -> None:
        self._output_shape(self._check_inputs(input_shape))
        self.built = True

    def call(self, inputs):
        ranks = [x.shape.ndims for x in inputs]
        if None not in ranks and len(set(ranks)) > 1:   # lower-rank inputs gain axes after the batch axis
            inputs = list(inputs)
            for i, x in enumerate(inputs):
                while x.shape.ndims < max(ranks):
                    x = K.expand_dims(x, 1)
                inputs[i] = x
        return self._merge_function(inputs)

    def compute_output_shape(self, input_shape):
        shapes = self._check_inputs(input_shape)
        output = self._output_shape(shapes)
        batch_sizes = {s[0] for s in shapes if s is not None} - {None}
        batch = batch_sizes.pop() if batch_sizes else None
        return TensorShape((batch,) + tuple(output)) if output is not None else TensorShape(None)

    def compute_mask(self, inputs, mask=None):
        if mask is None:
            return None
        if not isinstance(mask, (list, tuple)) or len(mask) != len(inputs):
            raise ValueError(f"Layer {self.name}: `mask` should be a list of one mask per input.")
        masks = [K.expand_dims(m, 0) for m in mask if m is not None]
        return K.all(K.concatenate(masks, axis=0), axis=0, keepdims=False) if masks else None


@tf_export("keras.layers.Add")
class Add(_Merge):
    """Add(): the sum of its inputs (a list of tensors of one shape)."""

    def _merge_function(self, inputs):
        return functools.reduce(operator.add, inputs)


@tf_export("keras.layers.Subtract")
class Subtract(_Merge):
    """Subtract(): inputs[0] - inputs[1] (exactly two inputs)."""

    def build(self, input_shape) -> None:
        super().build(input_shape)
        if len(input_shape) != 2:
            raise ValueError(f"Layer {self.name}: a `Subtract` layer should be called on exactly 2 inputs")

    def _merge_function(self, inputs):
        if len(inputs) != 2:
            raise ValueError(f"Layer {self.name}: a `Subtract` layer should be called on exactly 2 inputs")
        return inputs[0] - inputs[1]


@tf_export("keras.layers.Multiply")
class Multiply(_Merge):
    """Multiply(): the elementwise product of its inputs."""

    def _merge_function(self, inputs):
        return functools.reduce(operator.mul, inputs)


@tf_export("keras.layers.Average")
class Average(_Merge):
    """Average(): the elementwise mean of its inputs."""

    def _merge_function(self, inputs):
        return functools.reduce(operator.add, inputs) / len(inputs)


@tf_export("keras.layers.Maximum")
class Maximum(_Merge):
    """Maximum(): the elementwise maximum of its inputs."""

    def _merge_function(self, inputs):
        return functools.reduce(K.maximum, inputs)


@tf_export("keras.layers.Minimum")
class Minimum(_Merge):
    """Minimum(): the elementwise minimum of its inputs."""

    def _merge_function(self, inputs):
        return functools.reduce(K.minimum, inputs)


@tf_export("keras.layers.Concatenate")
class Concatenate(_Merge):
    """Concatenate(axis=-1): its inputs joined along `axis`; every other axis must match."""

    def __init__(self, axis=-1, **kwargs):
        super().__init__(**kwargs)
        self.axis = axis

    def _check_concat(self, input_shape) -> list:
        if not isinstance(input_shape, (list, tuple)) or isinstance(input_shape, TensorShape) or \
                len(input_shape) < 2:
            raise ValueError(f"Layer {self.name}: a `Concatenate` layer should be called on a list of at least 2 "
                             "inputs")
        shapes = _shapes(input_shape)
        known = [s for s in shapes if s is not None]
        if len({len(s) for s in known}) > 1:
            raise ValueError(f"Layer {self.name}: a `Concatenate` layer requires inputs with matching shapes except "
                             f"for the concat axis. Got inputs shapes: {shapes}")
        if known:
            axis = self.axis % len(known[0])
            for i in range(len(known[0])):
                sizes = {s[i] for s in known} - {None}
                if i != axis and len(sizes) > 1:
                    raise ValueError(f"Layer {self.name}: a `Concatenate` layer requires inputs with matching shapes "
                                     f"except for the concat axis. Got inputs shapes: {shapes}")
        return shapes

    def build(self, input_shape) -> None:
        self._check_concat(input_shape)
        self.built = True

    def call(self, inputs):
        return K.concatenate(inputs, axis=self.axis)

    def compute_output_shape(self, input_shape):
        shapes = self._check_concat(input_shape)
        if any(s is None for s in shapes):
            return TensorShape(None)
        output = list(shapes[0])
        axis = self.axis % len(output)
        for s in shapes[1:]:
            output[axis] = None if output[axis] is None or s[axis] is None else output[axis] + s[axis]
        for i in range(len(output)):
            if i != axis and output[i] is None:
                output[i] = next((s[i] for s in shapes if s[i] is not None), None)
        return TensorShape(output)

    def compute_mask(self, inputs, mask=None):
        if mask is None:
            return None
        if not isinstance(mask, (list, tuple)) or len(mask) != len(inputs):
            raise ValueError(f"Layer {self.name}: `mask` should be a list of one mask per input.")
        if all(m is None for m in mask):
            return None
        masks = []
        for x, m in zip(inputs, mask):
            if m is None:
                masks.append(K.cast(K.ones_like(x), "bool"))
            elif m.shape.ndims < x.shape.ndims:
                masks.append(K.expand_dims(m, -1))
            else:
                masks.append(m)
        return K.all(K.concatenate(masks, axis=self.axis), axis=-1, keepdims=False)

    def get_config(self) -> dict:
        return {**super().get_config(), "axis": self.axis}


@tf_export("keras.layers.Dot")
class Dot(_Merge):
    """Dot(axes, normalize=False): per sample, the dot product of two inputs over `axes` (an int,
    or one axis per input; batch axis excluded); with `normalize`, of their l2-normalized values
    along those axes (the cosine proximity)."""

    def __init__(self, axes, normalize=False, **kwargs):
        super().__init__(**kwargs)
        if not isinstance(axes, int):
            if not isinstance(axes, (list, tuple)) or len(axes) != 2 or not all(isinstance(a, int) for a in axes):
                raise ValueError("Invalid format for `axes` - must be an integer or a list/tuple of 2 integers. "
                                 f"Received: {axes}")
        self.axes = axes
        self.normalize = normalize
        self.supports_masking = True

    def _axes_for(self, rank1: int, rank2: int) -> list:
        axes = [self.axes, self.axes] if isinstance(self.axes, int) else list(self.axes)
        return [axes[0] % rank1, axes[1] % rank2]

    def _check_dot(self, input_shape):
        if not isinstance(input_shape, (list, tuple)) or isinstance(input_shape, TensorShape) or \
                len(input_shape) != 2:
            raise ValueError(f"Layer {self.name}: a `Dot` layer should be called on a list of 2 inputs.")
        shape1, shape2 = _shapes(input_shape)
        if shape1 is None or shape2 is None:
            return shape1, shape2, None
        axes = self._axes_for(len(shape1), len(shape2))
        if shape1[axes[0]] is not None and shape2[axes[1]] is not None and shape1[axes[0]] != shape2[axes[1]]:
            raise ValueError(f"Layer {self.name}: Dimension incompatibility {shape1[axes[0]]} != {shape2[axes[1]]}. "
                             f"Layer shapes: {shape1}, {shape2}")
        return shape1, shape2, axes

    def build(self, input_shape) -> None:
        self._check_dot(input_shape)
        self.built = True

    def _merge_function(self, inputs):
        x1, x2 = inputs
        axes = self._axes_for(x1.shape.ndims, x2.shape.ndims)
        if self.normalize:
            x1 = K.l2_normalize(x1, axis=axes[0])
            x2 = K.l2_normalize(x2, axis=axes[1])
        return K.batch_dot(x1, x2, axes)

    def call(self, inputs):
        return self._merge_function(inputs)

    def compute_output_shape(self, input_shape):
        shape1, shape2, axes = self._check_dot(input_shape)
        shape1, shape2 = list(shape1), list(shape2)
        shape1.pop(axes[0])
        shape2.pop(axes[1])
        shape2.pop(0)
        output = shape1 + shape2
        return TensorShape(output + [1] if len(output) == 1 else output)

    def compute_mask(self, inputs, mask=None):
        return None

    def get_config(self) -> dict:
        return {**super().get_config(), "axes": self.axes, "normalize": self.normalize}


def _functional(cls, name: str):
    def merge(inputs, **kwargs):
        return cls(**kwargs)(inputs)
    merge.__name__ = merge.__qualname__ = name
    merge.__doc__ = f"tf.keras.layers.{name}(inputs, **kwargs): {cls.__name__}(**kwargs)(inputs), inputs a list of " \
                    "tensors."
    return merge


add = _functional(Add, "add")
tf_export("keras.layers.add")(add)
subtract = _functional(Subtract, "subtract")
tf_export("keras.layers.subtract")(subtract)
multiply = _functional(Multiply, "multiply")
tf_export("keras.layers.multiply")(multiply)
average = _functional(Average, "average")
tf_export("keras.layers.average")(average)
maximum = _functional(Maximum, "maximum")
tf_export("keras.layers.maximum")(maximum)
minimum = _functional(Minimum, "minimum")
tf_export("keras.layers.minimum")(minimum)


@tf_export("keras.layers.concatenate")
def concatenate(inputs, axis=-1, **kwargs):
    """tf.keras.layers.concatenate(inputs, axis=-1, **kwargs): Concatenate(axis)(inputs)."""
    return Concatenate(axis=axis, **kwargs)(inputs)


@tf_export("keras.layers.dot")
def dot(inputs, axes, normalize=False, **kwargs):
    """tf.keras.layers.dot(inputs, axes, normalize=False, **kwargs): Dot(axes, normalize)(inputs)."""
    return Dot(axes=axes, normalize=normalize, **kwargs)(inputs)
