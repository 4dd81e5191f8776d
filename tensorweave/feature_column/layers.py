"""What reads feature columns (TF 1.15's tf.feature_column): input_layer (the dense input of a
network), linear_model (a linear model's logits), make_parse_example_spec (the spec of
tf.parse_example for the raw features the columns read), and tf.contrib.feature_column's
sequence_input_layer (the [batch, T, d] input of a recurrent network and each example's length)
and concatenate_context_input.

Variables are named as TF's, so checkpoints line up: input_layer/<column>/embedding_weights,
linear_model/<column>/weights, linear_model/bias_weights (`_1`, ... for later calls in one
graph). Columns are visited sorted by name."""
from __future__ import annotations

from tensorweave.framework import dtypes
from tensorweave.framework.api import GraphKeys, add_to_collection, control_dependencies, get_collection, name_scope
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.concat import concat
from tensorweave.ops.array.core import expand_dims, identity, reshape, shape
from tensorweave.ops.array.pad import tile
from tensorweave.ops.debugging.asserts import assert_equal, assert_rank, assert_type
from tensorweave.ops.math.binary import add_n
from tensorweave.ops.math.linalg import matmul
from tensorweave.ops.nn.activations import bias_add
from tensorweave.ops.nn.sparse_embedding import safe_embedding_lookup_sparse
from tensorweave.ops.sparse.core import sparse_reshape
from tensorweave.ops.state.initializers import zeros_initializer
from tensorweave.ops.state.partitioned_variables import PartitionedVariable
from tensorweave.ops.state.variable_scope import get_variable, get_variable_scope, variable_scope
from tensorweave.feature_column.columns import (_CategoricalColumn, _DenseColumn, _FeatureColumn, _LazyBuilder,
                                                _SequenceDenseColumn)


def _normalize_feature_columns(feature_columns) -> list:
    """feature_columns as a list; TF's ValueErrors for an empty one, a non-column, a duplicate name."""
    if isinstance(feature_columns, _FeatureColumn):
        feature_columns = [feature_columns]
    if isinstance(feature_columns, dict):
        raise ValueError("Expected feature_columns to be iterable, found dict.")
    feature_columns = list(feature_columns)
    for column in feature_columns:
        if not isinstance(column, _FeatureColumn):
            raise ValueError(f"Items of feature_columns must be a _FeatureColumn. Given (type {type(column)}): "
                             f"{column}.")
    if not feature_columns:
        raise ValueError("feature_columns must not be empty.")
    by_name = {}
    for column in feature_columns:
        if column.name in by_name:
            raise ValueError(f"Duplicate feature column name found for columns: {column} and {by_name[column.name]}. "
                             "This usually means that these columns refer to same base feature. Either one must be "
                             "discarded or a duplicated but renamed item must be inserted in features dict.")
        by_name[column.name] = column
    return feature_columns


def _weight_collections(weight_collections) -> list:
    out = list(weight_collections or [])
    for key in (GraphKeys.GLOBAL_VARIABLES, GraphKeys.MODEL_VARIABLES):
        if key not in out:
            out.append(key)
    return out


def _flat(tensor, column):
    """A column's output as [batch, elements]."""
    return reshape(tensor, shape=(shape(tensor)[0], column._variable_shape.num_elements()))


def _verify_static_batch_size_equality(tensors, columns) -> None:
    expected, expected_column = None, None
    for tensor, column in zip(tensors, columns):
        batch = tensor.shape[0].value if tensor.shape.ndims else None
        if batch is None:
            continue
        if expected is None:
            expected, expected_column = batch, column
        elif batch != expected:
            raise ValueError(f"Batch size (first dimension) of each feature must be same. Batch size of columns "
                             f"({expected_column.name}, {column.name}): ({expected}, {batch})")


