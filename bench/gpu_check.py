"""The GPU check (issue 50 item 4): build llama.cpp with CUDA, run the default model through
llama.cpp's `llama-server` (one request at a time, then `--concurrency` at a time against as many
slots) and through flowkit's own model (the studio's supervised worker, and `LlamaCppLLM` in this
process), all with every layer on the GPU, and print the table README "On a GPU" needs.

    python bench/gpu_check.py --sdist llama_cpp_python-0.3.36.tar.gz --model gemma-3-270m-q4_k_m.gguf
    python bench/gpu_check.py --llama-server BIN --wheel-dir DIR     # prebuilt: no build
    nice python bench/gpu_check.py --cpu                             # dry run on a CPU machine

What is built where (without `--cpu`, on the GPU machine, into `--work DIR`):
- one cmake build of the vendored llama.cpp in llama-cpp-python's source archive (`--sdist`: the
  full sdist of the bindings' version; `trim_llama_sdist.sh` drops tools/server, so its archive
  cannot build the server), CUDA on for the GPU's architecture (from nvidia-smi), shared
  libraries, the flags `make llama-server` uses otherwise (flowkit.testing.llama_server_build).
  Targets `llama` and `llama-server`: the CUDA kernels compile once, for both. The bindings are the
  archive's own `llama_cpp` package with `LLAMA_CPP_LIB_PATH` at that build's libllama.so, which
  is what `pip wheel` would pack (a wheel build would compile the kernels a second time: about
  5 minutes on 16 cores, so both would not fit in 10 minutes).
- `--wheel-dir DIR` installs every wheel there (`pip install --no-index --no-deps --target`): a
  llama_cpp_python wheel built with CUDA (../shared/gpu/README.md), diskcache where it is missing.
  With it no bindings are built; `--llama-server BIN` skips the server's build.
- `--cpu`: nothing is built: the installed bindings and `make llama-server`'s cached CPU binary.

The model is `--model FILE` (default: the packaged default model, `models.DEFAULT_MODEL`); the
prompts are `flowkit.testing.answer_prompts` (the `generation.answer` prompt on the sample
knowledge base, cycled beyond 36), rendered once by flowkit (`LlamaCppLLM.render`: Gemma 3 270M is a
base model, so `base_prompt` with its stop strings) and sent as that same text to llama-server's
/v1/completions, so that every engine decodes the same tokens greedily. llama-server runs with
`--parallel C -c 4096*C --no-kv-unified` (4096 a slot, as flowkit's context here) and its prompt
cache off (flowkit's GPU default: prefix reuse off), `-ngl 99`. Each engine gets one untimed call
first. Where the machine has no flowkit dependencies (LangGraph, Chroma...) the model layer alone
is imported (`--model-layer-only`, automatic when `import flowkit` fails: flowkit/__init__.py is
skipped, flowkit/runtime is stdlib plus llama_cpp); the prompts then come from `--prompts-file`
(write it where flowkit is installed: `--write-prompts FILE`).

Printed: one row per engine: requests at a time, wall seconds, completion tokens a second (all
answers counted by one tokenizer, the model's), the throughput ratio over the serial llama-server
pass, the layers on the GPU (llama-server: its log's "offloaded N/M layers"; flowkit: the device
plan the loader applied) and the greedy answers that differ from the serial pass; above it, what
was built or installed where, in how many seconds. `--budget-s` (default 570) bounds the whole run, builds included: past it, what was
measured is printed and the exit code is 124. Without a GPU (no nvidia-smi, or bindings that
cannot offload) it stops with that reason unless `--cpu` is given.

CPU dry run, 2026-11-29 (this 2-core machine shared with other sessions, load average 2.3 to
2.8; `nice -n 10 python bench/gpu_check.py --cpu --prompts 8 --concurrency 2 --model-layer-only
--prompts-file P.json`; 49 s in all; CPU figures that check the script, not GPU ones):

    device: CPU (--cpu dry run)
    built: nothing (--cpu): llama-server ~/.cache/flowkit/llama-server-0.3.36/bin/llama-server, ...
    llama_cpp from .venv/.../site-packages/llama_cpp; supports GPU offload: False
    model gemma-3-270m-q4_k_m.gguf; 8 prompts, max_tokens 64, 1 threads an engine, concurrency 2
    flowkit in process: CPU (a CPU-only llama.cpp build) · batch 64 · prefix reuse on; loaded in 0.5 s
    llama-server (...): CPU_Mapped model buffer size =   235.16 MiB
    flowkit worker loaded in 1.0 s; its gpu_offload: False
    worker and in-process answers the same: 8 of 8
    | engine | at a time | wall s | completion tokens/s | ratio over serial | layers on GPU | answers that differ from serial |
    |---|---|---|---|---|---|---|
    | llama-server serial | 1 | 12.6 | 2.7 | 1.00 | 0 (no GPU) | 0 of 8 |
    | llama-server --parallel 2 | 2 | 12.8 | 2.7 | 0.98 | 0 (no GPU) | 0 of 8 |
    | flowkit worker (studio) | 1 | 8.0 | 4.3 | 1.58 | 0/19 (plan) | 0 of 8 |
    | flowkit in process | 1 | 7.8 | 4.4 | 1.61 | 0/19 (plan) | 0 of 8 |

On one thread two slots cannot gain; flowkit is faster here because on a CPU its device default
keeps prefix reuse on (the answer prompts share their instructions and examples) while
llama-server's prompt cache is off; on a GPU both evaluate every prompt whole. The same with 4
prompts: 28 s in all, ratios 0.99 / 1.63 / 1.74, 0 of 4 differ. `--budget-s 9`: stopped in the
serial pass, "STOPPED: the budget of 9 s passed", exit 124, no server or worker left running.
With every site-packages module blocked in this process but llama_cpp's own needs (numpy,
jinja2, typing-extensions, diskcache) and the model package, `import flowkit` fails on LangGraph
and the model layer alone runs the same four passes (2 prompts, 17 s, 0 of 2 differ).
On the GPU machine the build should take most of the 10 minutes (the CUDA wheel alone took about
5 minutes on 16 cores there); the four passes of 36 prompts a few seconds each.

Unverified: everything CUDA (the cmake build with CUDA, `LLAMA_CPP_LIB_PATH` at its libraries,
nvidia-smi's compute_cap query, llama-server's offload line at -lv 4 with -ngl 99, the figures on a
GPU, the time the build takes), and `--wheel-dir` (no wheel was at hand here).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import time
import types
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
N_CTX = 4096                 # a request's context on every engine
BUDGET_S = 570               # under the 10 minutes a device call may take


class OutOfTime(BaseException):
    """The run's budget passed (SIGALRM); not an Exception, so no client code swallows it."""


