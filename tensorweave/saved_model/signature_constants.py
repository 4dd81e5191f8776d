"""tf.saved_model.signature_constants: the standard signature keys and method names (TF Serving's
predict, classify and regress APIs)."""
from __future__ import annotations

from tensorweave.framework.tf_export import tf_export

DEFAULT_SERVING_SIGNATURE_DEF_KEY = "serving_default"
tf_export("saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY",
          "saved_model.signature_constants.DEFAULT_SERVING_SIGNATURE_DEF_KEY")(DEFAULT_SERVING_SIGNATURE_DEF_KEY)
CLASSIFY_INPUTS = "inputs"
tf_export("saved_model.CLASSIFY_INPUTS", "saved_model.signature_constants.CLASSIFY_INPUTS")(CLASSIFY_INPUTS)
CLASSIFY_METHOD_NAME = "tensorflow/serving/classify"
tf_export("saved_model.CLASSIFY_METHOD_NAME",
          "saved_model.signature_constants.CLASSIFY_METHOD_NAME")(CLASSIFY_METHOD_NAME)
CLASSIFY_OUTPUT_CLASSES = "classes"
tf_export("saved_model.CLASSIFY_OUTPUT_CLASSES",
          "saved_model.signature_constants.CLASSIFY_OUTPUT_CLASSES")(CLASSIFY_OUTPUT_CLASSES)
CLASSIFY_OUTPUT_SCORES = "scores"
tf_export("saved_model.CLASSIFY_OUTPUT_SCORES",
          "saved_model.signature_constants.CLASSIFY_OUTPUT_SCORES")(CLASSIFY_OUTPUT_SCORES)
PREDICT_INPUTS = "inputs"
tf_export("saved_model.PREDICT_INPUTS", "saved_model.signature_constants.PREDICT_INPUTS")(PREDICT_INPUTS)
PREDICT_METHOD_NAME = "tensorflow/serving/predict"
tf_export("saved_model.PREDICT_METHOD_NAME", "saved_model.signature_constants.PREDICT_METHOD_NAME")(PREDICT_METHOD_NAME)
PREDICT_OUTPUTS = "outputs"
tf_export("saved_model.PREDICT_OUTPUTS", "saved_model.signature_constants.PREDICT_OUTPUTS")(PREDICT_OUTPUTS)
REGRESS_INPUTS = "inputs"
tf_export("saved_model.REGRESS_INPUTS", "saved_model.signature_constants.REGRESS_INPUTS")(REGRESS_INPUTS)
REGRESS_METHOD_NAME = "tensorflow/serving/regress"
tf_export("saved_model.REGRESS_METHOD_NAME", "saved_model.signature_constants.REGRESS_METHOD_NAME")(REGRESS_METHOD_NAME)
REGRESS_OUTPUTS = "outputs"
tf_export("saved_model.REGRESS_OUTPUTS", "saved_model.signature_constants.REGRESS_OUTPUTS")(REGRESS_OUTPUTS)
