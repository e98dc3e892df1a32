#!/usr/bin/env python3
"""Compares `stalldx diagnose --what-if ...` predictions with a sweep's measured
img/s: prints the table (workers x prefetch: measured, predicted, error) and the median absolute error.
usage: whatif-vs-sweep.py SWEEP.csv WHATIF.txt"""
import csv
import re
import statistics
import sys

measured = {}
with open(sys.argv[1]) as f:
    for row in csv.DictReader(f):
        measured[(int(row["workers"]), int(row["prefetch"]))] = float(row["images_per_second"])
predicted = {}  # the model predicts one rate per worker count, for every prefetch depth
for line in open(sys.argv[2]):
    m = re.match(r"\s+(\d+)\s+([0-9.]+)\s+\S", line)
    if m:
        for (w, p) in measured:
            if w == int(m.group(1)):
                predicted[(w, p)] = float(m.group(2))
errors = []
print(f"{'workers':>7} {'prefetch':>8} {'measured':>9} {'predicted':>9} {'error':>7}")
for key in sorted(measured):
    if key not in predicted:
        continue
    e = (predicted[key] - measured[key]) / measured[key]
    errors.append(abs(e))
    print(f"{key[0]:>7} {key[1]:>8} {measured[key]:>9.0f} {predicted[key]:>9.0f} {100 * e:>+6.1f}%")
if errors:
    print(f"median absolute error {100 * statistics.median(errors):.1f}% over {len(errors)} points")
