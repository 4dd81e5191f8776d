"""tf.saved_model.constants: the names of a SavedModel's files, directories and collections."""
from __future__ import annotations

from tensorweave.framework.tf_export import tf_export

ASSETS_DIRECTORY = "assets"
tf_export("saved_model.ASSETS_DIRECTORY", "saved_model.constants.ASSETS_DIRECTORY")(ASSETS_DIRECTORY)
ASSETS_KEY = "saved_model_assets"   # the collection of the asset files' AssetFileDefs (as Any protos)
tf_export("saved_model.ASSETS_KEY", "saved_model.constants.ASSETS_KEY")(ASSETS_KEY)
DEBUG_DIRECTORY = "debug"
tf_export("saved_model.DEBUG_DIRECTORY", "saved_model.constants.DEBUG_DIRECTORY")(DEBUG_DIRECTORY)
DEBUG_INFO_FILENAME_PB = "saved_model_debug_info.pb"
tf_export("saved_model.DEBUG_INFO_FILENAME_PB", "saved_model.constants.DEBUG_INFO_FILENAME_PB")(DEBUG_INFO_FILENAME_PB)
LEGACY_INIT_OP_KEY = "legacy_init_op"
tf_export("saved_model.LEGACY_INIT_OP_KEY", "saved_model.constants.LEGACY_INIT_OP_KEY")(LEGACY_INIT_OP_KEY)
MAIN_OP_KEY = "saved_model_main_op"
tf_export("saved_model.MAIN_OP_KEY", "saved_model.constants.MAIN_OP_KEY")(MAIN_OP_KEY)
SAVED_MODEL_SCHEMA_VERSION = 1
tf_export("saved_model.SAVED_MODEL_SCHEMA_VERSION",
          "saved_model.constants.SAVED_MODEL_SCHEMA_VERSION")(SAVED_MODEL_SCHEMA_VERSION)
SAVED_MODEL_FILENAME_PB = "saved_model.pb"
tf_export("saved_model.SAVED_MODEL_FILENAME_PB",
          "saved_model.constants.SAVED_MODEL_FILENAME_PB")(SAVED_MODEL_FILENAME_PB)
SAVED_MODEL_FILENAME_PBTXT = "saved_model.pbtxt"
tf_export("saved_model.SAVED_MODEL_FILENAME_PBTXT",
          "saved_model.constants.SAVED_MODEL_FILENAME_PBTXT")(SAVED_MODEL_FILENAME_PBTXT)
VARIABLES_DIRECTORY = "variables"
tf_export("saved_model.VARIABLES_DIRECTORY", "saved_model.constants.VARIABLES_DIRECTORY")(VARIABLES_DIRECTORY)
VARIABLES_FILENAME = "variables"
tf_export("saved_model.VARIABLES_FILENAME", "saved_model.constants.VARIABLES_FILENAME")(VARIABLES_FILENAME)

# Signature keys TF reserves for ops the loader runs (not public names in TF 1.15 either).
INIT_OP_SIGNATURE_KEY = "__saved_model_init_op"
TRAIN_OP_SIGNATURE_KEY = "__saved_model_train_op"
