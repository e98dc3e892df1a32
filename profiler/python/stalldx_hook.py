# The zero-change PyTorch hook of `stalldx record` (DESIGN.md "The Python hook"). Armed at start-up by
# the sitecustomize shim beside it; it patches torch (its DataLoader, copies, backward) once the program has imported it — never
# imports torch itself — and records, through the injection library's C entry points (ctypes), complete
# ranges in NVTX domain "stalldx" with their role:
#   - the loop: each DataLoader iterator's __next__ is a wait for a batch (wait_batch, payload = the
#     batch id) and one iteration, from a __next__ to the next, is a step (the step boundary);
#   - the loader's work on a batch, in workers (fork or spawn, persistent or not) or in the loop itself
#     (num_workers=0): each sample's __getitem__ (map-style; a batch at once for an IterableDataset or a
#     batched __getitems__) split into retrieval (time in reads of files opened during the fetch, and
#     time blocked off-CPU outside them: storage, network, sleeps) then decode (the rest: decoding and
#     transforms), and the batch's collate; payload = the same batch id;
#   - the pin-memory thread's copies (collate role, no batch id), copies of tensors to a GPU (submit).
# A batch id is (iterator << 40) | (epoch << 24) | index, the same number in the loop and in the worker.
# Clocks: time.monotonic_ns() is CLOCK_MONOTONIC, stalldx's clock. Every patch falls back to the
# original on any error of its own: the program must behave exactly as without the hook.
# A loop without a DataLoader: steps from its backward passes, its batch from what runs between a
# backward and the next forward (stalldx_hook_loop.py).
# This module: the library binding, file reads, copies, collectives and the installation; the loop's,
# the loader's and the workers' patches are in stalldx_hook_loader.py.
import atexit
import builtins
import ctypes
import io
import itertools
import os
import sys
import threading
import time

_lib = None
_ROLE = {}
_STEP_NAME = "DataLoader loop iteration"
_BACKWARD_STEP_NAME = "training loop iteration (backward to backward)"
# A DataLoader iteration in which no backward pass ran, once the process has made one (evaluation: a
# validation loader under torch.no_grad): a range of role user, not a step.
_EVAL_ITERATION_NAME = "DataLoader loop iteration without a backward pass (evaluation)"
# A DataLoader iteration on a thread that never runs a backward pass while another thread does (a prefetch
# thread filling the loop's queue): a range of role user; the loop's steps are that other thread's.
_PREFETCH_ITERATION_NAME = "DataLoader iteration on a thread that runs no backward pass (a prefetch thread)"
_WORKER_START_NAME = "DataLoader worker process start"
# A multi-process DataLoader iterator's construction: its worker processes started (once per epoch, or —
# `next(iter(loader))` — every step).
_ITERATOR_START_NAME = "DataLoader iterator start (worker processes)"
# A persistent iterator's new pass (iter(loader) again): its workers told to resume, their prefetch refilled.
_PASS_RESTART_NAME = "DataLoader pass restart (persistent workers resumed)"
_names = {}  # name -> id in this process's names file (cleared in a forked child)
_clock_buf = None  # the ctypes array type of _clocks()'s result (each thread has its own array)
_serials = itertools.count(0)  # the first iterator's batch ids are its plain indices
_orig = {}
_local = threading.local()  # per thread: the active fetch's read/collate counters
_loop = None  # stalldx_hook_loop once installed (a loop without a DataLoader)


def _clocks():
    """(now, this thread's CPU ns, its run-queue ns). ctypes drops the GIL during the call: one array per
    thread, else two threads' clocks mix (a loader thread read the loop thread's CPU time)."""
    buf = getattr(_local, "clock_buf", None)
    if buf is None:
        buf = _local.clock_buf = _clock_buf()
    _lib.stalldx_py_clocks(buf)
    return buf[0], buf[1], buf[2]


