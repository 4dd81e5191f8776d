"""tf.saved_model.utils: a tensor as the TensorInfo a SignatureDef holds, and back."""
from __future__ import annotations

from tensorweave.framework import dtypes
from tensorweave.framework.graph import get_default_graph
from tensorweave.framework.importer import prefixed
from tensorweave.framework.sparse_tensor import SparseTensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.framework.tf_protos import meta_graph_pb2
from tensorweave.ops.attr_value_proto import shape_proto


@tf_export("saved_model.build_tensor_info", "saved_model.utils.build_tensor_info")
def build_tensor_info(tensor) -> meta_graph_pb2.TensorInfo:
    """tf.saved_model.utils.build_tensor_info(tensor): the TensorInfo of a Tensor (its name, dtype
    and static shape) or of a SparseTensor (its three tensors' names, as `coo_sparse`)."""
    info = meta_graph_pb2.TensorInfo(dtype=dtypes.as_dtype(tensor.dtype).as_datatype_enum,
                                     tensor_shape=shape_proto(tensor.get_shape()))
    if isinstance(tensor, SparseTensor):
        info.coo_sparse.values_tensor_name = tensor.values.name
        info.coo_sparse.indices_tensor_name = tensor.indices.name
        info.coo_sparse.dense_shape_tensor_name = tensor.dense_shape.name
    else:
        info.name = tensor.name
    return info


@tf_export("saved_model.get_tensor_from_tensor_info", "saved_model.utils.get_tensor_from_tensor_info")
def get_tensor_from_tensor_info(tensor_info, graph=None, import_scope=None):
    """tf.saved_model.utils.get_tensor_from_tensor_info(tensor_info, graph=None, import_scope=None):
    the Tensor (or SparseTensor, for `coo_sparse`) a TensorInfo names in `graph` (default graph),
    its names under `import_scope`. KeyError when the graph has no such tensor."""
    graph = graph or get_default_graph()

    def tensor(name):
        return graph.get_tensor_by_name(prefixed(name, import_scope))
    encoding = tensor_info.WhichOneof("encoding")
    if encoding == "name":
        return tensor(tensor_info.name)
    if encoding == "coo_sparse":
        coo = tensor_info.coo_sparse
        return SparseTensor(tensor(coo.indices_tensor_name), tensor(coo.values_tensor_name),
                            tensor(coo.dense_shape_tensor_name))
    raise ValueError(f"Invalid TensorInfo.encoding: {encoding}. Expected `coo_sparse` or `name` for a dense tensor.")


def get_element_from_tensor_info(tensor_info, graph=None, import_scope=None):
    """The Tensor or Operation a TensorInfo's name names (an op's TensorInfo names the op)."""
    graph = graph or get_default_graph()
    return graph.as_graph_element(prefixed(tensor_info.name, import_scope))
