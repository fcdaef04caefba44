"""The AMX decision: forced by settings, skipped without amx_tile, probed in a child otherwise.

This machine may have no AMX: the paths it cannot reach are forced here, through
FLOWKIT_AMX_PROBE (the child's answer) and a cpuinfo text that advertises amx_tile; the crash path
runs a real child process that dies with SIGSEGV.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from flowkit.runtime import amx

NO_AMX = "model name\t: Test CPU\nflags\t\t: fpu sse2 avx2 avx512f\n"
WITH_AMX = "model name\t: Test CPU AMX\nflags\t\t: fpu sse2 avx2 avx512f amx_bf16 amx_tile amx_int8\n"


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("FLOWKIT_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("FLOWKIT_AMX_PROBE", raising=False)
    return tmp_path


def _no_probe(model_path: str) -> amx.Decision:
    raise AssertionError("the probe must not run here")


def test_settings_force_either_way(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(amx, "probe", _no_probe)
    assert amx.decide("on", "m.gguf", NO_AMX).use is True
    assert amx.decide("off", "m.gguf", NO_AMX).use is False
    assert amx.decide("off", "m.gguf", WITH_AMX).use is False
    with pytest.raises(ValueError, match="extra_bufts must be one of"):
        amx.decide("maybe", "m.gguf", NO_AMX)


def test_no_amx_flag_keeps_extra_buffer_types_without_probing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(amx, "probe", _no_probe)
    d = amx.decide("auto", "m.gguf", NO_AMX)
    assert d.use is True and "does not advertise AMX" in d.reason


def test_amx_flag_asks_the_probe_once_and_caches_per_cpu(monkeypatch: pytest.MonkeyPatch,
                                                         _cache: Path) -> None:
    calls: list[str] = []

    def crashed(model_path: str) -> amx.Decision:
        calls.append(model_path)
        return amx.Decision(False, "the AMX probe died with signal 11 (SIGSEGV)")

    monkeypatch.setattr(amx, "probe", crashed)
    first = amx.decide("auto", "m.gguf", WITH_AMX)
    again = amx.decide("auto", "m.gguf", WITH_AMX)
    assert first.use is False and again == first and calls == ["m.gguf"]
    cached = json.loads((_cache / "amx-probe.json").read_text())
    assert list(cached.values()) == [{"use": False, "reason": first.reason}]
    # another CPU model is another key: probed again
    amx.decide("auto", "m.gguf", WITH_AMX.replace("Test CPU AMX", "Other CPU"))
    assert len(calls) == 2


def test_forced_probe_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLOWKIT_AMX_PROBE", "unusable")
    assert amx.decide("auto", "m.gguf", NO_AMX).use is False
    monkeypatch.setenv("FLOWKIT_AMX_PROBE", "usable")
    assert amx.decide("auto", "m.gguf", NO_AMX).use is True


def test_a_probe_child_that_dies_with_sigsegv_turns_extra_buffer_types_off(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLOWKIT_AMX_PROBE", "selftest-crash")   # the real child kills itself
    d = amx.probe("unused.gguf")
    assert d.use is False and "signal 11 (SIGSEGV)" in d.reason


def test_forcing_amx_on_asks_the_probe_and_is_refused_where_it_faulted(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from flowkit.errors import ResourceError

    monkeypatch.setattr(amx, "probe", lambda m: amx.Decision(True, "the AMX probe generated a token"))
    assert amx.decide("on", "m.gguf", WITH_AMX).use is True
    crashed = "the AMX probe died with signal 11 (SIGSEGV)"
    monkeypatch.setattr(amx, "probe", lambda m: amx.Decision(False, crashed))
    other_cpu = WITH_AMX.replace("Test CPU AMX", "Faulting CPU")
    with pytest.raises(ResourceError) as info:
        amx.decide("on", "m.gguf", other_cpu)
    assert "extra_bufts = on" in str(info.value) and crashed in str(info.value)
    assert amx.decide("auto", "m.gguf", other_cpu).use is False     # auto turns them off instead


def test_the_simulated_amx_cpu_advertises_amx_on_this_machine_only(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(amx.SIMULATE_ENV, raising=False)
    real = amx.cpu_flags()
    monkeypatch.setenv(amx.SIMULATE_ENV, "1")
    assert amx.cpu_flags() == real | {"amx_tile"}
    assert "amx_tile" not in amx.cpu_flags(NO_AMX)         # a given cpuinfo text is read as is


def test_cpu_flags_reads_the_first_flags_line() -> None:
    assert "amx_tile" in amx.cpu_flags(WITH_AMX)
    assert amx.cpu_flags("nothing here") == set()
    assert amx.signal_name(9) == "signal 9 (SIGKILL)"

