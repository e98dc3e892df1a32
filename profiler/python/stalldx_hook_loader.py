# The stalldx hook's patches of torch.utils.data's loop and loader (see stalldx_hook.py, which installs
# them): the loader's work on one batch (fetch, collate; reads and CPU time split), the workers (fork or
# spawn) and the loop (each __next__ a wait for a batch, an iteration a step). Names of the hook's
# shared state are read through the module at call time (`_h.`): it is set when the hook is armed.
import builtins
import threading
import time

import stalldx_hook as _h


# ---- the loader's work on one batch -------------------------------------------------------------
def _current_batch():
    return getattr(_h._local, "batch", -1)


def _timed_collate(fn):
    def collate(data):
        acc = getattr(_h._local, "collate", None)
        if acc is None:
            return fn(data)
        w0, c0 = time.monotonic_ns(), time.thread_time_ns()
        try:
            return fn(data)
        finally:
            acc[0] += time.monotonic_ns() - w0
            acc[1] += time.thread_time_ns() - c0

    return collate


class _TimedDataset:
    """The fetcher's dataset while it fetches one batch: each sample's __getitem__ is split into
    retrieval and decode ranges of its own, so a wait that overlaps part of a batch's work sees its
    reads and decodes in the proportion they ran (not a batch's reads first, then all its decodes)."""

    def __init__(self, dataset, batch):
        self._dataset, self._batch, self.timed = dataset, batch, 0

    def __getitem__(self, index):
        reads = _h._local.reads
        r0, rc0 = reads[0], reads[1]
        t0, c0, q0 = _h._clocks()
        try:
            return self._dataset[index]
        finally:
            t1, c1, q1 = _h._clocks()
            self.timed += t1 - t0
            runq = (q1 - q0) if q0 >= 0 and q1 >= 0 else -1
            _record_work(self._batch, t0, t1, c1 - c0, runq, (reads[0] - r0, reads[1] - rc0), (0, 0))

    def __len__(self):
        return len(self._dataset)

    def __getattr__(self, name):
        return getattr(self._dataset, name)


def _fetch_patch(orig_fetch):
    def fetch(self, possibly_batched_index):
        if getattr(_h._local, "reads", None) is not None:  # nested (a fetcher inside a dataset): counted by the outer one
            return orig_fetch(self, possibly_batched_index)
        batch = _current_batch()
        reads, coll = [0, 0], [0, 0]
        collate_fn, dataset = self.collate_fn, self.dataset
        per_sample = _TimedDataset(dataset, batch) if not hasattr(self, "dataset_iter") else None
        _h._local.reads, _h._local.collate = reads, coll
        self.collate_fn = _timed_collate(collate_fn)
        if per_sample is not None:
            self.dataset = per_sample
        builtins.open = _h._open
        t0, c0, q0 = _h._clocks()
        try:
            return orig_fetch(self, possibly_batched_index)
        finally:
            t1, c1, q1 = _h._clocks()
            builtins.open = _h._orig["open"]
            self.collate_fn, self.dataset = collate_fn, dataset
            _h._local.reads = _h._local.collate = None
            if per_sample is not None and per_sample.timed > 0:  # samples recorded one by one: the batch's collate
                if coll[0] > 0:
                    _h._emit("collate", "collate", batch, t1 - min(coll[0], t1 - t0), t1, coll[1], -1)
            else:  # an IterableDataset or a batched __getitems__: the batch as one piece
                _record_work(batch, t0, t1, c1 - c0, (q1 - q0) if q0 >= 0 and q1 >= 0 else -1, reads, coll)

    fetch._stalldx = True
    return fetch


def _record_work(batch, t0, t1, cpu, runq, reads, coll, others_cpu=0):
    """Retrieval = reads + the time blocked off-CPU outside them; decode = the rest; then collate.
    `others_cpu`: CPU time the process's other threads spent meanwhile (a loop waiting on threads of its
    own that make the batch): blocked time up to it is their decoding, not storage."""
    wall = t1 - t0
    queued = max(runq, 0)
    coll_wall, coll_cpu = min(coll[0], wall), min(coll[1], cpu)
    read_wall, read_cpu = min(reads[0], wall - coll_wall), min(reads[1], cpu)
    rest_wall = wall - coll_wall - read_wall
    rest_cpu = max(cpu - read_cpu - coll_cpu, 0)
    blocked = max(rest_wall - rest_cpu - queued, 0)
    blocked -= min(blocked, max(others_cpu, 0))
    retrieval = read_wall + blocked
    decode_end = t1 - coll_wall
    if retrieval > 0:
        _h._emit("read (files, blocked)", "retrieval", batch, t0, t0 + retrieval, read_cpu, 0 if runq >= 0 else -1)
    if decode_end > t0 + retrieval:
        _h._emit("decode + transform", "decode", batch, t0 + retrieval, decode_end, rest_cpu, runq)
    if coll_wall > 0:
        _h._emit("collate", "collate", batch, decode_end, t1, coll_cpu, 0 if runq >= 0 else -1)