@tf_export("feature_column.input_layer")
def input_layer(features, feature_columns, weight_collections=None, trainable=True, cols_to_vars=None,
                cols_to_output_tensors=None):
    """tf.feature_column.input_layer(features, feature_columns, weight_collections=None,
    trainable=True, cols_to_vars=None, cols_to_output_tensors=None): the dense columns' outputs
    for the feature dict `features`, each flattened to [batch, n], concatenated in the order of
    the columns' names: a float32 [batch, sum of n]. cols_to_vars (a dict) receives each column's
    variables, cols_to_output_tensors its output."""
    weight_collections = _weight_collections(weight_collections)
    columns = dense_columns(feature_columns)
    with variable_scope(None, default_name="input_layer", values=list(features.values())):
        return dense_tensors(features, columns, weight_collections, trainable, cols_to_vars=cols_to_vars,
                             cols_to_output_tensors=cols_to_output_tensors)


def dense_columns(feature_columns) -> list:
    """feature_columns as a list sorted by name; ValueError unless each is a dense column."""
    feature_columns = _normalize_feature_columns(feature_columns)
    for column in feature_columns:
        if not isinstance(column, _DenseColumn):
            raise ValueError("Items of feature_columns must be a _DenseColumn. You can wrap a categorical column with "
                             f"an embedding_column or indicator_column. Given: {column}")
    return sorted(feature_columns, key=lambda c: c.name)


def dense_tensors(features, columns, weight_collections=None, trainable=True, reuse=None, cols_to_vars=None,
                  cols_to_output_tensors=None):
    """The columns' outputs for `features`, each flattened to [batch, n], concatenated: [batch, sum
    of n]; each column's variables in the variable scope <current>/<column>: a new one (`_1`, ...)
    per call, or with reuse=AUTO_REUSE, the same one every call."""
    builder = _LazyBuilder(features)
    outputs = []
    for column in columns:
        with (variable_scope(column._var_scope_name, reuse=reuse) if reuse else
              variable_scope(None, default_name=column._var_scope_name)):
            output = _flat(column._get_dense_tensor(builder, weight_collections=weight_collections,
                                                    trainable=trainable), column)
            outputs.append(output)
            if cols_to_vars is not None:
                cols_to_vars[column] = get_collection(GraphKeys.GLOBAL_VARIABLES, scope=get_variable_scope().name)
            if cols_to_output_tensors is not None:
                cols_to_output_tensors[column] = output
    _verify_static_batch_size_equality(outputs, columns)
    return concat(outputs, 1)


@tf_export("contrib.feature_column.sequence_input_layer")
def sequence_input_layer(features, feature_columns, weight_collections=None, trainable=True):
    """tf.contrib.feature_column.sequence_input_layer(features, feature_columns,
    weight_collections=None, trainable=True): (input_layer, sequence_length): the sequence
    columns' outputs (sequence_numeric_column; embedding_column or indicator_column over a
    sequence_categorical_column_with_*) for the feature dict `features`, each as [batch, T, n],
    concatenated in the order of the columns' names: [batch, T, sum of n], zero (or a numeric
    column's default_value) past each example's end; and that end, an int64 [batch], which every
    column must agree on (checked when run). Variables go under sequence_input_layer/<column>/."""
    feature_columns = sequence_dense_columns(feature_columns)
    with variable_scope(None, default_name="sequence_input_layer", values=list(features.values())):
        return sequence_dense_tensors(features, feature_columns, weight_collections, trainable)


def sequence_dense_columns(feature_columns) -> list:
    """feature_columns as a list sorted by name; ValueError unless each is a sequence dense column."""
    feature_columns = _normalize_feature_columns(feature_columns)
    for column in feature_columns:
        if not isinstance(column, _SequenceDenseColumn):
            raise ValueError("All feature_columns must be of type _SequenceDenseColumn. You can wrap a "
                             "sequence_categorical_column with an embedding_column or indicator_column. Given (type "
                             f"{type(column)}): {column}")
    return sorted(feature_columns, key=lambda c: c.name)


