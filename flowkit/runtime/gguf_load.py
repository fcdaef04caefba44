"""The one way a GGUF is loaded: `load_llama` (and `load_gguf` for a loader that builds the `Llama`
itself, such as llama-cpp-python's server), both applying the AMX decision (`amx.decide`).

Every process that loads a model goes through here: the model worker and `in_process` models
(`llm.LlamaCppLLM`), `flowkit serve-model` (`serve_model.py`), the AMX probe child (the one load
that keeps the extra buffer types on deliberately, `probe=True`), the benches and the tests. A
test (tests/runtime/test_one_loader.py) fails on any `Llama(` construction or `llama_cpp.server`
command elsewhere in the repository.
"""
from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from ..errors import ResourceError
from . import amx

T = TypeVar("T")

_LOAD_LOCK = threading.Lock()


@contextlib.contextmanager
def extra_bufts(use: bool) -> Iterator[None]:
    """Load models with llama.cpp's extra buffer types (AMX weight repacking) on or off.

    llama-cpp-python builds its model params from `llama_model_default_params()` and exposes no
    argument for `use_extra_bufts`, so while one model loads that function hands out params with the
    field set. Loads are serialised by a lock; nothing else calls it meanwhile.
    """
    if use:
        yield
        return
    import llama_cpp.llama_cpp as lib

    with _LOAD_LOCK:
        original = lib.llama_model_default_params

        def params_without_extra_bufts() -> Any:
            params = original()
            params.use_extra_bufts = False
            return params

        lib.llama_model_default_params = params_without_extra_bufts
        try:
            yield
        finally:
            lib.llama_model_default_params = original


@dataclass(frozen=True)
class Loaded:
    """A loaded `llama_cpp.Llama` and the AMX decision it was loaded with."""

    llama: Any
    decision: amx.Decision


def load_gguf(model_path: str | Path, setting: str, build: Callable[[], T], *,
              probe: bool = False) -> tuple[T, amx.Decision]:
    """Run `build` (which loads the GGUF at `model_path`) under the AMX decision for `setting`
    (`llm.extra_bufts`: auto | on | off); returns what `build` returned and the decision.

    `probe=True` is the AMX probe's own load: extra buffer types on, no decision (deciding would
    start the probe again). A bad setting, or `on` where the probe recorded a fault, is a
    ResourceError that names the setting; llama.cpp refusing the file is one too.
    """
    if probe:
        decision = amx.Decision(True, "the AMX probe itself: extra buffer types on")
    else:
        try:
            decision = amx.decide(setting, str(model_path))
        except ValueError as err:
            raise ResourceError(str(err)) from err
    try:
        with extra_bufts(decision.use):
            return build(), decision
    except (ValueError, RuntimeError) as err:
        raise ResourceError(f"cannot load model {model_path}: {err}") from err


def load_llama(model_path: str | Path, setting: str = "auto", *, probe: bool = False,
               **llama_kwargs: Any) -> Loaded:
    """`llama_cpp.Llama(model_path=..., **llama_kwargs)` under the AMX decision for `setting`.

    `verbose` defaults to False. See `load_gguf` for `probe` and the errors.
    """
    try:
        from llama_cpp import Llama
    except ImportError as err:  # pragma: no cover - install problem
        raise ResourceError("llama-cpp-python is not installed; run 'make install'") from err
    llama_kwargs.setdefault("verbose", False)
    llama, decision = load_gguf(model_path, setting,
                                lambda: Llama(model_path=str(model_path), **llama_kwargs),
                                probe=probe)
    return Loaded(llama, decision)


def _probe_child(model_path: str) -> int:
    """The AMX probe's child (`python -m flowkit.runtime.gguf_load --probe MODEL`, started by
    `amx.probe`): the one load that keeps the extra buffer types on without deciding; it generates
    one token. FLOWKIT_AMX_PROBE=selftest-crash makes it die with SIGSEGV first (a test setting)."""
    if os.environ.get("FLOWKIT_AMX_PROBE") == "selftest-crash":
        os.kill(os.getpid(), signal.SIGSEGV)
    llama = load_llama(model_path, "on", probe=True, n_ctx=64, n_threads=1,
                       n_threads_batch=1).llama
    llama.create_completion("The capital of France is", max_tokens=1, temperature=0.0)
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] != ["--probe"] or len(sys.argv) != 3:
        sys.stderr.write("usage: python -m flowkit.runtime.gguf_load --probe MODEL.gguf\n")
        raise SystemExit(2)
    raise SystemExit(_probe_child(sys.argv[2]))