def _alarm(_sig: int, _frame: Any) -> None:
    raise OutOfTime()


def say(line: str) -> None:
    print(line, flush=True)


# ---- the GPU and the builds ----------------------------------------------------------------

def gpu_info() -> tuple[str, str] | None:
    """(name, CUDA architecture like '90') of the first GPU nvidia-smi lists, or None."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None
    try:
        out = subprocess.run([exe, "--query-gpu=name,compute_cap", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = [ln for ln in out.stdout.splitlines() if ln.strip()]
    if out.returncode != 0 or not lines:
        return None
    name, _, cap = lines[0].partition(",")
    arch = cap.strip().replace(".", "")
    return name.strip(), arch if arch.isdigit() else "native"


def run_logged(cmd: list[str], log: Path, env: dict[str, str] | None = None) -> None:
    """`cmd` with its output appended to `log`; its whole process group is killed if this run
    stops (budget, Ctrl-C), so no compiler outlives it."""
    say("+ " + " ".join(cmd))
    with open(log, "ab") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env,
                                start_new_session=True)
        try:
            code = proc.wait()
        except BaseException:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            raise
    if code != 0:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-25:])
        raise SystemExit(f"{cmd[0]} failed with code {code} (log: {log}):\n{tail}")


def unpack_sdist(sdist: Path, dest: Path) -> Path:
    """The source archive unpacked under `dest`; returns the directory holding vendor/llama.cpp
    (a pip sdist has one top directory, trim_llama_sdist.sh's archive none)."""
    if not dest.is_dir():
        with tarfile.open(sdist) as tar:
            tar.extractall(dest, filter="data")
    for top in [dest, *sorted(p for p in dest.iterdir() if p.is_dir())]:
        if (top / "vendor" / "llama.cpp" / "CMakeLists.txt").is_file():
            return top
    raise SystemExit(f"{sdist} holds no vendor/llama.cpp: give llama-cpp-python's source archive")


def build_cuda(src: Path, work: Path, arch: str, targets: list[str], jobs: int,
               extra: list[str]) -> Path:
    """One CUDA build of src/vendor/llama.cpp (shared libraries) of `targets`; its bin dir."""
    from flowkit.testing.llama_server_build import CMAKE_FLAGS
    llama = src / "vendor" / "llama.cpp"
    if "llama-server" in targets and not (llama / "tools" / "server").is_dir():
        raise SystemExit(f"{llama} has no tools/server (trim_llama_sdist.sh removes it): give the "
                         "whole sdist, or a built server with --llama-server BIN")
    out = work / "build"
    log = work / "build.log"
    flags = [*CMAKE_FLAGS, "-DBUILD_SHARED_LIBS=ON", "-DGGML_CUDA=ON",
             f"-DCMAKE_CUDA_ARCHITECTURES={arch}", *extra]
    run_logged(["cmake", "-S", str(llama), "-B", str(out), *flags], log)
    run_logged(["cmake", "--build", str(out), "--target", *targets, "-j", str(jobs)], log)
    return out / "bin"


def install_wheels(wheel_dir: Path, target: Path) -> list[str]:
    wheels = sorted(str(p) for p in wheel_dir.glob("*.whl"))
    if not wheels:
        raise SystemExit(f"--wheel-dir {wheel_dir} holds no .whl")
    run_logged([sys.executable, "-m", "pip", "install", "--quiet", "--no-index", "--no-deps",
                "--target", str(target), *wheels], target.parent / "pip.log")
    return [Path(w).name for w in wheels]


def use_path(path: Path) -> None:
    """Put `path` first for imports here and in every child (the model worker)."""
    sys.path.insert(0, str(path))
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [str(path), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))])


