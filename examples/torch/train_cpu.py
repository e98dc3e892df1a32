#!/usr/bin/env python3
"""A training script as people write it, small enough for a CPU: torchvision's ImageFolder, a
DataLoader with workers, a small CNN — no annotation of any kind. `stalldx record` finds its steps and
why it waits with no flags:

    stalldx dataset /tmp/food --classes 4 --per-class 32
    stalldx record -- python3 train_cpu.py --data /tmp/food --slow-read-ms 20    # -> retrieval
    stalldx record -- python3 train_cpu.py --data /tmp/food --workers 1          # -> decoding (few workers)

--slow-read-ms N makes every file read wait N ms first (a slow store, off-CPU).
"""
import argparse
import time

import torch
import torchvision
from torch.utils.data import DataLoader
from torchvision import transforms

p = argparse.ArgumentParser()
p.add_argument("--data", required=True)
p.add_argument("--steps", type=int, default=20)
p.add_argument("--batch", type=int, default=16)
p.add_argument("--workers", type=int, default=2)
p.add_argument("--slow-read-ms", type=float, default=0)
args = p.parse_args()


def load(path):
    if args.slow_read_ms:
        time.sleep(args.slow_read_ms / 1000)  # a storage that answers late
    return torchvision.datasets.folder.pil_loader(path)


if __name__ == "__main__":
    torch.set_num_threads(1)
    tf = transforms.Compose([transforms.RandomResizedCrop(64), transforms.RandomHorizontalFlip(), transforms.ToTensor()])
    data = torchvision.datasets.ImageFolder(args.data, transform=tf, loader=load)
    loader = DataLoader(data, batch_size=args.batch, shuffle=True, num_workers=args.workers, drop_last=True)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, stride=2), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(),
                                torch.nn.Linear(8, len(data.classes)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    step = 0
    while step < args.steps:
        for x, y in loader:
            loss = torch.nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            step += 1
            if step >= args.steps:
                break
