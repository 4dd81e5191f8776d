"""tf.estimator.classifier_parse_example_spec and regressor_parse_example_spec (TF's
estimator/canned/parsing_utils.py): the tf.parse_example spec of a premade Estimator's input,
the feature columns' spec plus the label and the weight column."""
from __future__ import annotations

from tensorweave.feature_column.columns import NumericColumn, numeric_column
from tensorweave.feature_column.layers import make_parse_example_spec
from tensorweave.framework import dtypes
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.io.parsing import FixedLenFeature


def _add_label_and_weight(parsing_spec: dict, label_key, label_spec, weight_column) -> dict:
    if label_key in parsing_spec:
        raise ValueError(f"label should not be used as feature. label_key: {label_key}, features: "
                         f"{parsing_spec.keys()}")
    parsing_spec[label_key] = label_spec
    if weight_column is None:
        return parsing_spec
    if isinstance(weight_column, str):
        weight_column = numeric_column(weight_column)
    if not isinstance(weight_column, NumericColumn):
        raise ValueError("weight_column should be an instance of tf.feature_column.numeric_column. Given type: "
                         f"{type(weight_column)} value: {weight_column}")
    if weight_column.key in parsing_spec:
        raise ValueError(f"weight_column should not be used as feature. weight_column: {weight_column.key}, "
                         f"features: {parsing_spec.keys()}")
    parsing_spec.update(weight_column._parse_example_spec)
    return parsing_spec


@tf_export("estimator.classifier_parse_example_spec")
def classifier_parse_example_spec(feature_columns, label_key, label_dtype=dtypes.int64, label_default=None,
                                  weight_column=None) -> dict:
    """tf.estimator.classifier_parse_example_spec(feature_columns, label_key, label_dtype=tf.int64,
    label_default=None, weight_column=None): make_parse_example_spec(feature_columns) plus
    label_key: FixedLenFeature((1,), label_dtype, label_default) and the weight column's (a key
    or a numeric_column). ValueError when the label or the weight is also a feature."""
    return _add_label_and_weight(make_parse_example_spec(feature_columns), label_key,
                                 FixedLenFeature((1,), label_dtype, label_default), weight_column)


@tf_export("estimator.regressor_parse_example_spec")
def regressor_parse_example_spec(feature_columns, label_key, label_dtype=dtypes.float32, label_default=None,
                                 label_dimension=1, weight_column=None) -> dict:
    """tf.estimator.regressor_parse_example_spec(feature_columns, label_key, label_dtype=tf.float32,
    label_default=None, label_dimension=1, weight_column=None): as classifier_parse_example_spec,
    the label a FixedLenFeature((label_dimension,), label_dtype, label_default)."""
    return _add_label_and_weight(make_parse_example_spec(feature_columns), label_key,
                                 FixedLenFeature((label_dimension,), label_dtype, label_default), weight_column)
