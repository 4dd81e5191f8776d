"""tf.saved_model.builder: SavedModelBuilder and simple_save, TF1's writers of a SavedModel in
TensorFlow's own layout, which TF's loader (and TF Serving) reads:

    export_dir/saved_model.pb (or .pbtxt)   the SavedModel message: schema version 1, one
                                            MetaGraphDef per tag set, with its SignatureDefs
    export_dir/variables/variables.index    the variables, a TensorFlow (TensorBundle) checkpoint
    export_dir/variables/variables.data-00000-of-00001
    export_dir/assets/                      the asset files, copied

Nothing half-written is ever seen as a SavedModel: everything is written into a temporary sibling
directory (`<export_dir>_temp_<host>-<pid>-<uuid>`) that `save()` renames onto the empty
export_dir in one step, so a process killed while exporting leaves no directory
`contains_saved_model` accepts. The next SavedModelBuilder in the same parent directory removes
the temporaries of exporters that are gone (killed), and a save() that fails (a full disk) removes
its own, so they do not accumulate.
"""
from __future__ import annotations

import logging
import os
import shutil
from typing import Optional

from google.protobuf import any_pb2, text_format

from tensorweave.framework.api import GraphKeys
from tensorweave.framework.graph import Operation, Tensor, get_default_graph
from tensorweave.framework.tf_export import tf_export
from tensorweave.framework.tf_protos import SavedModel, meta_graph_pb2, saver_pb2, types_pb2
from tensorweave.ops.checkpoint.bundle import sweep_temporaries, temporary_name, write_atomically
from tensorweave.ops.checkpoint.reader import TENSORFLOW, checkpoint_format
from tensorweave.ops.checkpoint.tf_bundle import rewrite_as_tf_bundle
from tensorweave.saved_model import constants, signature_constants, tag_constants
from tensorweave.saved_model.signature_def_utils import predict_signature_def
from tensorweave.train.saveable import all_saveable_objects
from tensorweave.train.saver import BulkSaverBuilder, Saver

_log = logging.getLogger("tensorweave")
# An AssetFileDef packed in an Any names TF's message, whatever package our copy of it lives in.
ASSET_TYPE_URL = "type.googleapis.com/tensorflow.AssetFileDef"


def _path(p) -> str:
    return os.fsdecode(os.fspath(p))


