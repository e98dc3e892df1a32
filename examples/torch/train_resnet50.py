#!/usr/bin/env python3
"""Example 2: ResNet-50 on a Food-101-like ImageFolder (stalldx dataset), batch 128, annotated with
torch.cuda.nvtx ranges in the loop and in the Dataset's __getitem__ — so `stalldx record` sees, step by
step, whether the loop waited on reads, on decoding, on its own host-side submission, or on the GPU.

    stalldx record --warmup 3 -- python3 train_resnet50.py --data DIR --workers 12

Flags that induce each stall class:
    retrieval     --read-delay-ms 40 --steps 40   every file read waits (a slow store), in the workers
                                              (enough steps to drain what the workers prefetched
                                              while the model was being set up)
    decoding      --workers 1                 too few loader workers for the step
    submission    --per-sample-copies         pageable per-sample copies, each synchronized
    device-bound  --workers 12 --image-size 384 --loss-every 10
                                              the loader keeps up and the device step is long enough
                                              that eager PyTorch's host work between launches hides
                                              behind it (at 224 px fp32 the GPU idles ~15% of a step);
                                              reading the loss every step drains the GPU each step and
                                              its refill is paced by launches: 11 of 30 steps at 384 px
                                              were rightly "submission" (H200, 2026-12-03), none with
                                              the loss read every 10 steps
    submission    --workers 12 --bf16         bf16 kernels are short: eager PyTorch's host work between
                                              launches (dispatch, Python) paces the GPU

Ranges: "step", "wait_batch", "submit", "sync" in the loop; "read_file", "decode" in __getitem__ (in the
DataLoader's worker processes: stalldx record follows the fork).
"""
import argparse
import contextlib
import os
import sys
import time

import torch
import torch.cuda.nvtx as nvtx
import torchvision
from torch.utils.data import DataLoader, Dataset
from torchvision.transforms import v2

MEAN = torch.tensor([0.485, 0.456, 0.406]).view(3, 1, 1)
STD = torch.tensor([0.229, 0.224, 0.225]).view(3, 1, 1)


@contextlib.contextmanager
def phase(name):
    """A loop phase: an NVTX range (stalldx record, Nsight Systems) and a torch.profiler range."""
    with nvtx.range(name), torch.profiler.record_function(name):
        yield


class JpegFolder(Dataset):
    def __init__(self, root, read_delay_ms, size):
        self.files = sorted(
            os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs if f.lower().endswith((".jpg", ".jpeg")))
        if not self.files:
            sys.exit(f"train_resnet50.py: no .jpg files under --data {root}")
        self.labels = {d: i for i, d in enumerate(sorted({os.path.dirname(f) for f in self.files}))}
        self.read_delay = read_delay_ms / 1000.0
        self.crop = v2.Compose([v2.RandomResizedCrop(size, antialias=True), v2.RandomHorizontalFlip()])

    def __len__(self):
        return 1 << 30  # sampled with wrap-around: any number of steps

    def __getitem__(self, i):
        path = self.files[i % len(self.files)]
        with phase("read_file"):  # record_function too: with num_workers=0 torch.profiler sees the split
            if self.read_delay > 0:
                time.sleep(self.read_delay)
            with open(path, "rb") as f:
                data = torch.frombuffer(bytearray(f.read()), dtype=torch.uint8)
        with phase("decode"):
            img = torchvision.io.decode_jpeg(data, mode=torchvision.io.ImageReadMode.RGB)
            img = self.crop(img)
            x = (img.float() / 255.0 - MEAN) / STD
        return x, self.labels[os.path.dirname(path)]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--data", required=True)
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--workers", type=int, default=12)
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--image-size", type=int, default=224, help="crop size: larger makes the device step heavier")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--read-delay-ms", type=float, default=0)
    p.add_argument("--per-sample-copies", action="store_true")
    p.add_argument("--bf16", action="store_true", help="autocast to bfloat16 (default: fp32)")
    p.add_argument("--loss-every", type=int, default=1, help="read the loss (a device sync) every N steps")
    p.add_argument("--kineto", metavar="FILE", help="also write a torch.profiler (Kineto) trace of warm-up + steps")
    p.add_argument("--main-cpu", type=int, metavar="CPU",
                   help="run the training loop's thread on this CPU alone and the loader workers on the others: "
                        "on a host whose CPUs differ in speed (a VM's vCPUs), a benchmark's runs then compare on "
                        "the same CPU instead of wherever the scheduler put the launching thread")
    a = p.parse_args()

    torch.backends.cudnn.benchmark = True
    dev = torch.device("cuda")
    model = torchvision.models.resnet50(num_classes=101).to(dev).to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    others = None
    if a.main_cpu is not None:
        cpus = os.sched_getaffinity(0)
        if a.main_cpu not in cpus or len(cpus) < 2:
            sys.exit(f"train_resnet50.py: --main-cpu {a.main_cpu}: not one of this process's CPUs {sorted(cpus)}, or no other left")
        others = cpus - {a.main_cpu}
    loader = DataLoader(JpegFolder(a.data, a.read_delay_ms, a.image_size), batch_size=a.batch, num_workers=a.workers,
                        pin_memory=not a.per_sample_copies, persistent_workers=a.workers > 0,
                        prefetch_factor=2 if a.workers > 0 else None,
                        worker_init_fn=(lambda _: os.sched_setaffinity(0, others)) if others else None)
    it = iter(loader)  # forks the workers and starts the pin-memory thread, both before the loop is pinned
    if a.main_cpu is not None:
        os.sched_setaffinity(0, {a.main_cpu})  # this thread only (Linux: 0 is the calling thread)
    prof = contextlib.nullcontext()
    if a.kineto:
        acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
        # The seed's schedule: warm-up steps unrecorded, then the active steps, once.
        prof = torch.profiler.profile(activities=acts, schedule=torch.profiler.schedule(wait=0, warmup=a.warmup, active=a.steps, repeat=1),
                                      on_trace_ready=lambda p: p.export_chrome_trace(a.kineto))
    with prof:
        loop(a, it, model, opt, loss_fn, dev, prof if a.kineto else None)


def loop(a, it, model, opt, loss_fn, dev, prof):
    start = None
    for step in range(a.warmup + a.steps):
        if step == a.warmup:
            torch.cuda.synchronize()
            start = time.perf_counter()
        with nvtx.range("step"):
            with phase("wait_batch"):
                x, y = next(it)
            with phase("submit"):
                if a.per_sample_copies:
                    parts = []
                    for k in range(x.shape[0]):
                        parts.append(x[k].to(dev))
                        torch.cuda.synchronize()
                    x = torch.stack(parts)
                else:
                    x = x.to(dev, non_blocking=True)
                x = x.contiguous(memory_format=torch.channels_last)
                y = y.to(dev, non_blocking=True)
                with torch.autocast("cuda", dtype=torch.bfloat16, enabled=a.bf16):
                    loss = loss_fn(model(x), y)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
            if (step + 1) % a.loss_every == 0 or step + 1 == a.warmup + a.steps:
                with phase("sync"):
                    loss_value = loss.item()  # by default every step, as many training loops do
        if prof is not None:
            prof.step()
    torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    print(f"train_resnet50.py: {a.steps} steady steps, {a.steps * a.batch / seconds:.0f} img/s, last loss {loss_value:.3f}")


if __name__ == "__main__":
    main()
