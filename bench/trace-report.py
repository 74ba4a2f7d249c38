#!/usr/bin/env python3
"""Where a traced program's frames go (bench/trace/acm-trace.sh writes the trace).

    bench/trace-report.py TRACE.json [--frame NAME] [--png FILE] [--slowest N]

A frame is an NVTX range named NAME (default "frame": examples/game_loop.c marks
one per game frame); without such ranges the whole trace is one frame. For each
frame: its length, the host's named ranges inside it (the program's and the
library's), the CUDA calls the host made in it, the time it waited in
synchronisations, and the device's work that started in it (kernels, copies,
memsets: count, busy time, when the first began). Printed: the median and 95th
percentile of each part over the frames after the first, the slowest frames
part by part beside the median, and the device's kernels by name. --png draws
the median frame and the slowest one as timelines (needs matplotlib).
"""
import argparse
import json
import statistics
import sys
from collections import defaultdict


def load(path):
    with open(path) as f:
        doc = json.load(f)
    return doc["traceEvents"] if isinstance(doc, dict) else doc


class Trace:
    def __init__(self, events):
        self.api, self.device, self.sync = [], [], []
        opened, closed = {}, {}
        self.ranges = []  # (start, end, name, tid)
        for e in events:
            ph, pid = e.get("ph"), e.get("pid")
            if ph == "X":
                span = (e["ts"], e["ts"] + e.get("dur", 0.0), e.get("name", "?"), e)
                if pid == "host":
                    self.api.append(span)
                elif pid == "device":
                    self.device.append(span)
                elif pid == "sync":
                    self.sync.append(span)
            elif ph == "B":
                opened[e["id"]] = (e["ts"], e.get("name", "?"), e.get("tid"))
            elif ph == "E":
                closed[e["id"]] = e["ts"]
        for i, (ts, name, tid) in opened.items():  # records come in any order: paired by id
            if i in closed:
                self.ranges.append((ts, closed[i], name, tid))
        for lst in (self.api, self.device, self.sync, self.ranges):
            lst.sort(key=lambda s: s[0])
        self.unclosed = len(opened) - len(self.ranges)

    def frames(self, name):
        found = [(s, e) for s, e, n, _ in self.ranges if n == name]
        if found:
            return found
        spans = self.api + self.device
        if not spans:
            return []
        return [(min(s[0] for s in spans), max(s[1] for s in spans))]


def within(spans, t0, t1):
    """The spans starting in [t0, t1) (sorted by start)."""
    return [s for s in spans if t0 <= s[0] < t1]


def busy(spans):
    """The union of the spans' intervals."""
    total, end = 0.0, None
    for s, e, *_ in sorted(spans, key=lambda x: x[0]):
        if end is None or s > end:
            total += e - s
            end = e
        elif e > end:
            total += e - end
            end = e
    return total


def frame_parts(tr, t0, t1, frame_name, besides):
    """The parts of one frame, µs, by name."""
    p = defaultdict(float)
    p["frame"] = t1 - t0
    p["frame besides " + besides] = t1 - t0
    for s, e, n, _ in tr.ranges:
        if t0 <= s < t1 and n != frame_name:
            p["range: " + n] += e - s
            if n == besides:
                p["frame besides " + besides] -= e - s
    calls = within(tr.api, t0, t1)
    p["CUDA calls (count)"] = len(calls)
    p["CUDA calls"] = sum(e - s for s, e, *_ in calls)
    for s, e, n, _ in calls:
        p["call: " + n] += e - s
    p["host waits in synchronisations"] = sum(e - s for s, e, *_ in within(tr.sync, t0, t1))
    work = within(tr.device, t0, t1)
    p["device work (count)"] = len(work)
    p["device busy"] = busy(work)
    if work:
        p["device: first start after frame start"] = work[0][0] - t0
        p["device: last end after frame start"] = max(w[1] for w in work) - t0
    for s, e, n, _ in work:
        p["kernel: " + n] += e - s
    return p


def pct(values, q):
    v = sorted(values)
    if not v:
        return 0.0
    k = min(len(v) - 1, max(0, int(round(q * (len(v) - 1)))))
    return v[k]


def fmt(key, v):
    return f"{int(v):d}" if key.endswith("(count)") else f"{v:.1f}"


