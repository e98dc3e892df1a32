"""An ordinary PyTorch training script with no annotation at all: an ImageFolder-style dataset, a
DataLoader with workers, a small model. `stalldx record` must find its steps and why it waits, with no
flags. Knobs induce one cause at a time:
  --slow-read-ms N   each file read waits N ms first (storage latency, off-CPU)
  --heavy-transform N  each sample's transform burns N ms of CPU
  --workers, --start (fork|spawn), --persistent, --pin, --iterable, --subclass, --exit-workers
Makes its own images (--data DIR) when the folder is empty."""
import argparse
import itertools
import multiprocessing
import os
import queue
import random
import threading
import sys
import time

import torch
import torch.utils.data as tud
from PIL import Image

p = argparse.ArgumentParser()
p.add_argument("--data", required=True)
p.add_argument("--steps", type=int, default=40)
p.add_argument("--batch", type=int, default=4)
p.add_argument("--workers", type=int, default=2)
p.add_argument("--start", default="fork")
p.add_argument("--slow-read-ms", type=float, default=0)
p.add_argument("--heavy-transform", type=float, default=0)
p.add_argument("--persistent", action="store_true")
p.add_argument("--pin", action="store_true")
p.add_argument("--iterable", action="store_true")
p.add_argument("--subclass", action="store_true")
p.add_argument("--epochs", type=int, default=1)
p.add_argument("--exit-workers", action="store_true", help="workers leave by os._exit (as some launchers do)")
p.add_argument("--no-loader", action="store_true", help="batches from a plain generator in the loop, no DataLoader")
p.add_argument("--loader-threads", type=int, default=0, help="with --no-loader: batches made by this many threads of the loop's process, through a queue")
p.add_argument("--loader-processes", type=int, default=0, help="with --no-loader: batches made by a multiprocessing.Pool of this many processes (imap)")
p.add_argument("--prefetch-thread", action="store_true", help="a thread pulls the DataLoader's batches into a queue; the loop takes them from it")
p.add_argument("--cycle", action="store_true", help="itertools.cycle(loader): after the first pass the batches it saved are replayed")
p.add_argument("--slow-optimizer", type=float, default=0, help="the optimizer's step spins this many ms of CPU")
p.add_argument("--validate", type=int, default=0, help="after each epoch, this many batches of a validation DataLoader under torch.no_grad()")
p.add_argument("--iter-per-step", action="store_true", help="each step takes next(iter(loader)): a new iterator (or pass) every step")
args = p.parse_args()


def make_images(root, classes=4, per_class=40):
    for c in range(classes):
        d = os.path.join(root, f"class{c}")
        os.makedirs(d, exist_ok=True)
        for i in range(per_class):
            Image.new("RGB", (48, 48), (c * 40, i * 5 % 255, 90)).save(os.path.join(d, f"{i}.jpg"))


class Folder(tud.Dataset):
    """What torchvision's ImageFolder does: a list of (path, class), PIL decode, a transform."""

    def __init__(self, root):
        self.items = []
        for c, name in enumerate(sorted(os.listdir(root))):
            for f in sorted(os.listdir(os.path.join(root, name))):
                self.items.append((os.path.join(root, name, f), c))

    def __len__(self):
        return len(self.items)

    def load(self, path):
        with open(path, "rb") as f:
            if args.slow_read_ms:
                time.sleep(args.slow_read_ms / 1000)  # a storage that answers late
            img = Image.open(f)
            return img.convert("RGB")

    def transform(self, img):
        x = torch.frombuffer(bytearray(img.tobytes()), dtype=torch.uint8).float().reshape(48, 48, 3)
        if args.heavy_transform:
            end = time.thread_time() + args.heavy_transform / 1000
            while time.thread_time() < end:  # an expensive augmentation
                x = (x * 1.0001).sqrt().square()
        return x.permute(2, 0, 1) / 255

    def __getitem__(self, i):
        path, label = self.items[i % len(self.items)]
        return self.transform(self.load(path)), label


class Stream(tud.IterableDataset):
    def __init__(self, folder):
        self.folder = folder

    def __iter__(self):
        info = tud.get_worker_info()
        n, k = (1, 0) if info is None else (info.num_workers, info.id)
        for i in range(k, len(self.folder), n):
            yield self.folder[i]


class MyLoader(tud.DataLoader):
    pass


_pool_ds = None  # the pool's dataset: inherited by its forked processes


def pool_batch(indices):
    """One batch, made in a pool process: arrays (not tensors) go back through the pool's pipe."""
    samples = [_pool_ds[j] for j in indices]
    return torch.stack([x for x, _ in samples]).numpy(), [y for _, y in samples]