def model_layer_only(work: Path) -> None:
    """Import flowkit without flowkit/__init__.py (which pulls LangGraph, Chroma...): a package
    `flowkit` whose path is the repository's, here and (on PYTHONPATH) in the model worker, which
    is started from `work` so that `python -m` does not find the real package first."""
    shim = work / "shim" / "flowkit"
    shim.mkdir(parents=True, exist_ok=True)
    (shim / "__init__.py").write_text(f"__path__ = [{str(REPO / 'flowkit')!r}]\n")
    use_path(shim.parent)
    os.chdir(work)
    for name in ("flowkit", "flowkit.testing"):       # flowkit/testing/__init__.py: the fakes
        module = types.ModuleType(name)
        module.__path__ = [str(REPO / name.replace(".", "/"))]
        sys.modules[name] = module


# ---- the engines ---------------------------------------------------------------------------

@dataclass
class Row:
    engine: str
    at_once: int
    wall_s: float
    answers: list[str]
    layers: str
    tokens: int = 0
    note: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def server_complete(url: str, text: str, stops: list[str], max_tokens: int,
                    seed: int) -> str:
    """One greedy completion of the rendered `text` by llama-server (its prompt cache off)."""
    body = {"prompt": text, "max_tokens": max_tokens, "temperature": 0.0, "seed": seed,
            "stop": stops, "cache_prompt": False, "repeat_penalty": 1.0}
    req = urllib.request.Request(url + "/completions", json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=300) as resp:
        data = json.loads(resp.read())
    return str(data["choices"][0]["text"]).strip()


def timed(fn: Any, items: list[Any], at_once: int) -> tuple[float, list[str]]:
    """(wall seconds, fn over `items` in order) with `at_once` calls in flight."""
    t0 = time.perf_counter()
    if at_once == 1:
        out = [fn(x) for x in items]
        return time.perf_counter() - t0, out
    pool = ThreadPoolExecutor(at_once)
    try:
        out = list(pool.map(fn, items))
    finally:          # past the budget: drop what has not started instead of running it
        pool.shutdown(wait=False, cancel_futures=True)
    return time.perf_counter() - t0, out