# ---- workers --------------------------------------------------------------------------------------
class _IndexQueue:
    """The worker's index queue: each (index, indices) it hands out names the batch the worker builds."""

    def __init__(self, queue, serial):
        self._queue, self._serial, self._epoch = queue, serial, 0

    def get(self, *a, **k):
        r = self._queue.get(*a, **k)
        try:
            if isinstance(r, tuple) and len(r) == 2 and isinstance(r[0], int):
                _h._local.batch = _h._batch_id(self._serial, self._epoch, r[0])
            elif type(r).__name__ == "_ResumeIteration":  # persistent workers: the next epoch
                self._epoch += 1
        except Exception:
            pass
        return r

    def __getattr__(self, name):
        return getattr(self._queue, name)


class _WorkerLoop:
    """torch's worker loop with the index queue watched; pickled by reference for spawn workers."""

    def __init__(self, serial):
        self.serial = serial

    def __call__(self, *args, **kwargs):
        try:  # the worker is alive: a mark before torch's loop seeds its generators (a worker stuck from here made no batch)
            t = time.monotonic_ns()
            _h._emit(_h._WORKER_START_NAME, "user", -1, t, t + 1)
        except Exception:
            pass
        orig = _h._orig.get("worker_loop")
        if orig is None:  # a spawned worker unpickles this before its own torch import is patched
            from torch.utils.data._utils import worker

            orig = worker._worker_loop
        try:
            if len(args) > 2:
                args = args[:2] + (_IndexQueue(args[2], self.serial),) + args[3:]
            elif "index_queue" in kwargs:
                kwargs["index_queue"] = _IndexQueue(kwargs["index_queue"], self.serial)
        except Exception:
            pass
        return orig(*args, **kwargs)


# ---- the loop -------------------------------------------------------------------------------------
def _iter_init_patch(orig_init, multiprocess):
    def __init__(self, loader, *a, **k):
        serial = next(_h._serials)
        self._stalldx_serial = serial
        self._stalldx_epoch = -1
        self._stalldx_step_begin = None
        if not multiprocess:
            return orig_init(self, loader, *a, **k)
        from torch.utils.data._utils import worker

        worker._worker_loop = _WorkerLoop(serial)
        t0, c0, q0 = _clocks_or_none()
        try:
            return orig_init(self, loader, *a, **k)
        finally:
            worker._worker_loop = _h._orig["worker_loop"]
            # Starting the worker processes is the input pipeline's work on the loop's thread: a decode
            # range of the consumer (the CPU side of the input), the first batch of this iterator its payload.
            _emit_loader_work(_h._ITERATOR_START_NAME, serial, 0, t0, c0, q0)

    return __init__


def _clocks_or_none():
    try:
        return _h._clocks()
    except Exception:
        return None, None, None


def _emit_loader_work(name, serial, epoch, t0, c0, q0):
    """The loader's own work on the loop's thread since (t0, c0, q0), as a decode range whose payload is
    the pass's first batch. Never raises: it runs in a `finally` of the program's own call."""
    if t0 is None:
        return
    try:
        t1, c1, q1 = _h._clocks()
        _h._emit(name, "decode", _h._batch_id(serial, epoch, 0), t0, t1, c1 - c0, (q1 - q0) if q0 >= 0 and q1 >= 0 else -1)
    except Exception:
        pass


def _reset_patch(orig_reset):
    # A new pass of the iterator (a persistent one's each epoch, or — iter(loader) every step — each step):
    # an iteration still open (the pass left after a batch) ends at the next wait for a batch.
    def _reset(self, *a, **k):
        try:
            self._stalldx_epoch = getattr(self, "_stalldx_epoch", -1) + 1
            first = k.get("first_iter", a[1] if len(a) > 1 else False)
        except Exception:
            return orig_reset(self, *a, **k)
        if first or not hasattr(self, "_workers"):  # the start (timed by __init__), or no workers to resume
            return orig_reset(self, *a, **k)
        # A persistent iterator's new pass waits for its workers to resume: the input's work on this thread.
        t0, c0, q0 = _clocks_or_none()
        try:
            return orig_reset(self, *a, **k)
        finally:
            _emit_loader_work(_h._PASS_RESTART_NAME, getattr(self, "_stalldx_serial", 0), self._stalldx_epoch, t0, c0, q0)

    return _reset