def exit_now(worker_id):
    import atexit

    atexit.register(lambda: os._exit(0))


if __name__ == "__main__":
    if not os.path.isdir(args.data) or not os.listdir(args.data):
        make_images(args.data)
    torch.set_num_threads(1)
    ds = Folder(args.data)
    if args.iterable:
        ds = Stream(ds)
    cls = MyLoader if args.subclass else tud.DataLoader
    kw = dict(batch_size=args.batch, num_workers=args.workers, pin_memory=args.pin)
    if args.workers > 0:
        kw.update(multiprocessing_context=args.start, persistent_workers=args.persistent)
        if args.exit_workers:
            kw["worker_init_fn"] = exit_now
    loader = cls(ds, shuffle=not args.iterable, **kw) if not args.no_loader else None
    if args.no_loader:  # the loop makes its own batches: samples read and transformed in the loop's thread

        class Batches:
            def __iter__(self):
                order = list(range(len(ds)))
                random.shuffle(order)
                for i in range(0, len(order) - args.batch + 1, args.batch):
                    samples = [ds[j] for j in order[i:i + args.batch]]
                    yield torch.stack([x for x, _ in samples]), torch.tensor([y for _, y in samples])

        class ThreadedBatches:  # a prefetcher of its own: threads make the batches, the loop takes them from a queue
            def __iter__(self):
                order = list(range(len(ds)))
                random.shuffle(order)
                starts = list(range(0, len(order) - args.batch + 1, args.batch))
                q = queue.Queue(maxsize=2 * args.loader_threads)

                stop = threading.Event()

                def make(mine):
                    for i in mine:
                        samples = [ds[j] for j in order[i:i + args.batch]]
                        item = (torch.stack([x for x, _ in samples]), torch.tensor([y for _, y in samples]))
                        while not stop.is_set():
                            try:
                                q.put(item, timeout=0.05)
                                break
                            except queue.Full:
                                pass
                        if stop.is_set():
                            return

                workers = [threading.Thread(target=make, args=(starts[k::args.loader_threads],)) for k in range(args.loader_threads)]
                for w in workers:
                    w.start()
                try:
                    for _ in starts:
                        yield q.get()
                finally:  # the loop left early: the threads end before the interpreter does
                    stop.set()
                    for w in workers:
                        w.join()

        class PoolBatches:  # processes of its own: a multiprocessing.Pool's imap, no DataLoader
            def __iter__(self):
                global _pool_ds
                _pool_ds = ds
                order = list(range(len(ds)))
                random.shuffle(order)
                chunks = [order[i:i + args.batch] for i in range(0, len(order) - args.batch + 1, args.batch)]
                with multiprocessing.get_context("fork").Pool(args.loader_processes) as pool:
                    for x, y in pool.imap(pool_batch, chunks):
                        yield torch.from_numpy(x), torch.tensor(y)

        loader = ThreadedBatches() if args.loader_threads > 0 else PoolBatches() if args.loader_processes > 0 else Batches()
    model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(3 * 48 * 48, 10))
    class SlowSGD(torch.optim.SGD):
        def step(self, *a, **k):
            end = time.thread_time() + args.slow_optimizer / 1000
            while time.thread_time() < end:  # an expensive update: the loop's own work, not its input
                pass
            return super().step(*a, **k)

    opt = SlowSGD(model.parameters(), lr=0.01)
    done = 0
    if args.prefetch_thread:  # the loader iterated on a thread of its own; the loop only takes from a queue

        class Prefetched:
            def __init__(self, inner):
                self.inner = inner

            def __iter__(self):
                q = queue.Queue(maxsize=2)

                def pump():
                    for item in self.inner:
                        q.put(item)
                    q.put(None)

                threading.Thread(target=pump, daemon=True).start()
                while (item := q.get()) is not None:
                    yield item

        loader = Prefetched(loader)
    if args.cycle:
        loader = itertools.cycle(loader)
    if args.iter_per_step:  # the classic mistake: a fresh iterator each step, its workers started anew
        for done in range(1, args.steps + 1):
            x, y = next(iter(loader))
            loss = torch.nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        args.epochs = 0
    for epoch in range(args.epochs):
        for x, y in loader:
            loss = torch.nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            done += 1
            if done >= args.steps * (epoch + 1):
                break
        if args.validate:  # evaluation: forward passes only, no backward
            val = tud.DataLoader(ds, batch_size=args.batch, num_workers=0)
            with torch.no_grad():
                for k, (x, y) in enumerate(val):
                    model(x)
                    if k + 1 >= args.validate:
                        break
    print(f"trained {done} steps", file=sys.stderr)
