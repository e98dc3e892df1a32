#!/usr/bin/env python3
"""Example 3: the training script people actually have — torchvision's ImageFolder, a DataLoader, a
ResNet-50, no annotation of any kind. `stalldx record` finds its steps and why it waits with no flags
(the Python hook marks the DataLoader; CUPTI records the GPU):

    stalldx record -- python3 train_plain.py --data DIR

Flags that induce one cause each (none of them adds a range):
    --workers 8 --slow-read-ms 40   every file read waits first (a slow store)          -> retrieval
    --workers 1                     too few loader workers                              -> decoding
    --per-sample-copies             each sample copied alone from pageable memory       -> submission
    --workers 12 --image-size 384 --loss-every 10                                        -> device-bound
    --workers 12 --bf16 --image-size 96 --loss-every 1
                                    short bf16 kernels, the loss read every step: eager
                                    PyTorch's host work between launches paces the GPU  -> submission
Prints the steady-state throughput (img/s after --warmup steps) on stderr.
"""
import argparse
import sys
import time

import torch
import torchvision
from PIL import Image
from torch.utils.data import DataLoader
from torchvision import transforms

p = argparse.ArgumentParser()
p.add_argument("--data", required=True)
p.add_argument("--steps", type=int, default=30)
p.add_argument("--warmup", type=int, default=3)
p.add_argument("--batch", type=int, default=128)
p.add_argument("--workers", type=int, default=12)
p.add_argument("--image-size", type=int, default=224)
p.add_argument("--slow-read-ms", type=float, default=0)
p.add_argument("--per-sample-copies", action="store_true")
p.add_argument("--bf16", action="store_true")
p.add_argument("--loss-every", type=int, default=10)
args = p.parse_args()


def slow_loader(path):
    with open(path, "rb") as f:
        time.sleep(args.slow_read_ms / 1000)  # the store answers late
        return Image.open(f).convert("RGB")


def main():
    tf = transforms.Compose([
        transforms.RandomResizedCrop(args.image_size),
        transforms.RandomHorizontalFlip(),
        transforms.ToTensor(),
        transforms.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]),
    ])
    kw = {"loader": slow_loader} if args.slow_read_ms else {}
    data = torchvision.datasets.ImageFolder(args.data, transform=tf, **kw)
    loader = DataLoader(data, batch_size=args.batch, shuffle=True, num_workers=args.workers, drop_last=True,
                        pin_memory=not args.per_sample_copies, persistent_workers=args.workers > 0)
    dev = torch.device("cuda")
    model = torchvision.models.resnet50(num_classes=len(data.classes)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    done, t0 = 0, None
    while done < args.steps:
        for x, y in loader:
            if args.per_sample_copies:
                x = torch.stack([s.cuda() for s in x])
                y = y.cuda()
            else:
                x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
            with torch.autocast("cuda", dtype=torch.bfloat16, enabled=args.bf16):
                loss = loss_fn(model(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            done += 1
            if done % args.loss_every == 0:
                loss.item()
            if done == args.warmup:
                torch.cuda.synchronize()
                t0 = time.monotonic()
            if done >= args.steps:
                break
    torch.cuda.synchronize()
    if t0 is not None and done > args.warmup:
        rate = (done - args.warmup) * args.batch / (time.monotonic() - t0)
        print(f"train_plain: {rate:.1f} img/s over {done - args.warmup} steady steps", file=sys.stderr)


if __name__ == "__main__":
    main()