@tf_export("saved_model.Builder", "saved_model.builder.SavedModelBuilder")
class SavedModelBuilder:
    """tf.saved_model.Builder(export_dir): builds a SavedModel in `export_dir`, which must not
    exist or be empty (AssertionError otherwise, as TF). The first meta graph is added with
    add_meta_graph_and_variables (which saves the variables), later ones with add_meta_graph;
    save() writes saved_model.pb and puts the whole directory in place."""

    def __init__(self, export_dir):
        self._export_dir = os.path.normpath(_path(export_dir))
        sweep_temporaries(os.path.dirname(self._export_dir))
        if os.path.exists(self._export_dir):
            if os.listdir(self._export_dir):
                raise AssertionError(_not_empty(self._export_dir))
        else:
            os.makedirs(self._export_dir)
        self._saved_model = SavedModel(saved_model_schema_version=constants.SAVED_MODEL_SCHEMA_VERSION)
        self._staging: Optional[str] = None     # the temporary sibling written until save()
        self._published = False                 # save() has renamed the staging directory into place
        self._has_saved_variables = False
        self._saved_asset_files: set = set()

    def _write_dir(self) -> str:
        """Where the export is written: the temporary sibling until save() has put it in place."""
        if self._published:
            return self._export_dir
        if self._staging is None:
            self._staging = temporary_name(self._export_dir, "_temp_")
            os.makedirs(self._staging)
        return self._staging

    # -- the meta graphs --------------------------------------------------------------------------
    def _validate_tensor_info(self, tensor_info) -> None:
        if tensor_info is None:
            raise AssertionError("All TensorInfo protos used in the SignatureDefs must have the name and dtype fields "
                                 "set.")
        if tensor_info.WhichOneof("encoding") is None:
            raise AssertionError(f"All TensorInfo protos used in the SignatureDefs must have one of the 'encoding' "
                                 f"fields (e.g., name or coo_sparse) set: {tensor_info}")
        if tensor_info.dtype == types_pb2.DT_INVALID:
            raise AssertionError(f"All TensorInfo protos used in the SignatureDefs must have the dtype field set: "
                                 f"{tensor_info}")

    def _validate_signature_def_map(self, signature_def_map: dict) -> None:
        for signature_def in signature_def_map.values():
            for info in list(signature_def.inputs.values()) + list(signature_def.outputs.values()):
                self._validate_tensor_info(info)
        for key in (constants.INIT_OP_SIGNATURE_KEY, constants.TRAIN_OP_SIGNATURE_KEY):
            if key in signature_def_map:
                raise KeyError(f"SignatureDef map key \"{key}\" is reserved for initialization. Please use a "
                               "different key.")

    def _maybe_add_main_op(self, main_op) -> None:
        if main_op is None:
            return
        if not isinstance(main_op, Operation):
            raise TypeError(f"main_op needs to be an Operation: {main_op!r}")
        graph = get_default_graph()
        for key in (constants.MAIN_OP_KEY, constants.LEGACY_INIT_OP_KEY):
            if graph.get_collection(key):
                raise ValueError(f"Graph already contains one or more main ops under the collection {key}.")
        graph.add_to_collection(constants.MAIN_OP_KEY, main_op)

    def _maybe_create_saver(self, saver=None) -> Saver:
        """TF's builder's saver: sharded, V2, empty allowed; ours always writes TF's format."""
        return saver or Saver(all_saveable_objects(), sharded=True, write_version=saver_pb2.SaverDef.V2,
                              allow_empty=True, builder=BulkSaverBuilder(saver_pb2.SaverDef.V2,
                                                                         checkpoint_format=TENSORFLOW))

    def _save_assets(self, meta_graph_def, assets_collection) -> None:
        """Copies the asset files into assets/ and lists them in the meta graph's
        saved_model_assets collection (AssetFileDefs in Any protos, as TF1's builder does)."""
        assets = _asset_files(assets_collection)
        if not assets:
            return
        assets_dir = os.path.join(self._write_dir(), constants.ASSETS_DIRECTORY)
        os.makedirs(assets_dir, exist_ok=True)
        collection = meta_graph_def.collection_def[constants.ASSETS_KEY].any_list
        for filename, source, tensor_name in assets:
            asset = meta_graph_pb2.AssetFileDef(filename=filename)
            asset.tensor_info.name = tensor_name
            collection.value.append(any_pb2.Any(type_url=ASSET_TYPE_URL, value=asset.SerializeToString()))
            destination = os.path.join(assets_dir, filename)
            if os.path.exists(source) and destination not in self._saved_asset_files:
                shutil.copyfile(source, destination)
                self._saved_asset_files.add(destination)

    def _add_meta_graph(self, meta_graph_def, tags, signature_def_map, assets_collection) -> None:
        self._save_assets(meta_graph_def, assets_collection)
        meta_graph_def.meta_info_def.tags.extend(tags)
        for key, signature_def in signature_def_map.items():
            meta_graph_def.signature_def[key].CopyFrom(signature_def)
        self._saved_model.meta_graphs.add().CopyFrom(meta_graph_def)

    def add_meta_graph(self, tags, signature_def_map=None, assets_collection=None, legacy_init_op=None,
                       clear_devices=False, main_op=None, strip_default_attrs=False, saver=None) -> None:
        """Adds the default graph as a meta graph tagged `tags`, sharing the variables (and
        assets) the first one saved. `main_op` (or `legacy_init_op`: the same, deprecated) runs
        after the variables are restored at load time."""
        if not self._has_saved_variables:
            raise AssertionError("Graph state including variables and assets has not been saved yet. Please invoke "
                                 "`add_meta_graph_and_variables()` first.")
        signature_def_map = signature_def_map or {}
        self._validate_signature_def_map(signature_def_map)
        self._maybe_add_main_op(main_op if main_op is not None else legacy_init_op)
        saver = self._maybe_create_saver(saver)
        meta_graph_def = saver.export_meta_graph(clear_devices=clear_devices, strip_default_attrs=strip_default_attrs)
        self._add_meta_graph(meta_graph_def, tags, signature_def_map, assets_collection)

    def add_meta_graph_and_variables(self, sess, tags, signature_def_map=None, assets_collection=None,
                                     legacy_init_op=None, clear_devices=False, main_op=None,
                                     strip_default_attrs=False, saver=None) -> None:
        """Saves the variables of `sess` (which must be initialized) to variables/ and adds the
        session's graph as the first meta graph, tagged `tags`, with `signature_def_map`
        ({key: SignatureDef}), the asset files of `assets_collection` (string Const tensors of
        file paths, fed the copies' paths at load time) and `main_op`. Call it once, first."""
        if self._has_saved_variables:
            raise AssertionError("Graph state including variables and assets has already been saved. Please invoke "
                                 "`add_meta_graph()` instead.")
        signature_def_map = signature_def_map or {}
        self._validate_signature_def_map(signature_def_map)
        with sess.graph.as_default():
            self._maybe_add_main_op(main_op if main_op is not None else legacy_init_op)
            variables_dir = os.path.join(self._write_dir(), constants.VARIABLES_DIRECTORY)
            os.makedirs(variables_dir, exist_ok=True)
            saver = self._maybe_create_saver(saver)
            prefix = os.path.join(variables_dir, constants.VARIABLES_FILENAME)
            saver.save(sess, prefix, write_meta_graph=False, write_state=False)
            if os.path.exists(prefix + ".index") and checkpoint_format(prefix, "SavedModel") != TENSORFLOW:
                rewrite_as_tf_bundle(prefix)   # a user's saver built to write ours
            meta_graph_def = saver.export_meta_graph(clear_devices=clear_devices,
                                                     strip_default_attrs=strip_default_attrs)
            self._add_meta_graph(meta_graph_def, tags, signature_def_map, assets_collection)
        self._has_saved_variables = True

    def save(self, as_text=False) -> bytes:
        """Writes saved_model.pb (saved_model.pbtxt with `as_text`) and renames the export into
        export_dir; returns the file's path (bytes, as TF)."""
        name = constants.SAVED_MODEL_FILENAME_PBTXT if as_text else constants.SAVED_MODEL_FILENAME_PB
        data = text_format.MessageToString(self._saved_model).encode() if as_text \
            else self._saved_model.SerializeToString(deterministic=True)
        write_dir = self._write_dir()

        def write(tmp):
            with open(tmp, "wb") as f:
                f.write(data)
        try:
            write_atomically(os.path.join(write_dir, name), write)
        except BaseException:
            if write_dir != self._export_dir:   # nothing of a failed export is kept (it may fill the disk)
                shutil.rmtree(write_dir, ignore_errors=True)
                self._staging = None
            raise
        if write_dir != self._export_dir:
            _publish(write_dir, self._export_dir)
            self._staging, self._published = None, True
        path = os.path.join(self._export_dir, name)
        _log.info("SavedModel written to: %s", path)
        return path.encode()


