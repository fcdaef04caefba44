"""Every GGUF load goes through flowkit.runtime.gguf_load: no `Llama(` construction, no direct
llama.cpp model-load call and no `llama_cpp.server` command anywhere else in the repository."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
THIS = Path(__file__).resolve().relative_to(ROOT).as_posix()

#: pattern -> the files where it may appear
RULES: dict[str, tuple[re.Pattern[str], set[str]]] = {
    "a Llama construction": (re.compile(r"\bLlama(?:\.from_pretrained)?\s*\("),
                             {"flowkit/runtime/gguf_load.py",
                              # the simulation's own test: a load that skips the decision dies
                              "tests/runtime/test_amx_sim.py"}),
    "a direct llama.cpp model load": (
        re.compile(r"\bllama_(?:model_load_from_file|load_model_from_file)\b"),
        {"flowkit/testing/amx_sim/sitecustomize.py"}),
    "llama-cpp-python's server loader": (re.compile(r"\bload_llama_from_model_settings\b"),
                                         {"flowkit/runtime/serve_model.py"}),
    "a llama_cpp.server command": (
        re.compile(r"-m[\s\"',]+llama_cpp\.server|[\"']llama_cpp\.server[\"']"
                   r"|uvicorn\s+llama_cpp\.server|llama_cpp\.server\.__main__"),
        set()),
}
TEXT = (".py", ".yaml", ".yml", ".md", ".toml", ".sh", ".cfg", ".ini", ".txt", ".json")


def _files() -> list[str]:
    out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"],
                         cwd=ROOT, capture_output=True, text=True, check=True).stdout
    names = [n for n in out.splitlines() if n != THIS and
             (n.endswith(TEXT) or Path(n).name in ("Makefile", "Dockerfile"))]
    return [n for n in names if (ROOT / n).is_file()]


def _hits() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {what: [] for what in RULES}
    for name in _files():
        text = (ROOT / name).read_text(encoding="utf-8", errors="replace")
        for what, (pattern, _) in RULES.items():
            for m in pattern.finditer(text):
                line = text.count("\n", 0, m.start()) + 1
                found[what].append(f"{name}:{line}")
    return found


def test_every_gguf_load_goes_through_the_one_loader() -> None:
    found = _hits()
    stray = {what: [h for h in hits if h.split(":")[0] not in RULES[what][1]]
             for what, hits in found.items()}
    assert not any(stray.values()), (
        f"load GGUF files with flowkit.runtime.gguf_load.load_llama (or load_gguf) and serve them "
        f"with `flowkit serve-model`; found elsewhere: {stray}")
    # the patterns find what they look for: the one loader and the hook are seen
    assert found["a Llama construction"]
    assert found["a direct llama.cpp model load"]
    assert found["llama-cpp-python's server loader"]


def test_the_patterns_catch_the_ways_a_model_is_loaded() -> None:
    construct, _ = RULES["a Llama construction"]
    server, _ = RULES["a llama_cpp.server command"]
    assert construct.search("llm = Llama(model_path=p)")
    assert construct.search("llama_cpp.Llama.from_pretrained(repo)")
    assert not construct.search("a `Llama` is never used by two threads")
    assert server.search('cmd = [sys.executable, "-m", "llama_cpp.server", "--model", m]')
    assert server.search("python -m llama_cpp.server --model M.gguf")
    assert server.search('entrypoint: ["python3", "-m", "llama_cpp.server"]')
    assert not server.search("import llama_cpp.server.app as server_app")
