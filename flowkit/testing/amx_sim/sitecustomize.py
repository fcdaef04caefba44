"""A simulated AMX fault for tests: with this folder on PYTHONPATH and FLOWKIT_SIMULATE_AMX_FAULT=1,
every Python process (the test session, model workers, the AMX probe child, `flowkit serve-model`,
CLI subprocesses) dies with SIGSEGV when it loads a GGUF with llama.cpp's extra buffer types on,
as a CPU that advertises AMX but faults on it does (`ldtilecfg`). Loads through flowkit's one
loader (`flowkit.runtime.gguf_load`) turn the buffers off after the probe dies; any load that skips
it crashes, on any CPU.

The hook wraps `llama_cpp.llama_cpp.llama_model_load_from_file` (what llama-cpp-python's
`Llama.__init__` calls, through `_internals.LlamaModel`) when that module is first imported; it
imports nothing itself, so processes that never load a model pay nothing. After installing, the
next `sitecustomize` on sys.path (the system's) still runs. `make test` puts this folder on
PYTHONPATH for its simulated run; flowkit.runtime.amx reads the same variable.
"""
from __future__ import annotations

import importlib.abc
import importlib.machinery
import os
import runpy
import signal
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

ENV = "FLOWKIT_SIMULATE_AMX_FAULT"
TARGET = "llama_cpp.llama_cpp"
LOADERS = ("llama_model_load_from_file", "llama_load_model_from_file")


_saved_stderr: list[int] = []     # a copy of fd 2 (llama-cpp-python silences fd 2 while it loads)


def _fault() -> None:
    message = (f"{ENV}=1: a GGUF loaded with extra buffer types on; dying with SIGSEGV as a CPU "
               "whose AMX faults does\n")
    try:
        os.write(_saved_stderr[0] if _saved_stderr else 2, message.encode())
    except OSError:
        pass
    try:
        signal.signal(signal.SIGSEGV, signal.SIG_DFL)     # no Python-level handler in the way
    except ValueError:
        pass     # not the main thread: faulthandler, if on, re-raises SIGSEGV after its dump
    os.kill(os.getpid(), signal.SIGSEGV)


def patch(module: ModuleType) -> None:
    """Wrap the module's model loaders so that extra buffer types on means SIGSEGV."""
    if not _saved_stderr:
        try:
            _saved_stderr.append(os.dup(2))
        except OSError:
            pass
    for name in LOADERS:
        original = getattr(module, name, None)
        if original is None or getattr(original, "_flowkit_amx_sim", False):
            continue

        def load(path_model: Any, params: Any, _original: Any = original) -> Any:
            if bool(getattr(params, "use_extra_bufts", False)):
                _fault()
            return _original(path_model, params)

        load._flowkit_amx_sim = True        # type: ignore[attr-defined]
        setattr(module, name, load)


class _PatchingLoader(importlib.abc.Loader):
    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self.inner.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self.inner.exec_module(module)
        patch(module)


class _Finder(importlib.abc.MetaPathFinder):
    flowkit_amx_sim = True      # one such finder per process, whichever copy of this file made it

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname != TARGET:
            return None
        for finder in sys.meta_path:
            if getattr(finder, "flowkit_amx_sim", False) or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None and spec.loader is not None:
                spec.loader = _PatchingLoader(spec.loader)
                return spec
        return None


def install() -> None:
    """Wrap the loaders now (module already imported) or when llama_cpp.llama_cpp is imported."""
    if TARGET in sys.modules:
        patch(sys.modules[TARGET])
    elif not any(getattr(f, "flowkit_amx_sim", False) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())


def _chain() -> None:
    """Run the next sitecustomize on sys.path (this one shadows the system's)."""
    here = Path(__file__).resolve().parent
    for entry in sys.path:
        candidate = Path(entry or ".") / "sitecustomize.py"
        try:
            if candidate.resolve().parent != here and candidate.is_file():
                runpy.run_path(str(candidate), run_name="sitecustomize")
                return
        except OSError:
            continue


if os.environ.get(ENV, "") == "1":
    install()
if __name__ == "sitecustomize":
    _chain()
