"""Malformed requests to a real server: each is answered with an error (or dropped) and the
server keeps serving everyone else."""
from __future__ import annotations

import msgpack
import numpy as np
import pytest
import zmq

import tensorweave as tf
from tensorweave.distributed import wire
from tensorweave.distributed.worker import WorkerClient
from tensorweave.framework import errors
from tensorweave.framework.graph_def import graph_to_graph_def

T0 = "/job:local/replica:0/task:0"


@pytest.fixture(scope="module")
def served(start_cluster_module):
    c = start_cluster_module({"local": 1})
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None], name="x")
        tf.add(x, tf.constant(1.0), name="y")
    cl = WorkerClient.for_address(c.address("local", 0), T0, 5.0)
    handle = cl.register_graph(graph_to_graph_def(g), ["x:0"], ["y:0"], [])
    return c, cl, handle


@pytest.fixture
def raw(served):
    sock = zmq.Context.instance().socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect("tcp://" + served[0].address("local", 0))
    yield sock
    sock.close(0)


def _still_serves(served):
    _, cl, handle = served
    (y,), _ = cl.run_graph(handle, 1, [np.arange(3, dtype=np.float32)])
    np.testing.assert_array_equal(y, [1.0, 2.0, 3.0])


def _reply(sock, timeout_ms=3000):
    if not sock.poll(timeout_ms, zmq.POLLIN):
        return None
    return wire.decode(sock.recv_multipart())


def _tensor(desc):
    return msgpack.ExtType(1, msgpack.packb(desc))


def _request(method, args, rid=7):
    return msgpack.packb({"id": rid, "m": method, "a": args}, use_bin_type=True)


BAD = {
    "garbage bytes": [b"\xc1\xff\x00garbage"],
    "empty header": [b""],
    "truncated header": [_request("get_status", {})[:-3]],
    "header not a map": [msgpack.packb([1, 2, 3])],
    "id not an int": [msgpack.packb({"id": "seven", "m": "get_status", "a": {}})],
    "args not a map": [msgpack.packb({"id": 7, "m": "get_status", "a": [1]})],
    "method not a string": [msgpack.packb({"id": 7, "m": 5, "a": {}})],
    "unknown method": [_request("format_disk", {})],
    "step_id a string": [_request("run_graph", {"graph_handle": "h", "step_id": "1", "feed_values": []})],
    "feeds not a list": [_request("register_graph", {"graph_def": {"node": []}, "feeds": "x:0"})],
    "graph_def not a map": [_request("register_graph", {"graph_def": [1, 2]})],
    "node without _num_outputs": [_request("register_graph", {"graph_def": {"node": [
        {"name": "a", "op": "Const", "attr": {}}]}, "fetches": ["a:0"]})],
    "unknown op type": [_request("register_graph", {"graph_def": {"node": [
        {"name": "a", "op": "RmRf", "attr": {"_num_outputs": 1}}]}, "fetches": ["a:0"]})],
    "Const with a bad value": [_request("register_graph", {"graph_def": {"node": [
        {"name": "a", "op": "Const", "attr": {"_num_outputs": 1, "dtype": "float32", "value": "zz"}}]},
        "fetches": ["a:0"]})],
    "Const with an unknown dtype": [_request("register_graph", {"graph_def": {"node": [
        {"name": "a", "op": "Const", "attr": {"_num_outputs": 1, "dtype": "float99", "value": 1.0}}]},
        "fetches": ["a:0"]})],
    "shape/dtype lie": [msgpack.packb({"id": 7, "m": "recv_tensor", "a": {
        "value": _tensor(["float64", [4], 0, False])}}), b"\x00" * 16],
    "unknown tensor dtype": [msgpack.packb({"id": 7, "m": "recv_tensor", "a": {
        "value": _tensor(["evil", [1], 0, False])}}), b"\x00" * 4],
    "oversized claim": [msgpack.packb({"id": 7, "m": "recv_tensor", "a": {
        "value": _tensor(["float32", [1 << 31, 1 << 31, 1 << 31], 0, False])}}), b"\x00" * 64],
    "oversized string claim": [msgpack.packb({"id": 7, "m": "recv_tensor", "a": {
        "value": _tensor(["string", [1 << 40], 0, False])}}), b"\x00" * 64],
    "truncated tensor frame": [msgpack.packb({"id": 7, "m": "recv_tensor", "a": {
        "value": _tensor(["int32", [8], 0, False])}}), b"\x00" * 31],
    "missing tensor frame": [msgpack.packb({"id": 7, "m": "recv_tensor", "a": {
        "value": _tensor(["int32", [8], 3, False])}})],
    "recv_tensor for another task": [_request("recv_tensor", {
        "send_device": "a", "recv_device": "/job:x/replica:0/task:9", "tensor_name": "t", "step_id": 1, "value": 1.0})],
    "incarnation not an int": [_request("run_graph", {"graph_handle": "h", "step_id": 1, "incarnation": "x"})],
    "unknown graph handle": [_request("run_graph", {"graph_handle": "nope", "step_id": 1, "feed_values": []})],
    "feed count lie": [_request("run_graph", {"graph_handle": "HANDLE", "step_id": 1, "feed_values": []})],
}

EXPECTED_CODE = {
    "unknown method": errors.UNIMPLEMENTED, "unknown op type": errors.NOT_FOUND,
    "unknown graph handle": errors.NOT_FOUND,
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_request_answers_error_and_server_keeps_serving(served, raw, case):
    frames = BAD[case]
    if case == "feed count lie":
        frames = [_request("run_graph", {"graph_handle": served[2], "step_id": 1, "feed_values": []})]
    raw.send_multipart(frames)
    reply = _reply(raw)
    assert reply is not None, f"no answer to {case}"
    assert reply["ok"] is False
    assert reply["code"] == EXPECTED_CODE.get(case, errors.INVALID_ARGUMENT), reply
    assert isinstance(reply["msg"], str) and reply["msg"]
    _still_serves(served)


def test_error_names_what_was_wrong(served, raw):
    raw.send_multipart(BAD["shape/dtype lie"])
    assert "needs 32 bytes but its frame holds 16" in _reply(raw)["msg"]
    raw.send_multipart(BAD["step_id a string"])
    assert "step_id must be int, got str" in _reply(raw)["msg"]
    raw.send_multipart(BAD["unknown op type"])
    assert "RmRf" in _reply(raw)["msg"]


def test_abrupt_disconnects_and_floods(served):
    ctx = zmq.Context.instance()
    for i in range(20):
        s = ctx.socket(zmq.DEALER)
        s.setsockopt(zmq.LINGER, 0)
        s.connect("tcp://" + served[0].address("local", 0))
        s.send_multipart([b"\x00" * (i * 1000)] + [b"x"] * (i % 5))
        s.close(0)
    # raw TCP garbage that is not even ZMTP: the server drops that connection
    import socket
    host, port = served[0].address("local", 0).split(":")
    with socket.create_connection((host, int(port)), timeout=2) as conn:
        conn.sendall(b"GET / HTTP/1.1\r\n\r\n" + bytes(range(256)) * 4)
    _still_serves(served)


def test_client_error_classes_round_trip(served):
    _, cl, handle = served
    with pytest.raises(errors.NotFoundError, match="not registered on task " + T0):
        cl.run_graph("nope", 1, [])
    with pytest.raises(errors.InvalidArgumentError, match="expected 1 feed values, got 2"):
        cl.run_graph(handle, 1, [np.zeros(1, np.float32), np.zeros(1, np.float32)])
