# stalldx's start-up shim: `stalldx record` puts this folder first on PYTHONPATH, so every Python
# interpreter it starts (the program, spawned DataLoader workers) imports this module at start-up.
# It (1) arms the stalldx hook, which patches torch's DataLoader only once the program itself imports
# torch (nothing is imported because of it), and (2) runs the sitecustomize this one hides, if any (the
# user's own, or the distribution's), exactly as Python would have. Never raises.
import importlib.machinery as _machinery
import importlib.util as _util
import os as _os
import sys as _sys

_here = _os.path.dirname(_os.path.abspath(__file__))


def _chain():
    # The next sitecustomize on sys.path, after this folder.
    rest = [p for p in _sys.path if _os.path.abspath(p or ".") != _here]
    spec = _machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    module = _util.module_from_spec(spec)
    _sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


try:
    if _os.environ.get("STALLDX_RECORD_DIR"):
        import stalldx_hook as _stalldx_hook

        _stalldx_hook.arm()
except Exception as _e:  # the program runs whatever happens to the hook
    _sys.stderr.write("stalldx: the Python hook is off: %r\n" % (_e,))

try:
    _chain()
except Exception:
    # As Python does for a failing sitecustomize: report and go on.
    import traceback as _tb

    _sys.stderr.write("Error in sitecustomize; set PYTHONVERBOSE for traceback:\n")
    _tb.print_exc()
