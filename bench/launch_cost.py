#!/usr/bin/env python3
"""Host cost of one kernel launch, in µs: PyTorch launches N tiny kernels back to back (each far shorter
than its launch, so the host is the limit) and the wall time is divided by N. Run it natively and under
`stalldx record -- python3 bench/launch_cost.py` to see what recording adds per launch. Also prints the
cost of one cudaGetDevice through the CUDA runtime PyTorch loaded (a call that does no work: what a
recorder's interception adds to every CUDA call) and of one CLOCK_MONOTONIC read."""
import argparse
import ctypes
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

# The runtime library this process loaded (PyTorch's own copy), called directly.
cudart = next((line.split()[-1] for line in open("/proc/self/maps") if "libcudart" in line), None)
query_ns = float("nan")
if cudart:
    get_device = ctypes.CDLL(cudart).cudaGetDevice
    dev = ctypes.c_int()
    for _ in range(1000):
        get_device(ctypes.byref(dev))
    best_q = float("inf")
    for _ in range(args.rounds):
        t0 = time.perf_counter_ns()
        for _ in range(100000):
            get_device(ctypes.byref(dev))
        best_q = min(best_q, (time.perf_counter_ns() - t0) / 100000)
    query_ns = best_q
print(f"launch_cost: {best:.2f} µs per launch (best of {args.rounds} x {args.launches}); cudaGetDevice {query_ns:.0f} ns; "
      f"clock_gettime {clock_ns:.0f} ns")
