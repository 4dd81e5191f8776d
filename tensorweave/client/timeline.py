"""Timeline: a traced step's StepStats as a Chrome trace (chrome://tracing, Perfetto).

TF1 usage, unchanged:

    run_metadata = tf.RunMetadata()
    sess.run(y, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
             run_metadata=run_metadata)
    trace = timeline.Timeline(run_metadata.step_stats).generate_chrome_trace_format()

Each device (one per task) is a process named "<device> Compute"; each op an "X" region
named by its op type, with args name/op/input<i>; with show_dataflow, arrows join a
tensor's producer to consumers on other lanes or devices (a _Send to its _Recv).
"""
from __future__ import annotations

import json
import re

from tensorweave.framework.tf_export import tf_export

_LABEL = re.compile(r"(.*) = (.*)\((.*)\)")


@tf_export("python.client.timeline.AllocationMaximum")
class AllocationMaximum:
    """Peak memory of one allocator (not tracked by tensorweave: always empty)."""

    def __init__(self, timestamp: int = 0, num_bytes: int = 0, tensors=()):
        self.timestamp, self.num_bytes, self.tensors = timestamp, num_bytes, set(tensors)


@tf_export("python.client.timeline.StepStatsAnalysis")
class StepStatsAnalysis:
    def __init__(self, chrome_trace: "_ChromeTraceFormatter", allocator_maximums: dict):
        self.chrome_trace = chrome_trace
        self.allocator_maximums = allocator_maximums


class _ChromeTraceFormatter:
    """Collects Chrome trace events (catapult's JSON trace event format)."""

    def __init__(self):
        self._events: list = []
        self._metadata: list = []

    def emit_pid(self, name: str, pid: int) -> None:
        self._metadata.append({"name": "process_name", "ph": "M", "pid": pid, "args": {"name": name}})

    def emit_tid(self, name: str, pid: int, tid: int) -> None:
        self._metadata.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid, "args": {"name": name}})

    def emit_region(self, timestamp: int, duration: int, pid: int, tid: int, category: str, name: str,
                    args: dict) -> None:
        self._events.append({"ph": "X", "cat": category, "name": name, "pid": pid, "tid": tid,
                             "ts": timestamp, "dur": duration, "args": args})

    def emit_flow(self, name: str, start: tuple, end: tuple, flow_id: int) -> None:
        for ph, (ts, pid, tid) in (("s", start), ("t", end)):
            self._events.append({"ph": ph, "cat": "DataFlow", "name": name, "pid": pid, "tid": tid,
                                 "ts": ts, "id": flow_id})

    def format_to_string(self, pretty: bool = False) -> str:
        trace = {"traceEvents": self._metadata + self._events}
        if pretty:
            return json.dumps(trace, indent=4, separators=(",", ": "))
        return json.dumps(trace, separators=(",", ":"))


def _parse_label(label: str, node_name: str) -> tuple:
    m = _LABEL.match(label or "")
    if m is None:
        return node_name, "unknown", []
    name, op, inputs = m.groups()
    return name, op, [i for i in inputs.split(", ") if i] if inputs else []


@tf_export("python.client.timeline.Timeline")
class Timeline:
    """tf.python.client.timeline.Timeline(step_stats, graph=None)."""

    def __init__(self, step_stats, graph=None):
        self._step_stats = step_stats
        self._graph = graph

    def _lanes(self) -> dict:
        """Non-overlapping lanes per device: (device index, node index) -> lane."""
        lanes_of = {}
        for d, dev in enumerate(self._step_stats.dev_stats):
            ends: list = []
            for ns in sorted(range(len(dev.node_stats)), key=lambda i: dev.node_stats[i].all_start_micros):
                s = dev.node_stats[ns]
                end = s.all_start_micros + s.all_end_rel_micros
                for lane, last in enumerate(ends):
                    if s.all_start_micros >= last:
                        ends[lane] = end
                        break
                else:
                    lane = len(ends)
                    ends.append(end)
                lanes_of[(d, ns)] = lane
        return lanes_of

    def analyze_step_stats(self, show_dataflow: bool = True, show_memory: bool = True,
                           op_time: str = "schedule") -> StepStatsAnalysis:
        trace = _ChromeTraceFormatter()
        lanes = self._lanes()
        trace.emit_pid("Allocators", 0)
        pids: dict = {}
        pid = 1
        for dev in self._step_stats.dev_stats:
            if dev.device not in pids:
                pids[dev.device] = pid
                trace.emit_pid(dev.device + " Compute", pid)
                trace.emit_pid(dev.device + " Tensors", pid + 1)
                pid += 2
        produced: dict = {}   # node name -> (end time, pid, tid)
        for d, dev in enumerate(self._step_stats.dev_stats):
            for n, ns in enumerate(dev.node_stats):
                produced[ns.node_name] = (ns.all_start_micros + ns.all_end_rel_micros, pids[dev.device],
                                          lanes[(d, n)])
        flow_id = 0
        for d, dev in enumerate(self._step_stats.dev_stats):
            dpid = pids[dev.device]
            for n, ns in enumerate(dev.node_stats):
                tid = lanes[(d, n)]
                _, op, inputs = _parse_label(ns.timeline_label, ns.node_name)
                if op == "unknown" and not ns.timeline_label:
                    op = ns.node_name
                args = {"name": ns.node_name, "op": op}
                for i, inp in enumerate(inputs):
                    args[f"input{i}"] = inp
                trace.emit_region(ns.all_start_micros, ns.all_end_rel_micros, dpid, tid, "Op", op, args)
                if not show_dataflow:
                    continue
                for inp in inputs:
                    src = inp.lstrip("^").split(":")[0]
                    start = produced.get(src)
                    if start is None or (start[1], start[2]) == (dpid, tid):
                        continue
                    trace.emit_flow(inp, start, (ns.all_start_micros, dpid, tid), flow_id)
                    flow_id += 1
        return StepStatsAnalysis(trace, {})

    def generate_chrome_trace_format(self, show_dataflow: bool = True, show_memory: bool = False,
                                     op_time: str = "schedule") -> str:
        """The step as a Chrome trace JSON string (pretty-printed, as TF's)."""
        analysis = self.analyze_step_stats(show_dataflow=show_dataflow, show_memory=show_memory,
                                           op_time=op_time)
        return analysis.chrome_trace.format_to_string(pretty=True)