def _name(text):
    i = _names.get(text)
    if i is None:
        i = _lib.stalldx_py_name(text.encode("utf-8", "replace"))
        _names[text] = i
    return i


def _emit(name, role, payload, begin, end, cpu=-1, runq=-1):
    _lib.stalldx_py_range(_name(name), _ROLE[role], payload, begin, end, cpu, runq)


_MAX_CHILDREN = 64  # child processes read at most (a loader's pool is far fewer)


def _children_busy():
    """{pid: ns} of this process's live child processes (a multiprocessing.Pool making the loop's batches):
    the CPU time of all their threads (the kernel's process CPU clock) plus the time their main thread
    waited runnable for a CPU (/proc/PID/schedstat) — time spent making a batch, on a CPU or starved of one.
    Found through /proc/self/task/*/children; {} where that is not available. Never raises."""
    out = {}
    try:
        for task in os.listdir("/proc/self/task")[:_MAX_CHILDREN]:
            try:
                with open("/proc/self/task/%s/children" % task) as f:
                    pids = f.read().split()
            except OSError:
                continue
            for pid in pids[:_MAX_CHILDREN - len(out)]:
                try:  # the process-wide CPU clock of pid, as glibc's clock_getcpuclockid makes it
                    ns = time.clock_gettime_ns(((~int(pid)) << 3) | 2)
                except (OSError, ValueError, OverflowError):
                    continue
                try:
                    with open("/proc/%s/schedstat" % pid) as f:
                        ns += int(f.read().split()[1])
                except (OSError, ValueError, IndexError):
                    pass
                out[int(pid)] = ns
    except Exception:
        return {}
    return out


def _batch_id(serial, epoch, index):
    return (serial << 40) | ((epoch & 0xFFFF) << 24) | (index & 0xFFFFFF)


# ---- file reads during a fetch ------------------------------------------------------------------
class _TimedFileIO(io.FileIO):
    """A file opened for reading during a fetch: the wall and CPU time of its reads go to the fetch."""

    def _timed(self, fn, *a):
        acc = getattr(_local, "reads", None)
        if acc is None:
            return fn(*a)
        w0, c0 = time.monotonic_ns(), time.thread_time_ns()
        try:
            return fn(*a)
        finally:
            acc[0] += time.monotonic_ns() - w0
            acc[1] += time.thread_time_ns() - c0

    def readinto(self, b):
        return self._timed(io.FileIO.readinto, self, b)

    def readall(self):
        return self._timed(io.FileIO.readall, self)

    def read(self, size=-1):
        return self._timed(io.FileIO.read, self, size)


def _open(file, mode="r", buffering=-1, encoding=None, errors=None, newline=None, closefd=True, opener=None):
    acc = getattr(_local, "reads", None)
    if acc is None or not isinstance(mode, str) or any(c in mode for c in "wax+") or isinstance(file, int):
        return _orig["open"](file, mode, buffering, encoding, errors, newline, closefd, opener)
    w0, c0 = time.monotonic_ns(), time.thread_time_ns()
    try:
        raw = _TimedFileIO(file, "r", closefd, opener=opener)
    finally:
        acc[0] += time.monotonic_ns() - w0
        acc[1] += time.thread_time_ns() - c0
    try:
        if "b" in mode:
            if buffering == 0:
                return raw
            return io.BufferedReader(raw, io.DEFAULT_BUFFER_SIZE if buffering in (-1, 1) else buffering)
        buffered = io.BufferedReader(raw, io.DEFAULT_BUFFER_SIZE if buffering in (-1, 0, 1) else buffering)
        return io.TextIOWrapper(buffered, encoding, errors, newline, line_buffering=buffering == 1)
    except Exception:
        raw.close()
        raise


