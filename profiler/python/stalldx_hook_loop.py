# The stalldx hook's steps for a training loop that makes its batches without a DataLoader (its own
# generator, a list of file names, a reader class): the same ranges as a DataLoader loop with
# num_workers=0, found from what every training loop does.
#   - an iteration ends where a backward pass ends (torch.autograd.backward, which Tensor.backward
#     calls): one step from the end of one backward to the end of the next (a step, role step);
#   - the batch is made after the backward and the optimizer's step (its end, torch's global post-step
#     hook, or Optimizer._optimizer_step_code on torch 1.x, moves the start) and before the next forward
#     or copy to a GPU (the first module call, torch's global forward pre-hook removed once it fires;
#     Tensor.to / .cuda): a wait for the batch (wait_batch) split as a fetch is
#     (stalldx_hook_loader._record_work: reads of files opened in it and time blocked off-CPU are
#     retrieval, the rest decode; blocked while the process's other threads ran — threads of its own
#     making the batch, or its child processes (a multiprocessing.Pool) — is decode up to their CPU time (and, for children, time runnable waiting for a CPU)).
# Only on a thread that is not iterating a DataLoader: from a DataLoader batch until that iterator's end,
# the thread's iterations are the steps and this stays quiet there (a prefetch thread's DataLoader leaves
# it on in the loop's thread; after a pass ends, a loop that goes on — itertools.cycle replaying the
# batches — has its backward passes for steps again). Clocks: CLOCK_MONOTONIC (time.monotonic_ns), stalldx's.
# Every patch falls back to the original on an error of its own.
import builtins
import time

import stalldx_hook as _h
import stalldx_hook_loader as _loader

_serial = [None]  # this process's loop serial (a batch id's iterator field), taken at the first step
_index = [0]
# Whether the process had child processes at a wait's end (a Pool making its batches): from then on each
# wait reads their CPU time at both ends (0.09–0.18 ms a read with 1–2 children on the 2-core VM; a loop
# without children looks for them once in _PROBE_EVERY waits).
_has_children = [False]


def _active():
    """This thread's backward passes are its steps: it is not iterating a DataLoader (a loop fed by its own
    generator, by a queue that a prefetch thread fills from a DataLoader, or by batches kept from a pass)."""
    return not getattr(_h._local, "dataloader_seen", False)


def _batch_id():
    if _serial[0] is None:
        _serial[0] = next(_h._serials)
    return _h._batch_id(_serial[0], 0, _index[0])


def _begin_between(loc, torch):
    """After a backward, on its thread: the next batch is being made until the next forward."""
    hook = getattr(torch.nn.modules.module, "register_module_forward_pre_hook", None)
    if hook is None:
        return
    loc.loop_reads, loc.loop_collate = [0, 0], [0, 0]
    loc.reads, loc.collate = loc.loop_reads, loc.loop_collate
    builtins.open = _h._open
    loc.loop_between = _h._clocks()[:]
    loc.loop_process_cpu = time.process_time_ns()
    loc.loop_children = _h._children_busy() if _has_children[0] else None
    loc.loop_handle = hook(_on_forward)


def _end_between(loc, emit, end=None):
    t1, c1, q1 = _h._clocks()
    handle, begin = loc.loop_handle, loc.loop_between
    if end is not None and begin is not None and end < t1:  # the CPU clocks stay those of now: a copy's own CPU time is small
        t1 = max(end, begin[0])
    loc.loop_handle = loc.loop_between = None
    loc.reads = loc.collate = None
    builtins.open = _h._orig["open"]
    handle.remove()
    if not emit or begin is None:
        return
    t0, c0, q0 = begin
    others = time.process_time_ns() - loc.loop_process_cpu - (c1 - c0)  # the process's other threads, meanwhile
    others += _children_meanwhile(getattr(loc, "loop_children", None))  # and its child processes
    batch = _batch_id()
    runq = (q1 - q0) if q0 >= 0 and q1 >= 0 else -1
    _h._emit("batch made in the loop (wait for batch)", "wait_batch", batch, t0, t1, c1 - c0, runq)
    _loader._record_work(batch, t0, t1, c1 - c0, runq, loc.loop_reads, loc.loop_collate, others)
    loc.loop_batch = batch