def offloaded_from_log(log: Path) -> tuple[str, list[str]]:
    """llama-server's "offloaded N/M layers" (logged at -lv 4) and its model buffer lines."""
    text = log.read_text(errors="replace")
    found = re.findall(r"offloaded (\d+)/(\d+) layers", text)
    buffers = [ln.split("load_tensors:", 1)[1].strip() for ln in text.splitlines()
               if "load_tensors:" in ln and "buffer size" in ln]
    if found:
        return f"{found[-1][0]}/{found[-1][1]}", buffers
    return ("0 (no GPU)" if "no usable GPU found" in text else "not in log"), buffers


def load_prompts(n: int, prompts_file: str | None) -> list[str]:
    if prompts_file:
        base = json.loads(Path(prompts_file).read_text(encoding="utf-8"))
    else:
        try:
            from flowkit.testing.answer_prompts import answer_prompts
        except ImportError as err:
            raise SystemExit(f"the answer prompts need flowkit's dependencies ({err}): write them "
                             "where flowkit is installed (--write-prompts FILE) and pass "
                             "--prompts-file FILE") from err
        base = answer_prompts(36)
    return (base * math.ceil(n / len(base)))[:n]


def table(rows: list[Row], n: int) -> list[str]:
    serial = rows[0]
    out = ["| engine | at a time | wall s | completion tokens/s | ratio over serial | layers "
           "on GPU | answers that differ from serial |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        speed = r.tokens / r.wall_s if r.wall_s else 0.0
        base = serial.tokens / serial.wall_s if serial.wall_s else 0.0
        differ = sum(a != b for a, b in zip(serial.answers, r.answers))
        out.append(f"| {r.engine} | {r.at_once} | {r.wall_s:.1f} | {speed:.1f} | "
                   f"{speed / base if base else 0:.2f} | {r.layers} | {differ} of {n} |")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--cpu", action="store_true", help="dry run without a GPU: no build, the "
                    "installed bindings and make llama-server's cached CPU binary")
    ap.add_argument("--prompts", type=int, default=None, help="prompts (default 36; --cpu 4)")
    ap.add_argument("--concurrency", type=int, default=None, help="requests at a time against "
                    "llama-server, and its --parallel slots (default 8; --cpu 2)")
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--threads", type=int, default=0, help="CPU threads an engine (0: flowkit's "
                    "default, half the cores)")
    ap.add_argument("--model", help="the GGUF (default: the packaged default model)")
    ap.add_argument("--sdist", help="llama-cpp-python's source archive to build from (default: "
                    "pip download of the installed bindings' version)")
    ap.add_argument("--wheel-dir", help="install these wheels instead of building the bindings")
    ap.add_argument("--llama-server", metavar="BIN", help="a built llama-server (no build)")
    ap.add_argument("--cmake-arg", action="append", default=[], help="another cmake flag")
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--work", default="/tmp/flowkit-gpu-check", help="builds, logs, installs")
    ap.add_argument("--budget-s", type=int, default=BUDGET_S, help="the whole run's limit")
    ap.add_argument("--model-layer-only", action="store_true", help="import flowkit's model "
                    "layer without flowkit/__init__.py (automatic when `import flowkit` fails)")
    ap.add_argument("--prompts-file", help="the prompts as a JSON list (see --write-prompts)")
    ap.add_argument("--write-prompts", metavar="FILE", help="write the 36 answer prompts as JSON "
                    "and exit")
    args = ap.parse_args()
    for name in ("model", "sdist", "wheel_dir", "llama_server", "prompts_file", "write_prompts"):
        if getattr(args, name):            # before --model-layer-only moves to --work
            setattr(args, name, str(Path(getattr(args, name)).resolve()))
    started = time.monotonic()
    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(args.budget_s)
    work = Path(args.work).resolve()
    work.mkdir(parents=True, exist_ok=True)
    sys.path.insert(0, str(REPO))
    if args.write_prompts:
        Path(args.write_prompts).write_text(json.dumps(load_prompts(36, None), indent=1) + "\n")
        say(f"wrote 36 prompts to {args.write_prompts}")
        return 0
    n = args.prompts or (4 if args.cpu else 36)
    at_once = args.concurrency or (2 if args.cpu else 8)
    if not args.model_layer_only:
        try:
            import flowkit  # noqa: F401
        except ImportError as err:
            say(f"import flowkit failed ({err}): the model layer alone")
            args.model_layer_only = True
    if args.model_layer_only:
        model_layer_only(work)
    lines = [f"load average at start: {os.getloadavg()} on {os.cpu_count()} cores"]
    rows: list[Row] = []
    try:
        return measure(args, work, n, at_once, started, lines, rows)
    except OutOfTime:
        lines.append(f"STOPPED: the budget of {args.budget_s} s passed; measured so far:")
        return 124
    finally:
        signal.alarm(0)
        for line in lines:
            say(line)
        if rows:
            for line in table(rows, n):
                say(line)


