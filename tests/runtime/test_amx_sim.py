"""The simulated AMX CPU (FLOWKIT_SIMULATE_AMX_FAULT=1 + flowkit/testing/amx_sim on PYTHONPATH): a
process that loads a GGUF with extra buffer types on dies with SIGSEGV, as on a CPU whose AMX
faults; a process that loads through flowkit's one loader probes, turns them off and answers."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from flowkit.runtime.models import packaged_path

pytestmark = [pytest.mark.real, pytest.mark.loads_model]

ROOT = Path(__file__).resolve().parents[2]
HOOK = ROOT / "flowkit" / "testing" / "amx_sim"


def _child(code: str, tmp_path: Path, simulate: str = "1",
           args: list[str] | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "FLOWKIT_SIMULATE_AMX_FAULT": simulate, "FLOWKIT_CACHE_DIR": str(tmp_path),
           "PYTHONPATH": os.pathsep.join([str(HOOK), os.environ.get("PYTHONPATH", "")])}
    env.pop("FLOWKIT_AMX_PROBE", None)
    return subprocess.run([sys.executable, "-c", code, *(args or [])], capture_output=True, text=True, env=env,
                          timeout=300)


def test_a_load_that_skips_the_decision_dies_with_sigsegv(tmp_path: Path) -> None:
    model = str(packaged_path("smollm2-135m"))
    # deliberately the load every other file is forbidden (tests/runtime/test_one_loader.py)
    code = (f"from llama_cpp import Llama\nLlama(model_path={model!r}, n_ctx=64, "
            "verbose=False)\nprint('loaded')")
    skipping = _child(code, tmp_path)
    assert skipping.returncode == -signal.SIGSEGV, skipping.stderr[-600:]
    assert "loaded" not in skipping.stdout
    assert "FLOWKIT_SIMULATE_AMX_FAULT=1" in skipping.stderr
    control = _child(code, tmp_path, simulate="0")      # the same load, no simulation: it loads
    assert control.returncode == 0 and "loaded" in control.stdout, control.stderr[-600:]


def test_the_one_loader_probes_turns_the_buffers_off_and_answers(tmp_path: Path) -> None:
    model = str(packaged_path("smollm2-135m"))
    code = ("import json\nfrom flowkit.runtime import amx\nfrom flowkit.runtime.gguf_load import "
            f"load_llama\nm = load_llama({model!r}, 'auto', n_ctx=128, n_threads=1)\n"
            "out = m.llama.create_completion('The capital of France is', max_tokens=2)\n"
            "print(json.dumps({'amx': 'amx_tile' in amx.cpu_flags(), 'use': m.decision.use, "
            "'reason': m.decision.reason, 'text': out['choices'][0]['text']}))")
    done = _child(code, tmp_path)
    assert done.returncode == 0, done.stderr[-600:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["amx"] is True and got["use"] is False
    assert "the AMX probe died with signal 11 (SIGSEGV)" in got["reason"]
    cached = json.loads((tmp_path / "amx-probe.json").read_text())
    assert [v["use"] for v in cached.values()] == [False]       # the probe ran once, recorded
    # forcing the buffers on now is refused with the setting and the recorded result
    refused = _child(code.replace("'auto'", "'on'"), tmp_path)
    assert refused.returncode == 1
    assert "ResourceError: settings: llm.extra_bufts = on, but this CPU cannot use AMX: the AMX " \
           "probe died with signal 11 (SIGSEGV)" in refused.stderr


def test_serve_model_forced_on_is_refused_and_doctor_shows_the_decision(tmp_path: Path) -> None:
    """On the simulated CPU `flowkit serve-model --extra-bufts on` stops with the clear error (exit
    2, no crash) and `flowkit doctor` reports the probe's cached result and its file."""
    run = ("import sys\nfrom service.cli import main\nsys.exit(main(sys.argv[1:]))")
    env_home = {"FLOWKIT_HOME": str(tmp_path / "home")}
    doctor = _child(f"import os\nos.environ.update({env_home!r})\n{run}", tmp_path,
                    args=["doctor", "--json", "--probe"])
    assert doctor.returncode == 0, doctor.stderr[-600:]
    report = json.loads(doctor.stdout)
    assert report["cpu_advertises_amx"] is True and report["simulated"] is True
    assert report["extra_buffer_types"] is False and "SIGSEGV" in report["reason"]
    assert report["probe_cache"] == str(tmp_path / "amx-probe.json")
    assert report["probe_result"]["use"] is False
    served = _child(run, tmp_path, args=["serve-model", "smollm2-135m", "--port", "9",
                                         "--extra-bufts", "on"])
    assert served.returncode == 2, served.stderr[-600:]
    message = " ".join(served.stderr.split())
    assert "llm.extra_bufts = on, but this CPU cannot use AMX: the AMX probe died with signal 11 " \
           "(SIGSEGV)" in message
