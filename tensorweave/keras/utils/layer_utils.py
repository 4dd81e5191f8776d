"""Keras's model summary (keras.utils.layer_utils.print_summary), printed line for line as Keras
2 prints it: a Sequential-like model as Layer (type) / Output Shape / Param #, a model with
branches with a Connected to column too."""
from __future__ import annotations

import numpy as np

from tensorweave.framework import nest
from tensorweave.framework.tf_export import tf_export
from tensorweave.keras import backend as K


@tf_export("keras.utils.get_source_inputs")
def get_source_inputs(tensor, layer=None, node_index=None) -> list:
    """The Input tensors `tensor` is computed from, following its Keras history."""
    if K.keras_history(tensor) is None:
        return [tensor]
    if layer is None or node_index is None:
        layer, node_index, _ = K.keras_history(tensor)
    node = layer._inbound_nodes[node_index]
    if not node.inbound_layers:
        return list(node.input_tensors)
    sources = []
    for inbound_layer, inbound_index, _, x in node.iterate_inbound():
        for source in get_source_inputs(x, inbound_layer, inbound_index):
            if not any(source is s for s in sources):
                sources.append(source)
    return sources


def count_params(weights) -> int:
    """The number of scalars in `weights` (each variable counted once)."""
    unique = {id(w): w for w in weights}.values()
    return int(sum(np.prod(w.shape.as_list()) for w in unique))


def weight_memory_size(weights) -> int:
    """Bytes the weights take."""
    unique = {id(w): w for w in weights}.values()
    return int(sum(np.prod(w.shape.as_list()) * w.dtype.base_dtype.size for w in unique
                   if None not in w.shape.as_list()))


def readable_memory_size(size) -> str:
    """"92.00 Byte", "1.50 KB", ..."""
    for unit in ("Byte", "KB", "MB", "GB", "TB"):
        if size / 1024 < 1:
            return f"{size:.2f} {unit}"
        size /= 1024
    return f"{size:.2f} PB"


def _sequential_like(model) -> bool:
    if type(model).__name__ == "Sequential" or not getattr(model, "_is_graph_network", False):
        return True
    nodes = []
    for v in model._nodes_by_depth.values():
        if len(v) > 1 or (len(v) == 1 and len(nest.flatten(v[0].input_tensors)) > 1):
            return False
        nodes += v
    for layer in model.layers:
        if sum(any(node is n for n in nodes) for node in layer._inbound_nodes) > 1:
            return False
    return True


def print_summary(model, line_length=None, positions=None, print_fn=None) -> None:
    """Prints `model`'s layers, their output shapes and parameter counts, and the totals."""
    print_fn = print_fn or print
    sequential_like = _sequential_like(model)
    if sequential_like:
        line_length = line_length or 65
        positions = positions or [0.45, 0.85, 1.0]
        to_display = ["Layer (type)", "Output Shape", "Param #"]
        relevant_nodes = []
    else:
        line_length = line_length or 98
        positions = positions or [0.3, 0.6, 0.70, 1.0]
        to_display = ["Layer (type)", "Output Shape", "Param #", "Connected to"]
        relevant_nodes = [node for v in model._nodes_by_depth.values() for node in v]
    if positions[-1] <= 1:
        positions = [int(line_length * p) for p in positions]

    def print_row(fields):
        left = [str(x) for x in fields]
        while any(left):
            line = ""
            for col in range(len(left)):
                start = positions[col - 1] if col > 0 else 0
                space = 2 if col != len(positions) - 1 else 0
                cutoff = positions[col] - start - space - (1 if col != len(positions) - 1 else 0)
                fit = left[col][:cutoff]
                breaks = [fit.find(x) + len(x) for x in ("),", "},", "],", "',") if fit.find(x) >= 0]
                if breaks:
                    cutoff = min(breaks)
                    fit = fit[:cutoff]
                if col == 0:
                    line += " "
                line += fit + " " * space
                left[col] = left[col][cutoff:]
                line += " " * (positions[col] - len(line))
            print_fn(line)

    print_fn(f'Model: "{model.name}"')
    print_fn("_" * line_length)
    print_row(to_display)
    print_fn("=" * line_length)
    for layer in model.layers:
        try:
            output_shape = layer.output_shape
        except AttributeError:
            output_shape = "multiple"
        fields = [f"{layer.name} ({type(layer).__name__})", output_shape]
        if sequential_like:
            fields.append(layer.count_params() if layer.built or getattr(layer, "_is_graph_network", False)
                          else "0 (unused)")
        else:
            connections = [f"{inbound.name}[{node_index}][{tensor_index}]"
                           for node in layer._inbound_nodes if any(node is n for n in relevant_nodes)
                           for inbound, node_index, tensor_index, _ in node.iterate_inbound()]
            fields += [layer.count_params(), connections]
        print_row(fields)
        print_fn(" " * line_length)
    print_fn("=" * line_length)
    trainable, non_trainable = model.trainable_weights, model.non_trainable_weights
    trainable_size, non_trainable_size = weight_memory_size(trainable), weight_memory_size(non_trainable)
    trainable_count, non_trainable_count = count_params(trainable), count_params(non_trainable)
    print_fn(f"Total params: {trainable_count + non_trainable_count} "
             f"({readable_memory_size(trainable_size + non_trainable_size)})")
    print_fn(f"Trainable params: {trainable_count} ({readable_memory_size(trainable_size)})")
    print_fn(f"Non-trainable params: {non_trainable_count} ({readable_memory_size(non_trainable_size)})")
    print_fn("_" * line_length)