def _next_patch(orig_next):
    def __next__(self):
        try:
            serial = getattr(self, "_stalldx_serial", 0)
            index = self._rcvd_idx if hasattr(self, "_rcvd_idx") else self._num_yielded
            batch = _h._batch_id(serial, max(getattr(self, "_stalldx_epoch", 0), 0), index)
            t0, c0, q0 = _h._clocks()
        except Exception:
            return orig_next(self)
        if not getattr(_h._local, "dataloader_seen", False):  # from now on this thread's DataLoader iterations are its steps
            _h._local.dataloader_seen = True
            try:
                import stalldx_hook_loop

                stalldx_hook_loop.stop(_h._local)
            except Exception:
                pass
        _close_orphan(t0, c0)
        _close_step(self, t0, c0)  # the previous iteration ends where this wait begins
        if not _h._dist_patched[0]:  # torch.distributed loads after torch.utils.data: patched at the loop's first batch
            _h._dist_patched[0] = True
            try:
                import torch

                _h._patch_torch_distributed(torch)
            except Exception as e:
                _h._lib.stalldx_py_note(("torch.distributed not patched: %r" % (e,)).encode("utf-8", "replace"))
        _h._local.batch = batch  # num_workers=0: the fetch runs here, for this batch
        try:
            data = orig_next(self)
        except StopIteration:
            self._stalldx_step_begin = None
            try:  # the loop may go on without the DataLoader (itertools.cycle replays the batches it saved):
                # its backward passes are its steps again, the first from here
                _h._local.dataloader_seen = False
                _h._local.loop_step_begin, _h._local.loop_batch = t0, -1
                _h._local.loop_step_cpu = c0
            except Exception:
                pass
            raise
        finally:
            _h._local.batch = -1
        t1, c1, q1 = _h._clocks()
        _h._emit("DataLoader __next__ (wait for batch)", "wait_batch", batch, t0, t1, c1 - c0, (q1 - q0) if q0 >= 0 and q1 >= 0 else -1)
        self._stalldx_step_begin = (t0, _h._backwards[0], threading.get_ident(), c0)
        self._stalldx_prev_batch = batch
        self._stalldx_yielded = getattr(self, "_stalldx_yielded", 0) + 1
        return data

    return __next__


def _step_cpu(begin, cpu):
    """The thread's CPU ns over an iteration, from its clock at the begin (begin[3], read on thread begin[2])
    to `cpu` read now on this thread; -1 where unknown (another thread ends it). Its run-queue time is left
    out: the diagnosis would read it, inside the step's own work, as the loop starved of a CPU while
    submitting."""
    if cpu is None or len(begin) < 4 or begin[2] != threading.get_ident() or cpu < 0 or begin[3] < 0:
        return -1
    return max(cpu - begin[3], -1)


def _emit_iteration(begin, batch, end, cpu=None):
    """One iteration ends: a step; or — the process having made backward passes, none in this one — an
    evaluation iteration (its wait for the batch stays a wait, outside any step); or, on a thread that never
    ran a backward pass while another thread did, a prefetch thread's iteration (the loop is that other
    thread, its steps its backward passes: stalldx_hook_loop). begin: (ns, backwards, thread, cpu ns);
    cpu: this thread's CPU ns at `end` — the step carries the loop's CPU time (how much of a core
    the loop itself takes, for whether more workers have one to run on)."""
    backwards = _h._backwards[0]
    if backwards > 0 and getattr(_h._local, "backwards", 0) == 0:
        _h._emit(_h._PREFETCH_ITERATION_NAME, "user", batch, begin[0], end)
    elif backwards > 0 and backwards == begin[1]:
        _h._emit(_h._EVAL_ITERATION_NAME, "user", batch, begin[0], end)
    else:
        _h._emit(_h._STEP_NAME, "step", batch, begin[0], end, _step_cpu(begin, cpu))


def _close_step(it, end, cpu=None):
    begin = getattr(it, "_stalldx_step_begin", None)
    if begin is not None:
        it._stalldx_step_begin = None
        _emit_iteration(begin, it._stalldx_prev_batch, end, cpu)


def _close_orphan(end, cpu=None):
    """The iteration of an iterator dropped after its first batch (`next(iter(loader))` each step) ends
    where this thread next waits for a batch: its step is the loop's, not the iterator's short life."""
    orphan = getattr(_h._local, "orphan", None)
    if orphan is not None:
        _h._local.orphan = None
        _emit_iteration(orphan[0], orphan[1], end, cpu)


def close_orphan_at_exit():
    """atexit (the main thread): the loop's last `next(iter(loader))` step, left open with no wait after it,
    ends where its work did — the thread's last backward pass or optimizer step since it began (lost if
    none came: an evaluation loop's last iteration)."""
    try:
        orphan = getattr(_h._local, "orphan", None)
        end = getattr(_h._local, "work_end", None)
        if orphan is not None and end is not None and end > orphan[0][0]:
            _h._local.orphan = None
            _emit_iteration(orphan[0], orphan[1], end)
    except Exception:
        pass


def _del_patch(orig_del):
    # A loop left by `break` drops its iterator: the last iteration ends there. An iterator dropped after
    # one batch (a new one each step) leaves its iteration open until the thread's next wait for a batch,
    # or until exit (close_orphan_at_exit).
    def __del__(self):
        try:
            t, c, _ = _h._clocks()
            if getattr(self, "_stalldx_yielded", 0) == 1 and getattr(self, "_stalldx_step_begin", None) is not None:
                _close_orphan(t, c)  # an earlier one left open, with no wait since
                _h._local.orphan = (self._stalldx_step_begin, self._stalldx_prev_batch)
                self._stalldx_step_begin = None
            else:
                _close_step(self, t, c)
        except Exception:
            pass
        if orig_del is not None:
            orig_del(self)

    return __del__
