"""The Keras layers over feature columns: tf.keras.layers.DenseFeatures (the layer form of
tf.feature_column.input_layer) and tf.keras.experimental.SequenceFeatures (of
tf.contrib.feature_column.sequence_input_layer); the columns' code is feature_column/layers.py."""
from __future__ import annotations

from tensorweave.feature_column.layers import dense_columns, dense_tensors, sequence_dense_columns, \
    sequence_dense_tensors
from tensorweave.framework.api import GraphKeys, get_collection
from tensorweave.framework.graph import get_default_graph
from tensorweave.framework.tf_export import tf_export
from tensorweave.keras import backend as K
from tensorweave.keras.engine.base_layer import Layer
from tensorweave.ops.state.variable_scope import AUTO_REUSE, VariableScope, variable_scope


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