def measure(args: argparse.Namespace, work: Path, n: int, at_once: int, started: float,
            lines: list[str], rows: list[Row]) -> int:
    gpu = None if args.cpu else gpu_info()
    if not args.cpu and gpu is None:
        raise SystemExit("no GPU: nvidia-smi is missing or lists none (pass --cpu for a dry run "
                         "on this machine's CPU)")
    lines.append(f"device: {'CPU (--cpu dry run)' if gpu is None else f'{gpu[0]} (sm_{gpu[1]})'}")
    server = Path(args.llama_server).resolve() if args.llama_server else None
    if args.wheel_dir:
        t0 = time.monotonic()
        names = install_wheels(Path(args.wheel_dir).resolve(), work / "py")
        use_path(work / "py")
        lines.append(f"installed {', '.join(names)} into {work / 'py'} in "
                     f"{time.monotonic() - t0:.0f} s")
    if args.cpu:
        if server is None:
            from flowkit.testing.llama_server_build import binary_path, missing_reason
            server = binary_path()
            reason = missing_reason(server)
            if reason:
                raise SystemExit(reason)
        lines.append(f"built: nothing (--cpu): llama-server {server}, bindings installed")
    else:
        targets = ([] if args.wheel_dir else ["llama"]) + ([] if server else ["llama-server"])
        if targets:
            if args.sdist:
                sdist = Path(args.sdist).resolve()
            else:
                from flowkit.testing.llama_server_build import bindings_version
                try:
                    version = bindings_version()
                except Exception as err:
                    raise SystemExit("no llama-cpp-python here to take the version from: pass "
                                     "--sdist (its source archive)") from err
                run_logged([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                            "--no-binary", ":all:", f"llama-cpp-python=={version}", "-d",
                            str(work)], work / "pip.log")
                sdist = sorted(work.glob("llama_cpp_python-*.tar.gz"))[-1]
            assert gpu is not None
            t0 = time.monotonic()
            src = unpack_sdist(sdist, work / "src")
            bin_dir = build_cuda(src, work, gpu[1], targets, args.jobs, args.cmake_arg)
            lines.append(f"built here with CUDA (sm_{gpu[1]}, -j {args.jobs}) from {sdist.name}: "
                         f"{' and '.join(targets)} in {time.monotonic() - t0:.0f} s ({bin_dir})")
            if "llama-server" in targets:
                server = bin_dir / "llama-server"
            if "llama" in targets:
                libs = sorted((work / "build").rglob("libllama.so"))
                if not libs:
                    raise SystemExit(f"the build made no libllama.so (log: {work / 'build.log'})")
                os.environ["LLAMA_CPP_LIB_PATH"] = str(libs[0].parent)
                pkg = work / "bindings"
                shutil.rmtree(pkg, ignore_errors=True)
                shutil.copytree(src / "llama_cpp", pkg / "llama_cpp")
                use_path(pkg)
    try:
        import llama_cpp
    except ImportError as err:
        raise SystemExit(f"the llama_cpp bindings do not import ({err}); numpy, jinja2, "
                         "typing-extensions and diskcache must be there (--wheel-dir DIR with "
                         "their wheels)") from err
    offload = bool(llama_cpp.llama_supports_gpu_offload())
    lines.append(f"llama_cpp from {Path(llama_cpp.__file__).parent}; supports GPU offload: "
                 f"{offload}")
    if not args.cpu and not offload:
        raise SystemExit("these llama_cpp bindings cannot offload to a GPU (a CPU build): build "
                         "them with CUDA, or pass --cpu")
    assert server is not None
    from flowkit.runtime.llama_cpp_backend import LlamaCppLLM, default_model_path
    from flowkit.runtime.llm_contract import LLMSettings, default_threads
    from flowkit.runtime.supervisor import WorkerLLM
    from flowkit.testing.servers import llama_cpp_server
    model = Path(args.model).resolve() if args.model else default_model_path()
    threads = args.threads or default_threads()
    prompts = load_prompts(n, args.prompts_file)
    lines.append(f"model {model.name}; {n} prompts, max_tokens {args.max_tokens}, "
                 f"{threads} threads an engine, concurrency {at_once}")
    settings = LLMSettings(model_path=str(model), n_ctx=N_CTX, n_threads=threads,
                           n_gpu_layers=0 if args.cpu else None, in_process=True)
    local = LlamaCppLLM(settings)
    t0 = time.monotonic()
    local.start()
    lines.append(f"flowkit in process: {local.offload.summary()}; loaded in "
                 f"{time.monotonic() - t0:.1f} s")
    rendered = [local.render(p) for p in prompts]
    flowkit_layers = f"{local.offload.layers_offloaded}/{local.offload.layers_total} (plan)"

    def count(texts: list[str]) -> int:
        return sum(local.count_tokens(t) - 1 for t in texts if t)    # less the BOS

    ngl = "0" if args.cpu else "99"
    extra = ("-ngl", ngl, "-lv", "4", "--no-kv-unified", "--no-cache-prompt", "--cache-ram", "0")
    log_dir = work / "logs"
    log_dir.mkdir(exist_ok=True)
    seed = settings.seed
    with llama_cpp_server(model, n_ctx=N_CTX * at_once, parallel=at_once, log_dir=log_dir,
                          binary=server, threads=threads, extra_args=extra) as url:
        layers, buffers = offloaded_from_log(log_dir / "llama-cpp-server.log")
        lines.append(f"llama-server ({server}): {'; '.join(buffers) or 'no buffer lines'}")

        def ask(item: tuple[str, list[str]]) -> str:
            return server_complete(url, item[0], item[1], args.max_tokens, seed)
        server_complete(url, rendered[0][0], rendered[0][1], 8, seed)          # untimed
        for k in (1, at_once):
            wall, texts = timed(ask, rendered, k)
            name = "llama-server serial" if k == 1 else f"llama-server --parallel {at_once}"
            rows.append(Row(name, k, wall, texts, layers, count(texts)))
            say(f"{name}: {wall:.1f} s")
    worker = WorkerLLM(LLMSettings(model_path=str(model), n_ctx=N_CTX, n_threads=threads,
                                   n_gpu_layers=0 if args.cpu else None), log_dir=log_dir)
    try:
        t0 = time.monotonic()
        worker.start()
        lines.append(f"flowkit worker loaded in {time.monotonic() - t0:.1f} s; its gpu_offload: "
                     f"{worker.info.get('gpu_offload')}")
        worker.complete(prompts[0], max_tokens=8)                               # untimed
        wall, texts = timed(lambda p: worker.complete(p, max_tokens=args.max_tokens).text,
                            prompts, 1)
        rows.append(Row("flowkit worker (studio)", 1, wall, texts,
                        f"{worker.offload.layers_offloaded}/{worker.offload.layers_total} (plan)",
                        count(texts)))
        say(f"flowkit worker: {wall:.1f} s")
    finally:
        worker.close()
    local.complete(prompts[0], max_tokens=8)                                    # untimed
    wall, texts = timed(lambda p: local.complete(p, max_tokens=args.max_tokens).text, prompts, 1)
    rows.append(Row("flowkit in process", 1, wall, texts, flowkit_layers, count(texts)))
    say(f"flowkit in process: {wall:.1f} s")
    same = sum(a == b for a, b in zip(rows[2].answers, rows[3].answers))
    lines.append(f"worker and in-process answers the same: {same} of {n}")
    lines.append(f"load average at end: {os.getloadavg()}; whole run {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
