#!/usr/bin/env python3
"""Trims a torch.profiler trace for the test data: drops flow arrows (ac2g, fwdbwd), Python frames and
the profiler's own overhead events (the reader ignores them), and shortens demangled kernel names to 96
characters. Every event the reader uses keeps its times, ids and args.

    trim.py IN.pt.trace.json[.gz] OUT.pt.trace.json.gz
"""
import gzip
import json
import sys

src, dst = sys.argv[1], sys.argv[2]
opener = gzip.open if src.endswith(".gz") else open
with opener(src, "rt") as f:
    doc = json.load(f)
keep = []
for e in doc["traceEvents"]:
    if e.get("cat") in ("ac2g", "fwdbwd", "python_function", "overhead") or e.get("ph") in ("s", "f"):
        continue
    if len(e.get("name", "")) > 96:
        e["name"] = e["name"][:96]
    keep.append(e)
doc["traceEvents"] = keep
with gzip.open(dst, "wt", compresslevel=9) as f:
    json.dump(doc, f, separators=(",", ":"))