def _not_empty(export_dir: str) -> str:
    return ("Export directory already exists, and isn't empty. Please choose a different export directory, or delete "
            f"all the contents of the specified directory: {export_dir}")


def _publish(staging: str, export_dir: str) -> None:
    """Puts the finished export in place in one rename (onto the empty export_dir)."""
    try:
        os.rename(staging, export_dir)   # rename(2) replaces an empty directory in one step
    except OSError as e:
        raise AssertionError(f"{_not_empty(export_dir)} (the export is left in {staging}: {e})") from None


def _asset_files(assets_collection) -> list:
    """[(file name in assets/, source path, tensor name)] of the asset path tensors, as TF's
    builder names them (the basename; a different file of the same basename gets '_1', ...)."""
    out, sources = [], {}
    for tensor in assets_collection or ():
        if not isinstance(tensor, Tensor):
            raise TypeError(f"Asset path tensor {tensor} must be a Tensor.")
        if tensor.op.type != "Const":
            raise TypeError(f"Asset path tensor {tensor} must be of type constant. Has type {tensor.op.type} instead.")
        if tensor.dtype.name != "string":
            raise TypeError(f"Asset path tensor {tensor} must be of dtype string. Has type {tensor.dtype} instead.")
        value = tensor.op.get_attr("value")
        values = list(getattr(value, "flat", [value]))
        if len(values) != 1:
            raise TypeError(f"Asset path tensor {tensor} must be a scalar.")
        source = os.fsdecode(values[0])
        if not source:
            raise ValueError(f"Asset filepath tensor {tensor} in is invalid.")
        filename = os.path.basename(source)
        i = 1
        while filename in sources and sources[filename] != source and not _same_file(sources[filename], source):
            filename = f"{os.path.basename(source)}_{i}"
            i += 1
        sources[filename] = source
        out.append((filename, source, tensor.name))
    return out


def _same_file(a: str, b: str) -> bool:
    try:
        with open(a, "rb") as fa, open(b, "rb") as fb:
            return fa.read() == fb.read()
    except OSError:
        return False


@tf_export("saved_model.simple_save")
def simple_save(session, export_dir, inputs, outputs, legacy_init_op=None) -> None:
    """tf.saved_model.simple_save(session, export_dir, inputs, outputs, legacy_init_op=None):
    a SavedModel of the session's graph for serving: tagged SERVING, one predict signature
    (`inputs`, `outputs`: {key: Tensor}) as the default serving signature, the ASSET_FILEPATHS
    collection as assets, devices cleared."""
    signature_def_map = {signature_constants.DEFAULT_SERVING_SIGNATURE_DEF_KEY: predict_signature_def(inputs, outputs)}
    builder = SavedModelBuilder(export_dir)
    builder.add_meta_graph_and_variables(session, tags=[tag_constants.SERVING], signature_def_map=signature_def_map,
                                         assets_collection=session.graph.get_collection(GraphKeys.ASSET_FILEPATHS),
                                         main_op=legacy_init_op, clear_devices=True)
    builder.save()
