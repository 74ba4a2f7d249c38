#!/usr/bin/env python3
"""Checks of bench/trace-report.py (the timeline report) on traces with known answers.

    test/trace-report-check.py SOURCE_ROOT

A synthetic trace of five frames, one of them with a slow CUDA call and one
with a late kernel, whose parts are known exactly; then the trace recorded on
a device (data/traces/game-loop-64.json: 12 frames of examples/game_loop
through bench/trace/acm-trace.sh), whose counts are known from the recording.
"""
import importlib.util
import io
import json
import os
import sys
import tempfile
from contextlib import redirect_stderr, redirect_stdout


def load_report(root):
    spec = importlib.util.spec_from_file_location("trace_report",
                                                  os.path.join(root, "bench", "trace-report.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def expect(cond, what):
    if not cond:
        raise AssertionError(what)


def synthetic():
    ev = []
    for f in range(5):
        t = f * 1000.0
        ev.append({"ph": "B", "pid": "host", "tid": 1, "ts": t, "id": 10 * f + 1, "name": "frame"})
        ev.append({"ph": "B", "pid": "host", "tid": 1, "ts": t + 1, "id": 10 * f + 2,
                   "name": "game work"})
        ev.append({"ph": "E", "pid": "host", "tid": 1, "ts": t + 501, "id": 10 * f + 2})
        call = 50.0 if f == 3 else 5.0
        ev.append({"ph": "X", "pid": "host", "tid": 1, "ts": t + 502, "dur": call,
                   "name": "cudaGraphLaunch", "cat": "api", "args": {}})
        # two overlapping kernels on two streams: busy 30 + 10 = 40 µs
        ev.append({"ph": "X", "pid": "device", "tid": 7, "ts": t + 560, "dur": 30.0,
                   "name": "acm_lbm_kernel", "cat": "kernel", "args": {}})
        ev.append({"ph": "X", "pid": "device", "tid": 8, "ts": t + 580, "dur": 20.0,
                   "name": "acm_launch_inbox" if f != 4 else "late", "cat": "kernel", "args": {}})
        ev.append({"ph": "X", "pid": "sync", "tid": 0, "ts": t + 600, "dur": 10.0,
                   "name": "stream synchronize", "cat": "sync", "args": {}})
        ev.append({"ph": "E", "pid": "host", "tid": 1, "ts": t + 655 + call, "id": 10 * f + 1})
    ev.reverse()  # records come in any order
    return ev


def check_synthetic(rep):
    expect(rep.busy([(0, 10), (5, 20), (30, 31)]) == 21, "busy: union of overlapping spans")
    expect(rep.busy([]) == 0, "busy: nothing")
    tr = rep.Trace(synthetic())
    expect(len(tr.ranges) == 10 and tr.unclosed == 0, "ranges paired by id")
    frames = tr.frames("frame")
    expect(len(frames) == 5 and frames[2] == (2000.0, 2660.0), f"frames: {frames}")
    p = rep.frame_parts(tr, 3000.0, 3705.0, "frame", "game work")
    expect(p["frame"] == 705 and p["frame besides game work"] == 205, "frame besides game work")
    expect(p["call: cudaGraphLaunch"] == 50 and p["CUDA calls (count)"] == 1, "calls")
    expect(p["device busy"] == 40 and p["device work (count)"] == 2, "device busy")
    expect(p["device: first start after frame start"] == 560, "device start")
    expect(p["host waits in synchronisations"] == 10, "waits")
    out = io.StringIO()
    with redirect_stdout(out):
        frames, median_i, slow_i = rep.report(tr, "frame", "game work", 1)
    text = out.getvalue()
    expect(slow_i == 3, f"the slowest frame is 3, not {slow_i}")
    expect("slow frame 3" in text and "call: cudaGraphLaunch" in text, "slow frame's parts")
    expect("5 frames named 'frame'" in text, "frame count")
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump({"traceEvents": synthetic()}, f)
    try:
        sys.argv = ["trace-report.py", f.name]
        with redirect_stdout(io.StringIO()):
            expect(rep.main() == 0, "main on a good trace")
        sys.argv = ["trace-report.py", f.name + ".missing"]
        err = io.StringIO()
        with redirect_stdout(io.StringIO()), redirect_stderr(err):
            expect(rep.main() == 2, "main on a missing file")
        expect("No such file" in err.getvalue(), "the missing file named")
    finally:
        os.unlink(f.name)


def check_recorded(rep, root):
    path = os.path.join(root, "data", "traces", "game-loop-64.json")
    if not os.path.exists(path):
        raise AssertionError(f"{path} is missing")
    tr = rep.Trace(rep.load(path))
    frames = tr.frames("frame")
    expect(len(frames) == 12, f"12 frames recorded, found {len(frames)}")
    names = {n for _, _, n, _ in tr.ranges}
    for n in ("enqueue", "game work", "wait and read", "acm_cuda_step_async", "acm: run end"):
        expect(n in names, f"range {n!r} in the recorded trace")
    kernels = {n for _, _, n, _ in tr.device}
    expect("acm_inbox_kernel" in kernels,
           f"the inbox kernel among the device's work: {sorted(kernels)[:8]}")
    for s, e in frames[1:]:
        p = rep.frame_parts(tr, s, e, "frame", "game work")
        expect(p["device work (count)"] > 0, "every frame after the first has device work")
        expect(0 < p["frame besides game work"] < p["frame"], "game work inside the frame")


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(__file__))
    rep = load_report(root)
    check_synthetic(rep)
    check_recorded(rep, root)
    print("trace-report: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