def sequence_dense_tensors(features, columns, weight_collections=None, trainable=True, reuse=None):
    """(the columns' [batch, T, n] outputs concatenated, their common lengths) for `features`, each
    column's variables in the variable scope <current>/<column>: a new one (`_1`, ...) per call, or
    with reuse=AUTO_REUSE, the same one every call."""
    builder = _LazyBuilder(features)
    outputs, sequence_lengths = [], []
    for column in columns:
        with (variable_scope(column._var_scope_name, reuse=reuse) if reuse else
              variable_scope(None, default_name=column._var_scope_name)):
            dense, sequence_length = column._get_sequence_dense_tensor(
                builder, weight_collections=weight_collections, trainable=trainable)
            dims = shape(dense)
            outputs.append(reshape(dense, [dims[0], dims[1], column._variable_shape.num_elements()]))
            sequence_lengths.append(sequence_length)
    _verify_static_batch_size_equality(outputs, columns)
    _verify_static_batch_size_equality(sequence_lengths, columns)
    return concat(outputs, -1), _assert_all_equal_and_return(sequence_lengths)


def _assert_all_equal_and_return(tensors):
    """tensors[0], once every tensor equals it (checked when run)."""
    with name_scope(None, "assert_all_equal", tensors):
        if len(tensors) == 1:
            return tensors[0]
        with control_dependencies([assert_equal(tensors[0], t) for t in tensors[1:]]):
            return identity(tensors[0])


@tf_export("contrib.feature_column.concatenate_context_input")
def concatenate_context_input(context_input, sequence_input):
    """tf.contrib.feature_column.concatenate_context_input(context_input, sequence_input): the
    float32 [batch, d1] context_input repeated at every step of the float32 [batch, T, d0]
    sequence_input and appended to it: [batch, T, d0 + d1]."""
    checks = [assert_rank(sequence_input, 3, message="sequence_input must have rank 3", data=[shape(sequence_input)]),
              assert_type(sequence_input, dtypes.float32,
                          message=f"sequence_input must have dtype float32; got {sequence_input.dtype}."),
              assert_rank(context_input, 2, message="context_input must have rank 2", data=[shape(context_input)]),
              assert_type(context_input, dtypes.float32,
                          message=f"context_input must have dtype float32; got {context_input.dtype}.")]
    with control_dependencies(checks):
        padded_length = shape(sequence_input)[1]
        tiled_context_input = tile(expand_dims(context_input, 1), concat([[1], [padded_length], [1]], 0))
    return concat([sequence_input, tiled_context_input], 2)


def _categorical_weighted_sum(column, builder, weight, sparse_combiner, weight_collections, trainable):
    """A categorical column's sum of its ids' weight rows (combined by sparse_combiner)."""
    id_tensor, weight_tensor = column._get_sparse_tensors(builder, weight_collections=weight_collections,
                                                          trainable=trainable)
    id_tensor = sparse_reshape(id_tensor, [id_tensor.dense_shape[0], -1])
    if weight_tensor is not None:
        weight_tensor = sparse_reshape(weight_tensor, [weight_tensor.dense_shape[0], -1])
    return safe_embedding_lookup_sparse(weight, id_tensor, sparse_weights=weight_tensor, combiner=sparse_combiner,
                                        name="weighted_sum")