# ---- copies -----------------------------------------------------------------------------------------
def _pin_patch(orig_pin):
    def pin_memory(data, *a, **k):
        t0, c0, q0 = _clocks()
        try:
            return orig_pin(data, *a, **k)
        finally:
            t1, c1, q1 = _clocks()
            _emit("pin_memory (pin thread)", "collate", -1, t0, t1, c1 - c0, (q1 - q0) if q0 >= 0 and q1 >= 0 else -1)

    return pin_memory


def _to_patch(orig, label):
    def to(self, *a, **k):
        if self.is_cuda:
            return orig(self, *a, **k)
        t0 = time.monotonic_ns()
        out = orig(self, *a, **k)
        try:
            if out is not self and getattr(out, "is_cuda", False):
                if _loop is not None:
                    _loop.before_copy(t0)
                _emit(label, "submit", -1, t0, time.monotonic_ns())
        except Exception:
            pass
        return out

    return to


def _collective_patch(orig, label):
    """A torch.distributed collective called from Python: the rank's part in it, from call to return
    (an async one: until its work is handed back)."""

    def collective(*a, **k):
        t0 = time.monotonic_ns()
        try:
            return orig(*a, **k)
        finally:
            _emit(label, "collective", -1, t0, time.monotonic_ns())

    collective._stalldx = True
    return collective


_dist_patched = [False]
# Per thread (_local): dataloader_seen — the thread asked a DataLoader for a batch: its iterations are its
# steps, not its backward passes; backwards — backward passes the thread made (a thread that iterates a
# DataLoader and never runs one, while another thread does, is a prefetch thread: not the loop).
_backwards = [0]  # backward passes made in this process so far (torch.autograd.backward's exits, any thread)


def _patch_torch_distributed(torch):
    """Collectives called through torch.distributed (a DDP model's own all-reduce runs in C++: not seen here)."""
    dist = sys.modules.get("torch.distributed")
    if dist is None or "collective" not in _ROLE or not dist.is_available() or not dist.is_initialized():
        _dist_patched[0] = dist is not None and not dist.is_available()
        return
    for fn in ("all_reduce", "all_gather", "all_gather_into_tensor", "reduce_scatter", "reduce_scatter_tensor", "broadcast",
               "barrier", "all_to_all", "all_to_all_single", "reduce"):
        orig = getattr(dist, fn, None)
        if orig is not None and not getattr(orig, "_stalldx", False):
            setattr(dist, fn, _collective_patch(orig, "%s (torch.distributed)" % fn))
    _lib.stalldx_py_note(b"torch.distributed collectives patched")


# ---- installation -----------------------------------------------------------------------------------
def _patch_torch_data():
    import stalldx_hook_loader as _loader

    from torch.utils.data import dataloader
    from torch.utils.data._utils import fetch, pin_memory, worker

    if getattr(fetch._MapDatasetFetcher.fetch, "_stalldx", False):
        return
    import torch

    _orig["worker_loop"] = worker._worker_loop
    for cls in (fetch._MapDatasetFetcher, fetch._IterableDatasetFetcher):
        cls.fetch = _loader._fetch_patch(cls.fetch)
    base = dataloader._BaseDataLoaderIter
    base.__next__ = _loader._next_patch(base.__next__)
    base._reset = _loader._reset_patch(base._reset)
    for cls in (dataloader._SingleProcessDataLoaderIter, dataloader._MultiProcessingDataLoaderIter):
        cls.__del__ = _loader._del_patch(cls.__dict__.get("__del__"))
    single, multi = dataloader._SingleProcessDataLoaderIter, dataloader._MultiProcessingDataLoaderIter
    single.__init__ = _loader._iter_init_patch(single.__init__, False)
    multi.__init__ = _loader._iter_init_patch(multi.__init__, True)
    pin_memory.pin_memory = _pin_patch(pin_memory.pin_memory)
    global _loop
    import stalldx_hook_loop

    stalldx_hook_loop.install(torch)
    _loop = stalldx_hook_loop
    atexit.register(_loader.close_orphan_at_exit)
    torch.Tensor.to = _to_patch(torch.Tensor.to, "to(device)")
    torch.Tensor.cuda = _to_patch(torch.Tensor.cuda, "cuda()")
    _lib.stalldx_py_note(("torch %s: DataLoader patched" % torch.__version__).encode())


