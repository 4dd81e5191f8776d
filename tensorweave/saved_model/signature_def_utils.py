"""tf.saved_model.signature_def_utils: SignatureDefs, the named inputs and outputs of a meta graph
that a server (TF Serving's predict, classify and regress) feeds and fetches."""
from __future__ import annotations

from tensorweave.framework.graph import Tensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.framework.tf_protos import meta_graph_pb2, types_pb2
from tensorweave.ops.tensor_proto import to_proto
from tensorweave.saved_model import signature_constants as sc
from tensorweave.saved_model.utils import build_tensor_info


@tf_export("saved_model.build_signature_def", "saved_model.signature_def_utils.build_signature_def")
def build_signature_def(inputs=None, outputs=None, method_name=None, defaults=None) -> meta_graph_pb2.SignatureDef:
    """tf.saved_model.build_signature_def(inputs=None, outputs=None, method_name=None,
    defaults=None): a SignatureDef of {key: TensorInfo} inputs and outputs; `defaults` maps input
    names to constant tensors whose values become the inputs' defaults."""
    signature_def = meta_graph_pb2.SignatureDef()
    for key, info in (inputs or {}).items():
        signature_def.inputs[key].CopyFrom(info)
    for key, info in (outputs or {}).items():
        signature_def.outputs[key].CopyFrom(info)
    if method_name is not None:
        signature_def.method_name = method_name
    for arg_name, default in (defaults or {}).items():
        if not (isinstance(default, Tensor) and default.op.type == "Const"):
            raise ValueError(f"Unable to convert object {default} of type {type(default)} to TensorProto.")
        signature_def.defaults[arg_name].CopyFrom(to_proto(default.op.get_attr("value"), default.dtype))
    return signature_def


@tf_export("saved_model.regression_signature_def", "saved_model.signature_def_utils.regression_signature_def")
def regression_signature_def(examples, predictions) -> meta_graph_pb2.SignatureDef:
    """tf.saved_model.regression_signature_def(examples, predictions): TF Serving's regress
    signature: a string tensor of serialized examples in, a float tensor out."""
    if examples is None:
        raise ValueError("Regression `examples` cannot be None.")
    if not isinstance(examples, Tensor):
        raise ValueError(f"Expected regression `examples` to be of type Tensor. Found `examples` of type "
                         f"{type(examples)}.")
    if predictions is None:
        raise ValueError("Regression `predictions` cannot be None.")
    inputs = build_tensor_info(examples)
    if inputs.dtype != types_pb2.DT_STRING:
        raise ValueError(f"Regression input tensors must be of type string. Found tensors with type {inputs.dtype}.")
    outputs = build_tensor_info(predictions)
    if outputs.dtype != types_pb2.DT_FLOAT:
        raise ValueError(f"Regression output tensors must be of type float. Found tensors with type {outputs.dtype}.")
    return build_signature_def({sc.REGRESS_INPUTS: inputs}, {sc.REGRESS_OUTPUTS: outputs}, sc.REGRESS_METHOD_NAME)


@tf_export("saved_model.classification_signature_def",
           "saved_model.signature_def_utils.classification_signature_def")
def classification_signature_def(examples, classes, scores) -> meta_graph_pb2.SignatureDef:
    """tf.saved_model.classification_signature_def(examples, classes, scores): TF Serving's
    classify signature: a string tensor of serialized examples in, string `classes` and/or float
    `scores` out."""
    if examples is None:
        raise ValueError("Classification `examples` cannot be None.")
    if not isinstance(examples, Tensor):
        raise ValueError(f"Classification `examples` must be a string Tensor. Found `examples` of type "
                         f"{type(examples)}.")
    if classes is None and scores is None:
        raise ValueError("Classification `classes` and `scores` cannot both be None.")
    inputs = build_tensor_info(examples)
    if inputs.dtype != types_pb2.DT_STRING:
        raise ValueError(f"Classification input tensors must be of type string. Found tensors of type {inputs.dtype}")
    outputs = {}
    if classes is not None:
        outputs[sc.CLASSIFY_OUTPUT_CLASSES] = build_tensor_info(classes)
        if outputs[sc.CLASSIFY_OUTPUT_CLASSES].dtype != types_pb2.DT_STRING:
            raise ValueError(f"Classification classes must be of type string Tensor. Found tensors of type "
                             f"{outputs[sc.CLASSIFY_OUTPUT_CLASSES].dtype}.`")
    if scores is not None:
        outputs[sc.CLASSIFY_OUTPUT_SCORES] = build_tensor_info(scores)
        if outputs[sc.CLASSIFY_OUTPUT_SCORES].dtype != types_pb2.DT_FLOAT:
            raise ValueError("Classification scores must be a float Tensor.")
    return build_signature_def({sc.CLASSIFY_INPUTS: inputs}, outputs, sc.CLASSIFY_METHOD_NAME)


@tf_export("saved_model.predict_signature_def", "saved_model.signature_def_utils.predict_signature_def")
def predict_signature_def(inputs, outputs) -> meta_graph_pb2.SignatureDef:
    """tf.saved_model.predict_signature_def(inputs, outputs): TF Serving's predict signature over
    {key: Tensor} inputs and outputs."""
    if not inputs:
        raise ValueError("Prediction `inputs` cannot be None or empty.")
    if not outputs:
        raise ValueError("Prediction `outputs` cannot be None or empty.")
    return build_signature_def({k: build_tensor_info(t) for k, t in inputs.items()},
                               {k: build_tensor_info(t) for k, t in outputs.items()}, sc.PREDICT_METHOD_NAME)


def op_signature_def(op, key: str) -> meta_graph_pb2.SignatureDef:
    """The signature under which TF's builders keep an op (init or train op): its name as an
    output's TensorInfo."""
    return build_signature_def(outputs={key: meta_graph_pb2.TensorInfo(name=op.name)})


@tf_export("saved_model.is_valid_signature", "saved_model.signature_def_utils.is_valid_signature")
def is_valid_signature(signature_def) -> bool:
    """tf.saved_model.is_valid_signature(signature_def): whether it is a valid classify, regress
    or predict signature, as TF Serving checks."""
    if signature_def is None:
        return False
    method, inputs, outputs = signature_def.method_name, signature_def.inputs, signature_def.outputs
    if method == sc.PREDICT_METHOD_NAME:
        return bool(inputs) and bool(outputs)
    if method == sc.REGRESS_METHOD_NAME:
        return (set(inputs) == {sc.REGRESS_INPUTS} and inputs[sc.REGRESS_INPUTS].dtype == types_pb2.DT_STRING
                and set(outputs) == {sc.REGRESS_OUTPUTS}
                and outputs[sc.REGRESS_OUTPUTS].dtype == types_pb2.DT_FLOAT)
    if method == sc.CLASSIFY_METHOD_NAME:
        wanted = {sc.CLASSIFY_OUTPUT_CLASSES: types_pb2.DT_STRING, sc.CLASSIFY_OUTPUT_SCORES: types_pb2.DT_FLOAT}
        return (set(inputs) == {sc.CLASSIFY_INPUTS} and inputs[sc.CLASSIFY_INPUTS].dtype == types_pb2.DT_STRING
                and bool(outputs) and set(outputs) <= set(wanted)
                and all(outputs[k].dtype == wanted[k] for k in outputs))
    return False
