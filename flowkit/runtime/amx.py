"""Whether llama.cpp may use its extra buffer types (AMX weight repacking) on this CPU.

A llama.cpp built for the native CPU uses Intel AMX tiles when the CPU advertises `amx_tile`. Inside
some virtual machines the flag is advertised, the kernel grants the permission, and yet the first
tile instruction (`ldtilecfg`) faults: the process dies with SIGSEGV at the first model call. The
only reliable test is to try: `probe()` loads the model with extra buffer types on in a child
process, generates one token and reports whether the child survived. The answer is cached per
llama.cpp build and CPU (`$FLOWKIT_CACHE_DIR`, default `~/.cache/flowkit/amx-probe.json`), so the
probe runs once per machine and build; on a CPU without `amx_tile` it never runs.

Settings (`llm.extra_bufts`): "auto" (decide as above), "on" or "off" (force). "on" on a CPU that
advertises AMX still asks the probe (cached), and where the probe recorded a fault the load is
refused with a ResourceError naming the setting and the probe's result, instead of a crash.

Test settings (environment variables):
- FLOWKIT_AMX_PROBE=usable|unusable stands in for the child's answer on a machine whose CPU lacks
  AMX; FLOWKIT_AMX_PROBE=selftest-crash makes the real child die with SIGSEGV before its call, so the
  crash path of the probe itself runs.
- FLOWKIT_SIMULATE_AMX_FAULT=1 simulates a CPU that advertises AMX but faults on it: `cpu_flags()`
  (of this machine) adds `amx_tile`, and the import hook in flowkit/testing/amx_sim (put on
  PYTHONPATH: `make test` does) kills any process that loads a GGUF with the extra buffer types on
  with SIGSEGV, as the real fault does. Use a separate FLOWKIT_CACHE_DIR with it.
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

from ..errors import ResourceError

EXTRA_BUFTS_CHOICES = ("auto", "on", "off")
PROBE_TIMEOUT_S = 120.0
#: the test setting under which this machine looks like an AMX CPU that faults (see above)
SIMULATE_ENV = "FLOWKIT_SIMULATE_AMX_FAULT"


def simulating_fault() -> bool:
    """Whether FLOWKIT_SIMULATE_AMX_FAULT=1 (a test setting) is on in this process."""
    return os.environ.get(SIMULATE_ENV, "") == "1"


@dataclass(frozen=True)
class Decision:
    """Load with extra buffer types (`use`) or not, and why."""

    use: bool
    reason: str


def cpu_flags(cpuinfo: str | None = None) -> set[str]:
    """The CPU feature flags of the first processor in `cpuinfo`, by default this machine's
    /proc/cpuinfo (empty where unreadable); this machine's include `amx_tile` under
    FLOWKIT_SIMULATE_AMX_FAULT=1."""
    simulated = {"amx_tile"} if cpuinfo is None and simulating_fault() else set()
    if cpuinfo is None:
        cpuinfo = _read_cpuinfo()
    for line in cpuinfo.splitlines():
        if line.startswith("flags") and ":" in line:
            return set(line.split(":", 1)[1].split()) | simulated
    return simulated


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
    flags = " ".join(sorted(cpu_flags(cpuinfo)))
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
    cmd = [sys.executable, "-m", "flowkit.runtime.gguf_load", "--probe", model_path]
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
    """Whether to load with extra buffer types, for `llm.extra_bufts` = auto | on | off
    (`cpuinfo`: /proc/cpuinfo text, by default this machine's).

    A setting outside those three is a ValueError; "on" where the probe recorded a fault is a
    ResourceError naming the setting and the probe's result.
    """
    if setting == "off":
        return Decision(False, "settings: extra_bufts = off")
    if setting not in EXTRA_BUFTS_CHOICES:
        raise ValueError(f"settings: llm.extra_bufts must be one of {EXTRA_BUFTS_CHOICES}; "
                         f"got {setting!r}")
    advertised = "amx_tile" in cpu_flags(cpuinfo)
    forced = os.environ.get("FLOWKIT_AMX_PROBE", "")
    if not advertised and not forced:
        if setting == "on":
            return Decision(True, "settings: extra_bufts = on")
        return Decision(True, "the CPU does not advertise AMX (no amx_tile)")
    recorded = probe_result(model_path, cpuinfo)
    if setting == "on":
        if not recorded.use:
            raise ResourceError(
                "settings: llm.extra_bufts = on, but this CPU cannot use AMX: "
                f"{recorded.reason} (recorded in {cache_path()}). Set extra_bufts to auto or off "
                "(the Settings page, settings.json, or `flowkit serve-model --extra-bufts`).")
        return Decision(True, f"settings: extra_bufts = on ({recorded.reason})")
    return recorded


def _probe_key(cpuinfo: str | None) -> str:
    forced = os.environ.get("FLOWKIT_AMX_PROBE", "")
    return cache_key(cpuinfo) + (f":{forced}" if forced else "")


def recorded() -> Decision | None:
    """The probe's cached answer for this machine's llama.cpp build and CPU (None: not probed)."""
    return _cached(_probe_key(None))


def probe_result(model_path: str, cpuinfo: str | None = None) -> Decision:
    """The probe's answer for this llama.cpp build and CPU: cached, else probed now and cached."""
    key = _probe_key(cpuinfo)
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