_PROBE_EVERY = 50  # waits between two looks for children while none were found
_waits_unprobed = [0]


def _children_meanwhile(before):
    """Time the process's children spent on a CPU or runnable since `before` ({pid: ns}). None: not read —
    then whether there are children is learnt for the next waits, at the first wait and every
    _PROBE_EVERY-th after it (one read in 50 waits for a loop without children)."""
    if before is None:
        _waits_unprobed[0] += 1
        if _waits_unprobed[0] % _PROBE_EVERY == 1:
            _has_children[0] = bool(_h._children_busy())
        return 0
    return sum(max(ns - before.get(pid, 0), 0) for pid, ns in _h._children_busy().items())


def _on_forward(module, inputs):
    try:
        loc = _h._local
        if getattr(loc, "loop_handle", None) is not None:  # the first forward on the loop's thread since its backward
            _end_between(loc, _active())
    except Exception:
        pass
    return None


def _after_backward(torch):
    loc = _h._local
    t, c, _ = _h._clocks()
    if getattr(loc, "loop_handle", None) is not None:  # no module call since the last backward: nothing measured
        _end_between(loc, False)
    begin = getattr(loc, "loop_step_begin", None)
    if begin is not None:  # the step carries the loop thread's CPU time (-1 where unknown; its run-queue time not: see
        c0 = getattr(loc, "loop_step_cpu", -1)  # stalldx_hook_loader._step_cpu)
        _h._emit(_h._BACKWARD_STEP_NAME, "step", getattr(loc, "loop_batch", -1), begin, t, c - c0 if c >= c0 >= 0 else -1)
        _index[0] += 1
    loc.loop_step_begin, loc.loop_batch, loc.loop_step_cpu = t, -1, c
    _begin_between(loc, torch)


def _after_optimizer_step(*_):
    """The optimizer's step is the iteration's own work: the batch is made after it."""
    try:
        loc = _h._local
        loc.work_end = time.monotonic_ns()
        if getattr(loc, "loop_handle", None) is not None:
            loc.loop_between = _h._clocks()[:]
            loc.loop_process_cpu = time.process_time_ns()
            loc.loop_children = _h._children_busy() if _has_children[0] else None
            loc.loop_reads[0] = loc.loop_reads[1] = loc.loop_collate[0] = loc.loop_collate[1] = 0
    except Exception:
        pass


def before_copy(begin):
    """A tensor copied to a GPU (Tensor.to / .cuda) from `begin` on: the batch was made by then; its copy is
    submission."""
    try:
        loc = _h._local
        if getattr(loc, "loop_handle", None) is not None:
            _end_between(loc, _active(), begin)
    except Exception:
        pass


def _backward_patch(orig, torch):
    def backward(*a, **k):
        try:
            return orig(*a, **k)
        finally:
            try:
                _h._backwards[0] += 1
                _h._local.backwards = getattr(_h._local, "backwards", 0) + 1
                _h._local.work_end = time.monotonic_ns()  # this thread's iteration work ended by here (at least)
                if _active():
                    _after_backward(torch)
            except Exception:
                pass

    backward._stalldx = True
    return backward


def install(torch):
    """Patches torch.autograd.backward (Tensor.backward calls it through the module)."""
    if getattr(torch.autograd.backward, "_stalldx", False):
        return
    torch.autograd.backward = _backward_patch(torch.autograd.backward, torch)
    post_hook = getattr(getattr(torch.optim, "optimizer", None), "register_optimizer_step_post_hook", None)
    if post_hook is not None:  # torch >= 2.0
        post_hook(_after_optimizer_step)
    elif hasattr(torch.optim.Optimizer, "_optimizer_step_code"):  # torch 1.x: every step calls it at its end
        orig_code = torch.optim.Optimizer._optimizer_step_code

        def _optimizer_step_code(self):
            try:
                return orig_code(self)
            finally:
                _after_optimizer_step()

        torch.optim.Optimizer._optimizer_step_code = _optimizer_step_code


def stop(loc):
    """The first DataLoader batch: an interval still open on this thread ends unrecorded."""
    if getattr(loc, "loop_handle", None) is not None:
        _end_between(loc, False)
