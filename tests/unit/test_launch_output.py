"""`tensorweave launch`'s copy of its tasks' output (cli._pump): every line prefixed with its task,
progress lines ended by a carriage return kept as lines, and only whole lines written, so that two
tasks writing at once never mix inside a line (a print reaches the pipe as its text, then its
newline)."""
from __future__ import annotations

import io
import os
import threading

from tensorweave import cli


class _Out:
    def __init__(self):
        self.buffer = io.BytesIO()


def _pumped(parts_by_task: dict) -> bytes:
    out = _Out()
    pipes = {tag: os.pipe() for tag in parts_by_task}
    threads = [threading.Thread(target=cli._pump, args=(open(r, "rb"), out, tag)) for tag, (r, _) in pipes.items()]
    for t in threads:
        t.start()
    longest = max(len(p) for p in parts_by_task.values())
    for i in range(longest):   # the tasks' writes alternate, each split mid-line
        for tag, parts in parts_by_task.items():
            if i < len(parts):
                os.write(pipes[tag][1], parts[i])
    for _, w in pipes.values():
        os.close(w)
    for t in threads:
        t.join(10)
    return out.buffer.getvalue()


def test_lines_are_prefixed_and_never_mixed():
    got = _pumped({"[ps:0] ": [b"SERVING grpc://a", b"\n"], "[worker:0] ": [b"SERVING grpc://b", b"\n"]})
    assert sorted(got.splitlines(keepends=True)) == [b"[ps:0] SERVING grpc://a\n", b"[worker:0] SERVING grpc://b\n"]


def test_progress_lines_keep_their_carriage_returns_and_a_last_partial_line_is_ended():
    got = _pumped({"[w] ": [b"step 1", b"\rstep 2\r", b"done\r\n", b"no newline"]})
    assert got == b"[w] step 1\r[w] step 2\r[w] done\n[w] no newline\n"
