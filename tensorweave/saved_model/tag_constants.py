"""tf.saved_model.tag_constants: the standard tags of a SavedModel's meta graphs."""
from __future__ import annotations

from tensorweave.framework.tf_export import tf_export

SERVING = "serve"
tf_export("saved_model.SERVING", "saved_model.tag_constants.SERVING")(SERVING)
TRAINING = "train"
tf_export("saved_model.TRAINING", "saved_model.tag_constants.TRAINING")(TRAINING)
GPU = "gpu"
tf_export("saved_model.GPU", "saved_model.tag_constants.GPU")(GPU)
TPU = "tpu"
tf_export("saved_model.TPU", "saved_model.tag_constants.TPU")(TPU)
