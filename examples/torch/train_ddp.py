#!/usr/bin/env python3
"""Example 4: a data-parallel job as people launch it — torchrun, DistributedDataParallel, torchvision's
ImageFolder and a DataLoader per rank, ResNet-50, no annotation of any kind:

    stalldx record --trace job.json -- torchrun --nproc-per-node 2 train_ddp.py --data DIR
        -> job.rank0.json, job.rank1.json and the cross-rank report (the straggler and its cause)

One rank can be slowed in its reads (`--slow-rank 1 --slow-read-ms 40`): its loader falls behind and
the other ranks wait for it in DDP's gradient all-reduce. `--kineto-dir DIR` also writes one
torch.profiler trace per rank (DIR/rankR.pt.trace.json) for `stalldx diagnose DIR`.

The backend is NCCL when every rank has a GPU of its own, else gloo (NCCL refuses two ranks on one
device; gloo all-reduces CUDA tensors through the host). Prints each rank's steady img/s on stderr.
"""
import argparse
import os
import sys
import time

import torch
import torch.distributed as dist
import torchvision
from PIL import Image
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, DistributedSampler
from torchvision import transforms

p = argparse.ArgumentParser()
p.add_argument("--data", required=True)
p.add_argument("--steps", type=int, default=30)
p.add_argument("--warmup", type=int, default=5)
p.add_argument("--batch", type=int, default=64, help="per rank")
p.add_argument("--workers", type=int, default=4, help="loader workers per rank")
p.add_argument("--image-size", type=int, default=224)
p.add_argument("--slow-rank", type=int, default=-1)
p.add_argument("--slow-read-ms", type=float, default=40)
p.add_argument("--backend", choices=["nccl", "gloo"], help="default: nccl if each rank has its own GPU, else gloo")
p.add_argument("--kineto-dir", metavar="DIR")
args = p.parse_args()


class SlowReads:
    """The image loader of a rank whose store answers late (a picklable callable, for the workers)."""

    def __init__(self, ms):
        self.ms = ms

    def __call__(self, path):
        with open(path, "rb") as f:
            time.sleep(self.ms / 1000)
            return Image.open(f).convert("RGB")


def main():
    local = int(os.environ.get("LOCAL_RANK", "0"))
    ngpu = torch.cuda.device_count()
    backend = args.backend or ("nccl" if ngpu and ngpu >= int(os.environ.get("LOCAL_WORLD_SIZE", "1")) else "gloo")
    dist.init_process_group(backend)
    rank, world = dist.get_rank(), dist.get_world_size()
    dev = torch.device("cuda", local % ngpu) if ngpu else torch.device("cpu")  # no GPU: a CPU try-out
    if ngpu:
        torch.cuda.set_device(dev)
    tf = transforms.Compose([
        transforms.RandomResizedCrop(args.image_size),
        transforms.RandomHorizontalFlip(),
        transforms.ToTensor(),
        transforms.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]),
    ])
    kw = {"loader": SlowReads(args.slow_read_ms)} if rank == args.slow_rank else {}
    data = torchvision.datasets.ImageFolder(args.data, transform=tf, **kw)
    sampler = DistributedSampler(data, num_replicas=world, rank=rank, shuffle=True, drop_last=True)
    loader = DataLoader(data, batch_size=args.batch, sampler=sampler, num_workers=args.workers, drop_last=True,
                        pin_memory=bool(ngpu), persistent_workers=args.workers > 0)
    model = DistributedDataParallel(torchvision.models.resnet50(num_classes=len(data.classes)).to(dev),
                                    device_ids=[dev.index] if ngpu else None)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    prof = None
    if args.kineto_dir:
        os.makedirs(args.kineto_dir, exist_ok=True)
        out = os.path.join(args.kineto_dir, f"rank{rank}.pt.trace.json")
        acts = [torch.profiler.ProfilerActivity.CPU] + ([torch.profiler.ProfilerActivity.CUDA] if ngpu else [])
        prof = torch.profiler.profile(activities=acts, schedule=torch.profiler.schedule(wait=0, warmup=1, active=args.steps),
                                      on_trace_ready=lambda pr: pr.export_chrome_trace(out))
        prof.start()
    done, t0, epoch = 0, None, 0
    while done < args.steps:
        sampler.set_epoch(epoch)
        epoch += 1
        for x, y in loader:
            x, y = x.to(dev, non_blocking=True), y.to(dev, non_blocking=True)
            loss = loss_fn(model(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            loss.item()
            done += 1
            if prof:
                prof.step()
            if done == args.warmup:
                t0 = time.monotonic()
            if done >= args.steps:
                break
    if ngpu:
        torch.cuda.synchronize()
    if prof:
        prof.stop()
    if t0 is not None and done > args.warmup:
        rate = (done - args.warmup) * args.batch / (time.monotonic() - t0)
        print(f"train_ddp rank {rank}/{world} ({backend}): {rate:.1f} img/s over {done - args.warmup} steady steps", file=sys.stderr)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
