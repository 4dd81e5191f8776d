"""tf.saved_model.loader: TF1's loader of a SavedModel (TensorFlow's or ours) into a session: the
meta graph of the requested tags is imported (tf.train.import_meta_graph), its variables restored
from variables/ by the Saver its SaverDef names, and its main op run with each asset tensor fed
the path of its copy under assets/."""
from __future__ import annotations

import logging
import os

from google.protobuf import message, text_format

from tensorweave.framework.graph import get_default_graph
from tensorweave.framework.importer import prefixed
from tensorweave.framework.tf_export import tf_export
from tensorweave.framework.tf_protos import SavedModel, meta_graph_pb2
from tensorweave.saved_model import constants
from tensorweave.saved_model.utils import get_element_from_tensor_info
from tensorweave.train.saveable import all_saveable_objects
from tensorweave.train.saver import Saver, import_meta_graph

_log = logging.getLogger("tensorweave")


def _path(p) -> str:
    return os.fsdecode(os.fspath(p))


def parse_saved_model(export_dir):
    """The SavedModel message of `export_dir` (saved_model.pb, else saved_model.pbtxt). IOError
    naming the file when there is none or it does not parse."""
    export_dir = _path(export_dir)
    path_pb = os.path.join(export_dir, constants.SAVED_MODEL_FILENAME_PB)
    path_pbtxt = os.path.join(export_dir, constants.SAVED_MODEL_FILENAME_PBTXT)
    saved_model = SavedModel()
    if os.path.isfile(path_pb):
        with open(path_pb, "rb") as f:
            data = f.read()
        try:
            saved_model.ParseFromString(data)
        except message.DecodeError as e:
            raise IOError(f"Cannot parse file {path_pb}: {e}.") from None
    elif os.path.isfile(path_pbtxt):
        with open(path_pbtxt, "rb") as f:
            data = f.read()
        try:
            text_format.Parse(data.decode("utf-8"), saved_model)
        except (text_format.ParseError, UnicodeDecodeError) as e:
            raise IOError(f"Cannot parse file {path_pbtxt}: {e}.") from None
    else:
        raise IOError(f"SavedModel file does not exist at: {export_dir}{os.path.sep}"
                      f"{{{constants.SAVED_MODEL_FILENAME_PBTXT}|{constants.SAVED_MODEL_FILENAME_PB}}}")
    return saved_model


def meta_graph_for_tags(saved_model, tags):
    """The MetaGraphDef whose tags are exactly `tags`; TF's RuntimeError when there is none."""
    available = [set(m.meta_info_def.tags) for m in saved_model.meta_graphs]
    for meta_graph_def, tag_set in zip(saved_model.meta_graphs, available):
        if tag_set == set(tags):
            return meta_graph_def
    raise RuntimeError(f"MetaGraphDef associated with tags {str(tags).strip('[]')} could not be found in SavedModel. "
                       "To inspect available tag-sets in the SavedModel, please use the SavedModel CLI: "
                       f"`saved_model_cli`\navailable_tags: {available}")


def asset_tensors(export_dir, meta_graph_def, import_scope=None) -> dict:
    """{asset tensor name: path of its file under export_dir/assets}, from the meta graph's
    asset_file_def or (TF1's builders) its saved_model_assets collection."""
    assets = list(meta_graph_def.asset_file_def)
    if not assets and constants.ASSETS_KEY in meta_graph_def.collection_def:
        for packed in meta_graph_def.collection_def[constants.ASSETS_KEY].any_list.value:
            asset = meta_graph_pb2.AssetFileDef()
            asset.ParseFromString(packed.value)
            assets.append(asset)
    directory = os.path.join(_path(export_dir), constants.ASSETS_DIRECTORY)
    return {prefixed(a.tensor_info.name, import_scope): os.path.join(directory, a.filename) for a in assets}


def init_op(meta_graph_def, import_scope=None):
    """The op to run after restoring: the init op signature's, else the main op's, else the legacy
    init op's collection's (one op each); None when there is none."""
    graph = get_default_graph()
    signature = meta_graph_def.signature_def.get(constants.INIT_OP_SIGNATURE_KEY)
    if signature is not None:
        return get_element_from_tensor_info(signature.outputs[constants.INIT_OP_SIGNATURE_KEY], graph, import_scope)
    for key in (constants.MAIN_OP_KEY, constants.LEGACY_INIT_OP_KEY):
        if key in meta_graph_def.collection_def:
            names = meta_graph_def.collection_def[key].node_list.value
            if len(names) != 1:
                raise RuntimeError(f"Expected exactly one SavedModel main op. Found: {list(names)}")
            return graph.as_graph_element(prefixed(names[0], import_scope))
    return None


@tf_export("saved_model.load", "saved_model.loader.load")
def load(sess, tags, export_dir, import_scope=None, **saver_kwargs):
    """tf.saved_model.loader.load(sess, tags, export_dir, import_scope=None, **saver_kwargs):
    imports the meta graph tagged exactly `tags` from the SavedModel in `export_dir` into the
    session's graph (names under `import_scope`), restores its variables into `sess` and runs its
    main op; returns the MetaGraphDef (for its signature_def). `saver_kwargs` go to
    tf.train.import_meta_graph. IOError naming saved_model.pb when it is missing or corrupt,
    RuntimeError when no meta graph has these tags; a variable file that is missing or corrupt is
    the restore's error, naming the file."""
    export_dir = _path(export_dir)
    meta_graph_def = meta_graph_for_tags(parse_saved_model(export_dir), tags)
    with sess.graph.as_default():
        saver = import_meta_graph(meta_graph_def, import_scope=import_scope, **saver_kwargs)
        if isinstance(saver, Saver):
            saver.restore(sess, os.path.join(export_dir, constants.VARIABLES_DIRECTORY, constants.VARIABLES_FILENAME))
        elif all_saveable_objects(scope=import_scope):
            raise ValueError("No tf.train.Saver object was passed to the function "
                             "`SavedModelLoader.restore_variables`. Since there are variables in the graph, a saver is "
                             "required.")
        else:
            _log.info("The specified SavedModel has no variables; no checkpoints were restored.")
        op = init_op(meta_graph_def, import_scope)
        if op is not None:
            sess.run([op], feed_dict=asset_tensors(export_dir, meta_graph_def, import_scope))
    return meta_graph_def


@tf_export("saved_model.contains_saved_model", "saved_model.maybe_saved_model_directory",
           "saved_model.loader.maybe_saved_model_directory")
def maybe_saved_model_directory(export_dir) -> bool:
    """tf.saved_model.contains_saved_model(export_dir): whether `export_dir` holds a SavedModel
    file (saved_model.pb or .pbtxt); True does not promise that it loads."""
    export_dir = _path(export_dir)
    return any(os.path.isfile(os.path.join(export_dir, name))
               for name in (constants.SAVED_MODEL_FILENAME_PB, constants.SAVED_MODEL_FILENAME_PBTXT))