class _Finder:
    """Patches torch once its import has finished (torch's own __init__ imports torch.utils.data before
    torch.autograd and torch.optim exist: patching there met a partly initialized torch on torch 2.x)."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "torch":
            return None
        sys.meta_path.remove(self)
        try:
            import importlib.util

            spec = importlib.util.find_spec(fullname)
        finally:
            pass
        if spec is None or spec.loader is None:
            return None
        exec_module = spec.loader.exec_module

        def exec_and_patch(module):
            exec_module(module)
            try:
                _patch_torch_data()
            except Exception as e:
                _lib.stalldx_py_note(("torch.utils.data not patched: %r" % (e,)).encode("utf-8", "replace"))

        spec.loader.exec_module = exec_and_patch
        return spec


def _after_fork_in_child():
    _names.clear()


def arm():
    """Loads the injection library and waits for torch (patched once its import has finished). Called once, by the shim."""
    global _lib, _clock_buf, _STEP_NAME, _BACKWARD_STEP_NAME, _EVAL_ITERATION_NAME, _PREFETCH_ITERATION_NAME, _WORKER_START_NAME, \
        _ITERATOR_START_NAME
    if _lib is not None:
        return
    path = os.environ.get("STALLDX_PY_INJECT")
    if not path:
        return
    lib = ctypes.CDLL(path)
    lib.stalldx_py_name.argtypes = [ctypes.c_char_p]
    lib.stalldx_py_name.restype = ctypes.c_uint32
    lib.stalldx_py_clocks.argtypes = [ctypes.POINTER(ctypes.c_int64)]
    lib.stalldx_py_clocks.restype = None
    lib.stalldx_py_range.argtypes = [ctypes.c_uint32, ctypes.c_uint32, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64,
                                     ctypes.c_int64]
    lib.stalldx_py_range.restype = None
    lib.stalldx_py_note.argtypes = [ctypes.c_char_p]
    lib.stalldx_py_note.restype = None
    if not lib.stalldx_py_enabled():
        return
    # The role numbers and the step name, from stalldx itself (one definition: trace/roles.h).
    for item in os.environ.get("STALLDX_PY_ROLES", "").split(","):
        name, _, number = item.partition(":")
        if number.isdigit():
            _ROLE[name] = int(number)
    if not all(r in _ROLE for r in ("step", "wait_batch", "retrieval", "decode", "collate", "submit")):
        return
    _STEP_NAME = os.environ.get("STALLDX_PY_STEP_NAME", _STEP_NAME)
    _BACKWARD_STEP_NAME = os.environ.get("STALLDX_PY_BACKWARD_STEP_NAME", _BACKWARD_STEP_NAME)
    _EVAL_ITERATION_NAME = os.environ.get("STALLDX_PY_EVAL_ITERATION_NAME", _EVAL_ITERATION_NAME)
    _PREFETCH_ITERATION_NAME = os.environ.get("STALLDX_PY_PREFETCH_ITERATION_NAME", _PREFETCH_ITERATION_NAME)
    _WORKER_START_NAME = os.environ.get("STALLDX_PY_WORKER_START_NAME", _WORKER_START_NAME)
    _ITERATOR_START_NAME = os.environ.get("STALLDX_PY_ITERATOR_START_NAME", _ITERATOR_START_NAME)
    _clock_buf = ctypes.c_int64 * 3
    _lib = lib
    _orig["open"] = builtins.open
    os.register_at_fork(after_in_child=_after_fork_in_child)
    if "torch" in sys.modules:
        _patch_torch_data()
    else:
        sys.meta_path.insert(0, _Finder())
