"""A torch.distributed (gloo, CPU) loop that knows nothing of stalldx, for `stalldx record -- torchrun`:
each rank reads its samples through a DataLoader (num_workers=0) from a pipe that a thread of its own
fills every READ_MS (storage latency, as the hook sees it: time inside a file read), "computes" 10 ms
and all-reduces its gradient. SLOW_RANK reads with SLOW_MS instead: the straggler."""
import os
import threading
import time

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, Dataset

STEPS = int(os.environ.get("STEPS", "20"))


class PipeStorage(Dataset):
    def __init__(self, path, ms):
        self.path, self.ms = path, ms
        os.mkfifo(path)
        threading.Thread(target=self._fill, daemon=True).start()

    def _fill(self):
        with open(self.path, "wb", buffering=0) as w:
            while True:
                time.sleep(self.ms / 1000.0)
                w.write(b"x" * 64)

    def __len__(self):
        return 1 << 20

    def __getitem__(self, i):
        if not hasattr(self, "f"):
            self.f = open(self.path, "rb", buffering=0)
        data = self.f.read(64)
        return torch.tensor([float(len(data))])


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    ms = float(os.environ.get("SLOW_MS", "30")) if rank == int(os.environ.get("SLOW_RANK", "-1")) else 1.0
    storage = PipeStorage(os.path.join(os.environ["PIPE_DIR"], "rank%d.fifo" % rank), ms)
    loader = DataLoader(storage, batch_size=1, num_workers=0)
    grad = torch.zeros(1024)
    for step, x in enumerate(loader):
        if step == STEPS:
            break
        time.sleep(0.010)
        grad += x.sum()
        dist.all_reduce(grad)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
