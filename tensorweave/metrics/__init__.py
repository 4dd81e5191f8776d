"""tf.metrics: TF1's streaming metrics. Each returns (value, update_op); their state is local
variables (LOCAL_VARIABLES and METRIC_VARIABLES), reset by tf.local_variables_initializer().
base.py holds what they share; means.py, confusion.py, classes.py and ranking.py the metrics."""
from tensorweave.metrics.classes import mean_iou, mean_per_class_accuracy  # noqa: F401
from tensorweave.metrics.confusion import (  # noqa: F401
    auc, false_negatives, false_negatives_at_thresholds, false_positives, false_positives_at_thresholds, precision,
    precision_at_thresholds, recall, recall_at_thresholds, sensitivity_at_specificity, specificity_at_sensitivity,
    true_negatives, true_negatives_at_thresholds, true_positives, true_positives_at_thresholds)
from tensorweave.metrics.means import (  # noqa: F401
    accuracy, mean, mean_absolute_error, mean_cosine_distance, mean_relative_error, mean_squared_error, mean_tensor,
    percentage_below, root_mean_squared_error)
from tensorweave.metrics.ranking import (  # noqa: F401
    average_precision_at_k, precision_at_k, precision_at_top_k, recall_at_k, recall_at_top_k,
    sparse_average_precision_at_k, sparse_precision_at_k)