@tf_export("feature_column.linear_model")
def linear_model(features, feature_columns, units=1, sparse_combiner="sum", weight_collections=None, trainable=True,
                 cols_to_vars=None):
    """tf.feature_column.linear_model(features, feature_columns, units=1, sparse_combiner='sum',
    weight_collections=None, trainable=True, cols_to_vars=None): the logits [batch, units]
    float32 of a linear model: each column's weighted sum (a dense column's values times its
    [n, units] 'weights'; a categorical column's ids' rows of its [num_buckets, units] 'weights'
    combined by sparse_combiner: 'sum', 'mean' or 'sqrtn'), added, plus 'bias_weights' [units].
    Every variable starts at zero. cols_to_vars receives each column's variables and 'bias'."""
    with variable_scope(None, default_name="linear_model") as model_scope:
        pass
    feature_columns = _normalize_feature_columns(feature_columns)
    weight_collections = _weight_collections(weight_collections)
    # TF names each column's layer in the caller's scope, then builds it inside the model's.
    layer_names = {}
    for column in sorted(feature_columns, key=lambda c: c.name):
        with variable_scope(None, default_name=column._var_scope_name) as cvs:
            layer_names[column] = cvs.name.rsplit("/", 1)[-1]
    for column in feature_columns:
        if not isinstance(column, (_DenseColumn, _CategoricalColumn)):
            raise ValueError(f"Items of feature_columns must be either a _DenseColumn or _CategoricalColumn. Given: "
                             f"{column}")
    collected = {} if cols_to_vars is None else cols_to_vars
    with variable_scope(model_scope):   # re-entered: the variables go under linear_model/ (or _1, ...)
        builder = _LazyBuilder(features)
        weighted_sums, ordered = [], []
        for column in sorted(feature_columns, key=lambda c: layer_names[c]):
            ordered.append(column)
            with variable_scope(layer_names[column]) as column_scope:
                categorical = isinstance(column, _CategoricalColumn)
                rows = column._num_buckets if categorical else column._variable_shape.num_elements()
                weight = get_variable("weights", shape=[rows, units], dtype=dtypes.float32,
                                      initializer=zeros_initializer(), trainable=trainable,
                                      collections=[GraphKeys.GLOBAL_VARIABLES])
                _add_to_collections(weight, weight_collections)
                if categorical:
                    weighted_sums.append(_categorical_weighted_sum(column, builder, weight, sparse_combiner,
                                                                   weight_collections, trainable))
                else:
                    dense = column._get_dense_tensor(builder, weight_collections=weight_collections,
                                                     trainable=trainable)
                    weighted_sums.append(matmul(_flat(dense, column), weight, name="weighted_sum"))
            collected[column] = get_collection(GraphKeys.GLOBAL_VARIABLES, scope=column_scope.name + "/")
        _verify_static_batch_size_equality(weighted_sums, ordered)
        no_bias = add_n(weighted_sums, name="weighted_sum_no_bias")
        bias = get_variable("bias_weights", shape=[units], dtype=dtypes.float32, initializer=zeros_initializer(),
                            trainable=trainable, collections=[GraphKeys.GLOBAL_VARIABLES])
        _add_to_collections(bias, weight_collections)
        collected["bias"] = _parts(bias)
        return bias_add(no_bias, bias, name="weighted_sum")


def _parts(var) -> list:
    """A variable as a list: the parts of a PartitionedVariable (a scope's partitioner), as TF lists them."""
    return list(var) if isinstance(var, PartitionedVariable) else [var]


def _add_to_collections(var, weight_collections) -> None:
    for key in weight_collections:
        if key != GraphKeys.GLOBAL_VARIABLES:
            for part in _parts(var):
                add_to_collection(key, part)


@tf_export("feature_column.make_parse_example_spec")
def make_parse_example_spec(feature_columns):
    """tf.feature_column.make_parse_example_spec(feature_columns): the `features` argument of
    tf.parse_example for the raw features the columns read (FixedLenFeature for numeric
    columns, VarLenFeature for categorical ones); ValueError when two columns read one key
    differently."""
    result = {}
    for column in feature_columns:
        if not isinstance(column, _FeatureColumn):
            raise ValueError(f"All feature_columns must be _FeatureColumn instances. Given: {column}")
        config = column._parse_example_spec
        for key, value in config.items():
            if key in result and value != result[key]:
                raise ValueError(f"feature_columns contain different parse_spec for key {key}. Given {value} and "
                                 f"{result[key]}")
        result.update(config)
    return result
