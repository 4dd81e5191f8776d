"""tf.contrib.slim.model_analyzer: the sizes of a model's variables and of its ops' outputs, as
slim programs print them ("Total size of variables: ...")."""
from __future__ import annotations

from tensorweave.framework.tf_export import tf_export


@tf_export("contrib.slim.model_analyzer.tensor_description")
def tensor_description(var) -> str:
    """'(float32 3x3x64x128)': a tensor's or variable's dtype and shape."""
    dims = var.shape.dims or []
    return f"({var.dtype.name} {'x'.join(str(d.value) for d in dims)})"


@tf_export("contrib.slim.model_analyzer.analyze_vars")
def analyze_vars(variables, print_info=False) -> tuple:
    """(number of scalars, bytes) of variables, each printed with print_info."""
    if print_info:
        print("---------\nVariables: name (type shape) [size]\n---------")
    total_size = total_bytes = 0
    for var in variables:
        size = var.shape.num_elements() or 0   # an unknown shape counts as 0, as in TF
        nbytes = size * var.dtype.size
        total_size += size
        total_bytes += nbytes
        if print_info:
            print(var.name, tensor_description(var), f"[{size}, bytes: {nbytes}]")
    if print_info:
        print(f"Total size of variables: {total_size}\nTotal bytes of variables: {total_bytes}")
    return total_size, total_bytes


@tf_export("contrib.slim.model_analyzer.analyze_ops")
def analyze_ops(graph, print_info=False) -> int:
    """The number of scalars all of graph's ops output (statically known shapes only)."""
    if print_info:
        print("---------\nOperations: name -> (type shapes) [size]\n---------")
    total = 0
    for op in graph.get_operations():
        size = sum(out.shape.num_elements() or 0 for out in op.outputs)
        if print_info:
            shapes = ", ".join(tensor_description(out) for out in op.outputs if out.shape.dims)
            print(op.name, "\t->", shapes, f"[{size}]")
        total += size
    return total
