"""_Send and _Recv: the ops the partitioner puts on the cut edges between tasks.

_Send (one input; attrs tensor_name, send_device, recv_device, T) pushes its value straight
to the receiving task through `ctx.services["send"](dst_task, key, value)`, or deposits it
in the local rendezvous when the receiver is this task. _Recv (attrs tensor_name,
send_device, recv_device, tensor_type, optional _shape) waits on the local rendezvous for
RendezvousKey(send task, recv task, tensor_name, step_id).

A step may carry (StepContext.carry = (task, list)): its Sends to that task then
append [send task, recv task, tensor_name, value] to the list instead, and the values travel
with the step's reply (the master runs that task's partition in its own process).

Values sent are never copied: they are snapshots (kernels never mutate inputs, variables
replace their stored array on update), so the transport may send them zero-copy.
"""
from __future__ import annotations

from typing import NamedTuple

from tensorweave.framework import dtypes, errors
from tensorweave.framework.device import task_of
from tensorweave.framework.graph import get_default_graph
from tensorweave.framework.shapes import unknown_shape
from tensorweave.ops.registry import register, register_gpu


class RendezvousKey(NamedTuple):
    """(send task, recv task, tensor name, step id): what a Send ships and a Recv waits for. An
    immutable record like a frozen dataclass, but hashed and compared in C: every Send and Recv
    of a step hashes it."""

    send_device: str
    recv_device: str
    tensor_name: str
    step_id: int

    def __str__(self) -> str:
        return f"{self.send_device};{self.recv_device};{self.tensor_name};step {self.step_id}"


def _rendezvous(ctx, node):
    rdv = ctx.services.get("rendezvous")
    if rdv is None:
        raise errors.FailedPreconditionError(
            node, node.name, f"{node.op} {node.name} needs a rendezvous: it runs only in a distributed session")
    return rdv


# -- graph-building wrappers (used by the partitioner and by tests) --------------------------
def send(tensor, tensor_name: str, send_device: str, recv_device: str, name: str = None):
    """Adds a _Send of `tensor` to `recv_device` under `tensor_name`."""
    g = get_default_graph()
    return g.create_op("_Send", [tensor], {"tensor_name": tensor_name, "send_device": send_device,
                                           "recv_device": recv_device, "T": tensor.dtype},
                       name=name or "_Send")


def recv(tensor_type, tensor_name: str, send_device: str, recv_device: str, shape=None, name: str = None):
    """Adds a _Recv of the tensor `tensor_name` sent from `send_device` to `recv_device`."""
    g = get_default_graph()
    attrs = {"tensor_name": tensor_name, "send_device": send_device, "recv_device": recv_device,
             "tensor_type": dtypes.as_dtype(tensor_type)}
    if shape is not None:
        attrs["_shape"] = shape
    return g.create_op("_Recv", [], attrs, name=name or "_Recv").outputs[0]


# -- _Send -------------------------------------------------------------------------------------
def _send_kernel(node, ctx):
    src, dst = task_of(node.attr["send_device"]), task_of(node.attr["recv_device"])
    tensor_name = node.attr["tensor_name"]
    if dst == task_of(ctx.task):
        rdv = _rendezvous(ctx, node)

        def local_send(step, value):
            rdv.send(RendezvousKey(src, dst, tensor_name, step.step_id), value)
        return local_send
    remote = ctx.services.get("send")
    if remote is None:
        raise errors.FailedPreconditionError(
            node, node.name, f"_Send {node.name} to {dst} needs the distributed runtime's transport")

    def remote_send(step, value):
        carry = step.carry
        if carry is not None and carry[0] == dst:
            carry[1].append([src, dst, tensor_name, value])   # rides back with the step's reply
            return
        remote(dst, RendezvousKey(src, dst, tensor_name, step.step_id), value)
    return remote_send


register("_Send", lambda op: [], _send_kernel, grad=None, stateful=True, needs_step=True)
register_gpu("_Send", host_inputs=(0,))


# -- _Recv -------------------------------------------------------------------------------------
def _recv_infer(op):
    shape = op._attrs.get("_shape")
    return [(op.get_attr("tensor_type"), shape if shape is not None else unknown_shape())]


def _recv_kernel(node, ctx):
    key_parts = (task_of(node.attr["send_device"]), task_of(node.attr["recv_device"]), node.attr["tensor_name"])
    rdv = _rendezvous(ctx, node)
    name = node.name

    def recv_value(step):
        return rdv.recv(RendezvousKey(*key_parts, step.step_id), step, name)
    return recv_value


register("_Recv", _recv_infer, _recv_kernel, grad=None, stateful=True, needs_step=True, blocking=True)
register_gpu("_Recv", host_outputs=(0,))
