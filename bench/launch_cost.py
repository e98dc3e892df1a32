#!/usr/bin/env python3
"""Host cost of one kernel launch, in µs: PyTorch launches N tiny kernels back to back (each far shorter
than its launch, so the host is the limit) and the wall time is divided by N. Run it natively and under
`stalldx record -- python3 bench/launch_cost.py` to see what recording adds per launch. Also prints the
cost of one CLOCK_MONOTONIC read (a vDSO call or a system call, by the host's clocksource)."""
import argparse
import time

import torch

ap = argparse.ArgumentParser()
ap.add_argument("--launches", type=int, default=20000)
ap.add_argument("--rounds", type=int, default=5)
args = ap.parse_args()

n = 200000
t0 = time.perf_counter_ns()
for _ in range(n):
    time.clock_gettime_ns(time.CLOCK_MONOTONIC)
clock_ns = (time.perf_counter_ns() - t0) / n

x = torch.zeros(16, device="cuda")
for _ in range(1000):  # warm-up: lazy module loading, the caching allocator
    x.add_(1)
torch.cuda.synchronize()
best = float("inf")
for _ in range(args.rounds):
    t0 = time.perf_counter_ns()
    for _ in range(args.launches):
        x.add_(1)
    torch.cuda.synchronize()
    best = min(best, (time.perf_counter_ns() - t0) / args.launches / 1000)
print(f"launch_cost: {best:.2f} µs per launch (best of {args.rounds} x {args.launches}); clock_gettime {clock_ns:.0f} ns")
