"""The Keras layers over feature columns: tf.keras.layers.DenseFeatures (the layer form of
tf.feature_column.input_layer) and tf.keras.experimental.SequenceFeatures (of
tf.contrib.feature_column.sequence_input_layer); the columns' code is feature_column/layers.py.
Their configs hold the columns as Keras serializes them (TF's serialize_feature_column: class name
and the namedtuple's fields, nested columns, dtypes by name, initializers and normalizer_fn as Keras
objects), so a model over them saves to HDF5/JSON and loads."""
from __future__ import annotations

from tensorweave.feature_column import columns as columns_module
from tensorweave.feature_column.layers import dense_columns, dense_tensors, sequence_dense_columns, \
    sequence_dense_tensors
from tensorweave.framework.api import GraphKeys, get_collection
from tensorweave.framework.dtypes import DType, as_dtype
from tensorweave.framework.graph import get_default_graph
from tensorweave.framework.tf_export import tf_export
from tensorweave.keras import backend as K, initializers
from tensorweave.keras.engine.base_layer import Layer
from tensorweave.keras.utils.generic_utils import deserialize_keras_object, serialize_keras_object
from tensorweave.ops.state.variable_scope import AUTO_REUSE, VariableScope, variable_scope


# the fields TF 2.x added to a column's config, dropped when they hold what TF 1.15's column does
_LATER_FIELDS = {"use_safe_embedding_lookup": True, "file_format": None}


def serialize_feature_column(column):
    """{"class_name": "NumericColumn", "config": {"key": ..., "shape": ..., "dtype": "float32", ...}}
    (a raw feature key, as in a crossed column's keys, stays a string)."""
    if isinstance(column, str):
        return column
    if not isinstance(column, columns_module._FeatureColumn) or not hasattr(column, "_fields"):
        raise ValueError(f"Instance: {column} is not a FeatureColumn")
    config = {}
    for field, value in zip(column._fields, column):
        if field == "keys":
            value = tuple(serialize_feature_column(key) for key in value)
        elif isinstance(value, columns_module._FeatureColumn):
            value = serialize_feature_column(value)
        elif isinstance(value, DType):
            value = value.name
        elif field in ("initializer", "normalizer_fn"):
            value = serialize_keras_object(value)
        config[field] = value
    return {"class_name": type(column).__name__, "config": config}


def deserialize_feature_column(config, custom_objects=None, columns_by_name=None):
    """The column serialize_feature_column described (custom_objects name normalizer functions;
    columns equal to one already made are that one)."""
    if isinstance(config, str):
        return config
    columns_by_name = {} if columns_by_name is None else columns_by_name
    name, fields = config.get("class_name"), dict(config.get("config", {}))
    cls = getattr(columns_module, name, None) if isinstance(name, str) and not name.startswith("_") else None
    if not (isinstance(cls, type) and issubclass(cls, columns_module._FeatureColumn) and hasattr(cls, "_fields")):
        raise ValueError(f"Unknown feature column class: {name!r} (in {config})")
    for field, default in _LATER_FIELDS.items():
        if field not in cls._fields and fields.get(field, default) == default:
            fields.pop(field, None)
    if set(fields) != set(cls._fields):
        raise ValueError(f"Invalid config: {config}, expected keys: {cls._fields}")
    kwargs = {}
    for field, value in fields.items():
        if field == "keys":
            value = tuple(deserialize_feature_column(key, custom_objects, columns_by_name) for key in value)
        elif isinstance(value, dict) and "class_name" in value and field != "initializer":
            value = deserialize_feature_column(value, custom_objects, columns_by_name)
        elif field == "dtype":
            value = as_dtype(value)
        elif field == "initializer":
            value = initializers.deserialize(value, custom_objects=custom_objects) if value is not None else None
        elif field == "normalizer_fn":
            value = deserialize_keras_object(value, custom_objects=custom_objects,
                                             printable_module_name="normalizer_fn")
        elif isinstance(value, list):   # JSON made the tuples (shape, boundaries, vocabulary) lists
            value = tuple(value)
        kwargs[field] = value
    column = cls(**kwargs)
    return columns_by_name.setdefault((name, column.name), column)


class _FeaturesLayer(Layer):
    """A layer whose call on a dict of features gives its columns' outputs; the columns' variables,
    "<layer name>/<column>/...", are the layer's weights, made on the first call and shared by later ones."""
    _columns = _tensors = None   # (the feature_column/layers.py functions a subclass stands on)
    _is_feature_layer = True     # a Sequential may take a dict of features through it (training.py)

    def __init__(self, feature_columns, trainable=True, name=None, **kwargs):
        super().__init__(trainable=trainable, name=name, **kwargs)
        self._feature_columns = type(self)._columns(feature_columns)
        self._variable_scope = None

    def build(self, input_shape) -> None:
        self.built = True   # the columns make their variables when called

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(feature_columns=[serialize_feature_column(c) for c in self._feature_columns], partitioner=None)
        return config

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        if config.pop("partitioner", None) is not None:
            raise ValueError(f"{cls.__name__}: a partitioner in the config is not supported.")
        columns_by_name = {}
        config["feature_columns"] = [deserialize_feature_column(c, custom_objects, columns_by_name)
                                     for c in config["feature_columns"]]
        return cls(**config)

    def call(self, features, training=None):
        if not isinstance(features, dict):
            raise ValueError(f"We expected a dictionary here. Instead we got: {features}")
        if self._variable_scope is None:
            # the variables are named by the name scope of the first call, as Keras names its weights
            # ("sequential/dense_features/<column>/..." in a model), and found there by later calls
            self._variable_scope = VariableScope(AUTO_REUSE, name=get_default_graph().get_name_scope())
        with variable_scope(self._variable_scope, auxiliary_name_scope=False) as scope:
            outputs = type(self)._tensors(features, self._feature_columns, trainable=self.trainable, reuse=AUTO_REUSE)
        # The columns make their variables with get_variable: the layer's weights are those in its scope.
        known = {id(v) for v in self.weights}
        trainable = {id(v) for v in get_collection(GraphKeys.TRAINABLE_VARIABLES)}
        for variable in get_collection(GraphKeys.GLOBAL_VARIABLES, scope=scope.name + "/"):
            if id(variable) not in known:
                K.track_variable(variable)
                (self._trainable_weights if id(variable) in trainable else self._non_trainable_weights).append(variable)
        return outputs


@tf_export("keras.layers.DenseFeatures")
class DenseFeatures(_FeaturesLayer):
    """tf.keras.layers.DenseFeatures(feature_columns, trainable=True, name=None): a layer whose call
    on a dict of features gives input_layer's [batch, sum of n]: the dense columns' (numeric,
    bucketized, embedding, indicator) outputs flattened and concatenated in the order of their names."""
    _columns, _tensors = staticmethod(dense_columns), staticmethod(dense_tensors)


@tf_export("keras.experimental.SequenceFeatures")
class SequenceFeatures(_FeaturesLayer):
    """tf.keras.experimental.SequenceFeatures(feature_columns, trainable=True, name=None): a layer
    whose call on a dict of features gives (sequence_input [batch, T, d], sequence_length
    [batch]) as sequence_input_layer: the sequence columns' (sequence_numeric_column;
    embedding_column or indicator_column over a sequence_categorical_column_with_*) outputs
    concatenated in the order of their names."""
    _columns, _tensors = staticmethod(sequence_dense_columns), staticmethod(sequence_dense_tensors)