def report(tr, frame_name, besides, slowest):
    frames = tr.frames(frame_name)
    if not frames:
        print("no frames and no events in the trace")
        return None
    parts = [frame_parts(tr, s, e, frame_name, besides) for s, e in frames]
    rank = "frame besides " + besides
    rest = parts[1:] if len(parts) > 1 else parts
    keys = sorted({k for p in rest for k in p})
    order = ["frame", rank] + [k for k in keys if k.startswith("range: ")] + \
        [k for k in keys if k not in ("frame", rank) and not k.startswith(("range: ", "call: ", "kernel: "))]
    calls = sorted((k for k in keys if k.startswith("call: ")),
                   key=lambda k: -statistics.median(p.get(k, 0.0) for p in rest))
    kernels = sorted((k for k in keys if k.startswith("kernel: ")),
                     key=lambda k: -statistics.median(p.get(k, 0.0) for p in rest))
    order += calls[:12] + kernels[:12]
    print(f"{len(frames)} frames named '{frame_name}'"
          f"{' (the first left out of the statistics)' if len(parts) > 1 else ''};"
          f" {len(tr.api)} CUDA calls, {len(tr.device)} device records,"
          f" {len(tr.sync)} synchronisations, {len(tr.ranges)} ranges"
          f"{f', {tr.unclosed} unclosed' if tr.unclosed else ''}")
    print(f"\n{'µs a frame (counts where named)':58s} {'median':>9s} {'p95':>9s} {'max':>9s}")
    for k in order:
        vals = [p.get(k, 0.0) for p in rest]
        print(f"{k[:58]:58s} {fmt(k, statistics.median(vals)):>9s} {fmt(k, pct(vals, 0.95)):>9s}"
              f" {fmt(k, max(vals)):>9s}")
    idx = sorted(range(1, len(parts)) if len(parts) > 1 else [0],
                 key=lambda i: -parts[i][rank])[:slowest]
    med = {k: statistics.median(p.get(k, 0.0) for p in rest) for k in keys}
    for i in idx:
        p = parts[i]
        print(f"\nslow frame {i}: {p[rank]:.1f} µs besides {besides} (median {med[rank]:.1f});"
              " its parts more than 10 µs over their median:")
        over = sorted(((p.get(k, 0.0) - med[k], k) for k in keys
                       if not k.endswith("(count)") and k not in ("frame", rank)), reverse=True)
        shown = 0
        for d, k in over:
            if d <= 10.0:
                break
            print(f"  {k[:60]:60s} {p.get(k, 0.0):9.1f}  (median {med[k]:.1f})")
            shown += 1
        if shown == 0:
            print("  none: the time is spread thinly, or outside any named part")
    by_kernel = defaultdict(list)
    for s, e, n, _ in tr.device:
        by_kernel[n].append(e - s)
    print(f"\n{'device work by name':40s} {'count':>8s} {'total ms':>9s} {'median µs':>10s} {'max µs':>9s}")
    for n, d in sorted(by_kernel.items(), key=lambda x: -sum(x[1]))[:20]:
        print(f"{n[:40]:40s} {len(d):8d} {sum(d) * 1e-3:9.2f} {statistics.median(d):10.2f} {max(d):9.2f}")
    median_i = min(range(len(parts)), key=lambda i: abs(parts[i][rank] - med[rank]))
    return frames, median_i, idx[0]


def draw(tr, frames, picks, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"--png: matplotlib is not installed, {path} not drawn", file=sys.stderr)
        return
    fig, axes = plt.subplots(len(picks), 1, figsize=(13, 3.2 * len(picks)), squeeze=False)
    colours = {}
    palette = plt.get_cmap("tab20").colors

    def colour(name):
        if name not in colours:
            colours[name] = palette[len(colours) % len(palette)]
        return colours[name]

    for ax, (title, i) in zip(axes[:, 0], picks):
        t0, t1 = frames[i]
        t1x = max([t1] + [e for s, e, *_ in within(tr.device, t0, t1)])
        rows = []
        ranges = [r for r in tr.ranges if t0 <= r[0] < t1]
        depth_end = []
        for s, e, n, _ in ranges:
            d = 0
            while d < len(depth_end) and depth_end[d] > s:
                d += 1
            depth_end[d:d + 1] = [e]
            rows.append((f"host ranges {d}", s, e, n))
        rows += [("host CUDA calls", s, e, n) for s, e, n, _ in within(tr.api, t0, t1)]
        rows += [("host waits", s, e, n) for s, e, n, _ in within(tr.sync, t0, t1)]
        rows += [(f"device stream {ev['tid']}", s, e, n) for s, e, n, ev in within(tr.device, t0, t1)]
        labels = sorted({r[0] for r in rows}, key=lambda l: (not l.startswith("host"), l))
        y = {l: k for k, l in enumerate(labels)}
        for lab, s, e, n in rows:
            ax.barh(y[lab], max(e - s, 0.05), left=s - t0, height=0.7, color=colour(n),
                    edgecolor="black", linewidth=0.2)
            if e - s > 0.06 * (t1x - t0):
                ax.text((s + e) / 2 - t0, y[lab], n[:28], ha="center", va="center", fontsize=6)
        ax.set_yticks(range(len(labels)))
        ax.set_yticklabels(labels, fontsize=7)
        ax.invert_yaxis()
        ax.set_xlim(0, t1x - t0)
        ax.set_xlabel("µs from the frame's start")
        ax.set_title(f"{title}: frame {i}, {t1 - t0:.0f} µs", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    print(f"timeline of frames {', '.join(str(i) for _, i in picks)} drawn in {path}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("trace")
    ap.add_argument("--frame", default="frame", help="the NVTX range that marks a frame")
    ap.add_argument("--png", help="draw the median and the slowest frame here")
    ap.add_argument("--slowest", type=int, default=3, help="slow frames shown part by part")
    ap.add_argument("--besides", default="game work",
                    help="a range left out of a frame's length when ranking slow frames "
                         "(game_loop's own work)")
    a = ap.parse_args()
    try:
        tr = Trace(load(a.trace))
    except (OSError, ValueError, KeyError) as err:
        print(f"trace-report: {a.trace}: {err}", file=sys.stderr)
        return 2
    got = report(tr, a.frame, a.besides, max(1, a.slowest))
    if got is not None and a.png:
        frames, median_i, slow_i = got
        draw(tr, frames, [("median frame", median_i), ("slowest frame", slow_i)], a.png)
    return 0


if __name__ == "__main__":
    sys.exit(main())
