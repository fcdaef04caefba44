"""Whether llama.cpp may use its extra buffer types (AMX weight repacking) on this CPU.

A llama.cpp built for the native CPU uses Intel AMX tiles when the CPU advertises `amx_tile`. Inside
some virtual machines the flag is advertised, the kernel grants the permission, and yet the first
tile instruction (`ldtilecfg`) faults: the process dies with SIGSEGV at the first model call. The
only reliable test is to try: `probe()` loads the model with extra buffer types on in a child
process, generates one token and reports whether the child survived. The answer is cached per
llama.cpp build and CPU (`$FLOWKIT_CACHE_DIR`, default `~/.cache/flowkit/amx-probe.json`), so the
probe runs once per machine and build; on a CPU without `amx_tile` it never runs.

Settings (`llm.extra_bufts`): "auto" (decide as above), "on" or "off" (force). For tests, the
environment variable FLOWKIT_AMX_PROBE=usable|unusable stands in for the child's answer on a
machine whose CPU lacks AMX, and FLOWKIT_AMX_PROBE=selftest-crash makes the real child die with
SIGSEGV before its call, so the crash path of the probe itself runs.
"""
from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

EXTRA_BUFTS_CHOICES = ("auto", "on", "off")
PROBE_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class Decision:
    """Load with extra buffer types (`use`) or not, and why."""

    use: bool
    reason: str


def cpu_flags(cpuinfo: str | None = None) -> set[str]:
    """The CPU feature flags of the first processor in /proc/cpuinfo (empty where unreadable)."""
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text(errors="replace")
        except OSError:
            return set()
    for line in cpuinfo.splitlines():
        if line.startswith("flags") and ":" in line:
            return set(line.split(":", 1)[1].split())
    return set()


def _cpu_model(cpuinfo: str) -> str:
    for line in cpuinfo.splitlines():
        if line.startswith("model name") and ":" in line:
            return line.split(":", 1)[1].strip()
    return "unknown"


def _build_id() -> str:
    """What identifies the llama.cpp build: llama-cpp-python's version and its CPU library file."""
    try:
        import llama_cpp
    except ImportError:
        return "no-llama-cpp"
    lib_dir = Path(llama_cpp.__file__).parent / "lib"
    parts = [str(getattr(llama_cpp, "__version__", "?"))]
    for lib in sorted(lib_dir.glob("libggml-cpu*")) if lib_dir.is_dir() else []:
        st = lib.stat()
        parts.append(f"{lib.name}:{st.st_size}:{int(st.st_mtime)}")
    return "|".join(parts)


def cache_key(cpuinfo: str | None = None) -> str:
    """One key per llama.cpp build and CPU model + flags."""
    text = cpuinfo if cpuinfo is not None else _read_cpuinfo()
    flags = " ".join(sorted(cpu_flags(text)))
    raw = f"{_build_id()}\n{_cpu_model(text)}\n{flags}"
    return hashlib.sha256(raw.encode()).hexdigest()[:24]


def _read_cpuinfo() -> str:
    try:
        return Path("/proc/cpuinfo").read_text(errors="replace")
    except OSError:
        return ""


def cache_path() -> Path:
    root = os.environ.get("FLOWKIT_CACHE_DIR") or str(Path.home() / ".cache" / "flowkit")
    return Path(root).expanduser() / "amx-probe.json"


def _cached(key: str) -> Decision | None:
    try:
        data = json.loads(cache_path().read_text())
        entry = data.get(key)
        return Decision(bool(entry["use"]), str(entry["reason"])) if entry else None
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def _store(key: str, decision: Decision) -> None:
    path = cache_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            data = json.loads(path.read_text())
            data = data if isinstance(data, dict) else {}
        except (OSError, ValueError):
            data = {}
        data[key] = asdict(decision)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data, indent=1))
        tmp.replace(path)
    except OSError:
        pass   # a read-only home only costs a probe per start


def probe(model_path: str, timeout_s: float = PROBE_TIMEOUT_S) -> Decision:
    """Load `model_path` with extra buffer types on in a child process and generate one token."""
    forced = os.environ.get("FLOWKIT_AMX_PROBE", "")
    if forced == "usable":
        return Decision(True, "probe forced by FLOWKIT_AMX_PROBE=usable")
    if forced == "unusable":
        return Decision(False, "probe forced by FLOWKIT_AMX_PROBE=unusable")
    cmd = [sys.executable, "-m", "flowkit.runtime.amx", model_path]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s,
                              env={**os.environ, "PYTHONFAULTHANDLER": ""})
    except subprocess.TimeoutExpired:
        return Decision(False, f"the AMX probe did not finish in {timeout_s:g} s; extra buffer "
                               "types off to be safe")
    if proc.returncode == 0:
        return Decision(True, "the AMX probe generated a token with extra buffer types on")
    if proc.returncode < 0:
        return Decision(False, f"the AMX probe died with {signal_name(-proc.returncode)}; "
                               "this CPU advertises AMX but the process may not use it")
    tail = (proc.stderr or "").strip().splitlines()[-1:] or [""]
    return Decision(False, f"the AMX probe failed (exit {proc.returncode}): {tail[0][:200]}")


def decide(setting: str, model_path: str, cpuinfo: str | None = None) -> Decision:
    """Whether to load with extra buffer types, for `llm.extra_bufts` = auto | on | off."""
    if setting == "on":
        return Decision(True, "settings: extra_bufts = on")
    if setting == "off":
        return Decision(False, "settings: extra_bufts = off")
    if setting != "auto":
        raise ValueError(f"settings: llm.extra_bufts must be one of {EXTRA_BUFTS_CHOICES}; "
                         f"got {setting!r}")
    text = cpuinfo if cpuinfo is not None else _read_cpuinfo()
    forced = os.environ.get("FLOWKIT_AMX_PROBE", "")
    if "amx_tile" not in cpu_flags(text) and not forced:
        return Decision(True, "the CPU does not advertise AMX (no amx_tile)")
    key = cache_key(text) + (f":{forced}" if forced else "")
    hit = _cached(key)
    if hit is not None:
        return hit
    decision = probe(model_path)
    _store(key, decision)
    return decision


def signal_name(signum: int) -> str:
    """'signal 11 (SIGSEGV)' for 11."""
    try:
        return f"signal {signum} ({signal.Signals(signum).name})"
    except ValueError:
        return f"signal {signum}"


def _probe_child(model_path: str) -> int:
    """The probe itself (runs as `python -m flowkit.runtime.amx MODEL`)."""
    if os.environ.get("FLOWKIT_AMX_PROBE") == "selftest-crash":
        os.kill(os.getpid(), signal.SIGSEGV)
    from llama_cpp import Llama

    llama = Llama(model_path=model_path, n_ctx=64, n_threads=1, n_threads_batch=1, verbose=False)
    llama.create_completion("The capital of France is", max_tokens=1, temperature=0.0)
    return 0


if __name__ == "__main__":
    raise SystemExit(_probe_child(sys.argv[1]))
