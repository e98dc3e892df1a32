#!/usr/bin/env python3
"""Where a sampled recording's cost lands, step by step: the start-to-start time of every step of a
stalldx trace (`record --sample`), marked by where it sits against the device windows (metadata
config `device_windows`: "pid:begin_ns-end_ns,..."), and the time each window added over the median
step outside windows.

    scripts/step_times.py TRACE.json [--all]

Reads the merged trace (Chrome JSON, timestamps in µs from metadata origin_ns). Prints one line per
window: the steps it touched (the one before it, those inside, the two after it), each one's
start-to-start time, and the window's excess in ms; then the medians. --all prints every step.
"""
import json
import statistics
import sys


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    with open(sys.argv[1]) as f:
        trace = json.load(f)
    meta = trace.get("metadata", {})
    if isinstance(meta, str):
        sys.exit(f"{sys.argv[1]}: metadata is not an object")
    origin = meta.get("origin_ns", 0)
    windows = []
    for item in str(meta.get("config", {}).get("device_windows", "")).split(","):
        try:
            pid, span = item.split(":")
            b, e = span.split("-")
            windows.append(((int(b) - origin) / 1e3, (int(e) - origin) / 1e3))  # µs like the events
        except ValueError:
            continue
    steps = sorted((e["ts"], e["dur"], e.get("args", {}).get("step", -1)) for e in trace["traceEvents"]
                   if e.get("cat") == "step" and e.get("ph") == "X")
    if len(steps) < 3:
        sys.exit(f"{sys.argv[1]}: {len(steps)} steps")
    # Start-to-start: a step's range plus the gap before the next (a window's attach may sit in the gap).
    period = [(steps[i][0], (steps[i + 1][0] - steps[i][0]) / 1e3, steps[i][2]) for i in range(len(steps) - 1)]

    def where(ts, ms):
        end = ts + ms * 1e3
        for i, (b, e) in enumerate(windows):
            if ts < e and end > b:
                return i
        return -1

    marks = [where(ts, ms) for ts, ms, _ in period]
    loop_tid = next((e.get("tid") for e in trace["traceEvents"] if e.get("cat") == "step" and e.get("ph") == "X"), None)
    # The recorder's own work (ranges named "stalldx recorder: ..."): on the loop's thread its step paid for it.
    own = sorted((e["ts"], e.get("dur", 0), e["name"][len("stalldx recorder: "):], e.get("tid") == loop_tid)
                 for e in trace["traceEvents"] if e.get("ph") == "X" and str(e.get("name", "")).startswith("stalldx recorder: "))
    outside = [ms for (ts, ms, n), w in zip(period, marks) if w < 0 and n >= 5] or \
              [ms for (ts, ms, n), w in zip(period, marks) if w < 0]  # past start-up where there are enough
    base = statistics.median(outside) if outside else float("nan")
    print(f"{len(steps)} steps, {len(windows)} windows; median start-to-start outside windows {base:.1f} ms"
          f" ({len(outside)} steps)")
    for w in range(len(windows)):
        idx = [i for i, m in enumerate(marks) if m == w]
        if not idx:
            print(f"window {w}: no step overlaps it")
            continue
        around = range(max(0, idx[0] - 1), min(len(period), idx[-1] + 3))
        excess = sum(period[i][1] - base for i in around)
        cells = " ".join(f"{period[i][2]}{'*' if marks[i] == w else ''}:{period[i][1]:.0f}" for i in around)
        span = (windows[w][1] - windows[w][0]) / 1e3
        print(f"window {w} ({span:.0f} ms): {cells}  → {excess:+.0f} ms over {len(around)} steps")
        lo = period[around[0]][0]
        hi = period[around[-1]][0] + period[around[-1]][1] * 1e3
        for ts, dur, name, on_loop in own:
            if lo - 2e6 <= ts <= hi + 2e6:  # from 2 s before the steps around it to 2 s after
                print(f"    {(ts - windows[w][0]) / 1e3:+9.1f} ms  {dur / 1e3:7.2f} ms  {'LOOP THREAD ' if on_loop else ''}{name}")
    if "--all" in sys.argv:
        for (ts, ms, n), w in zip(period, marks):
            print(f"  step {n}: {ms:.1f} ms{'  window ' + str(w) if w >= 0 else ''}")


if __name__ == "__main__":
    main()
