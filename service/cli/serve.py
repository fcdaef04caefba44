"""`flowkit serve-model` (an OpenAI-compatible server on a GGUF, loaded with the AMX decision) and
`flowkit doctor` (what the AMX decision is on this machine, and where it is cached)."""
from __future__ import annotations

import argparse
import json
import sys

from flowkit.runtime import amx
from flowkit.runtime.llm_contract import LLMSettings

from . import common

#: The context sizes serve-model takes (llama.cpp needs room for a prompt; 1M is beyond any
#: packaged model).
MIN_N_CTX, MAX_N_CTX = 64, 1_048_576
#: The most slots `--parallel` takes (as flowkit.runtime.batch_engine.MAX_PARALLEL).
MAX_PARALLEL = 64


def cmd_serve_model(args: argparse.Namespace) -> int:
    """`flowkit serve-model [MODEL] [--host H] [--port P] ...`: serve until Ctrl-C."""
    from flowkit.runtime.serve_model import ServeSettings, serve

    settings = ServeSettings(model_path=args.model, host=args.host, port=args.port,
                             n_ctx=args.n_ctx, seed=args.seed, n_threads=args.n_threads,
                             n_gpu_layers=args.n_gpu_layers, extra_bufts=args.extra_bufts,
                             model_alias=args.model_alias, api_key=args.api_key,
                             parallel=args.parallel, max_queue=args.max_queue)

    def ready(decision: amx.Decision) -> None:
        state = "on" if decision.use else "off"
        slots = f", {settings.parallel} parallel slots" if settings.parallel > 1 else ""
        common.err.print(f"serving {settings.model_path or 'the default model'} on "
                         f"http://{settings.host}:{settings.port}/v1 (extra buffer types {state}: "
                         f"{decision.reason}{slots})")

    serve(settings, on_ready=ready)
    return 0


def doctor_report(probe: bool = False, data_dir: str | None = None) -> dict[str, object]:
    """The AMX facts of this machine: CPU, whether it advertises AMX, the probe's cached result and
    its file, the `llm.extra_bufts` setting, and the decision (probing only when `probe`)."""
    from pathlib import Path

    from flowkit.errors import ResourceError
    from flowkit.runtime.llm import resolve_model_path
    from flowkit.runtime.resources import default_data_dir, load_settings

    settings = load_settings(Path(data_dir) if data_dir else default_data_dir()).llm
    flags = amx.cpu_flags()
    advertised = "amx_tile" in flags
    report: dict[str, object] = {
        "cpu_advertises_amx": advertised, "simulated": amx.simulating_fault(),
        "probe_cache": str(amx.cache_path()), "extra_bufts_setting": settings.extra_bufts}
    decision: amx.Decision | None = None
    if probe or not advertised or amx.recorded() is not None:
        try:
            decision = amx.decide(settings.extra_bufts, str(resolve_model_path(settings)))
        except (ValueError, ResourceError) as err:
            report["refused"] = str(err)
    cached = amx.recorded()
    report["probe_result"] = None if cached is None else {"use": cached.use, "reason": cached.reason}
    report["extra_buffer_types"] = None if decision is None else decision.use
    report["reason"] = ("not probed yet (run `flowkit doctor --probe`, or load a model)"
                        if decision is None and "refused" not in report
                        else (decision.reason if decision else ""))
    report.update(device_report(settings))
    return report


def device_report(settings: LLMSettings) -> dict[str, object]:
    """The device facts: the GPUs llama.cpp sees, whether the build can offload, and what the
    settings' model loads with here (layers offloaded, effective batch and prefix reuse)."""
    from flowkit.errors import ResourceError
    from flowkit.runtime import device
    from flowkit.runtime.gguf import inspect_gguf
    from flowkit.runtime.llm import resolve_model_path

    dev = device.detect()
    report: dict[str, object] = {
        "device": dev.name, "gpu_offload_build": dev.build_offload,
        "gpus": [f"{g.description or g.name} ({g.free_bytes / 2**30:.1f} of "
                 f"{g.total_bytes / 2**30:.1f} GiB free)" for g in dev.gpus]}
    if dev.error:
        report["device_probe_error"] = dev.error
    if settings.backend != "llama_cpp":
        return report
    try:
        info = inspect_gguf(resolve_model_path(settings))
        plan = device.plan(settings, info.block_count, dev)
    except ResourceError as err:
        report["device_refused"] = str(err)
        return report
    need = device.estimate(info, settings.n_ctx)
    ram = device.available_ram_bytes()
    report.update({"gpu_layers_offloaded": f"{plan.layers_offloaded} of {plan.layers_total}",
                   "n_batch": plan.n_batch, "prefix_reuse": plan.prefix_reuse,
                   "decided_by_device": list(plan.from_device),
                   "memory_needed": f"{need.total / 1e9:.2f} GB (model {need.model / 1e9:.2f} + "
                                    f"KV cache {need.kv_cache / 1e9:.2f} at n_ctx "
                                    f"{settings.n_ctx} + {need.working / 1e9:.2f} working)",
                   "ram_available": "unknown" if ram is None else f"{ram / 1e9:.2f} GB"})
    return report


def cmd_doctor(args: argparse.Namespace) -> int:
    """`flowkit doctor [--probe] [--json]`."""
    report = doctor_report(args.probe, args.data_dir)
    if args.json:
        sys.stdout.write(json.dumps(report, indent=1) + "\n")
        return 0
    for key, value in report.items():
        common.out.print(f"{key}: {value}", soft_wrap=True)
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add the serve-model and doctor subcommands."""
    s = sub.add_parser("serve-model", help="serve a GGUF as an OpenAI-compatible API (/v1), "
                       "loaded with the AMX decision")
    s.add_argument("model", nargs="?", default="", help="a packaged model id or a GGUF path "
                   "(default: the default model)")
    s.add_argument("--host", default="127.0.0.1")
    s.add_argument("--port", type=common.int_between(0, 65535), default=8000)
    s.add_argument("--n-ctx", type=common.int_between(MIN_N_CTX, MAX_N_CTX), default=8192,
                   help=f"the context size in tokens ({MIN_N_CTX} to {MAX_N_CTX})")
    s.add_argument("--seed", type=common.int_between(0, 2**32 - 1), default=42)
    s.add_argument("--n-threads", type=common.int_between(0, 1024), default=0,
                   help="0: half the cores")
    s.add_argument("--n-gpu-layers", type=common.int_between(-1, 100_000), default=None,
                   help="-1: every layer on the GPU; 0: none (default: every layer where this "
                        "llama.cpp build and a GPU allow it, else none)")
    s.add_argument("--extra-bufts", choices=amx.EXTRA_BUFTS_CHOICES, default="auto",
                   help="llama.cpp extra buffer types (AMX): auto decides by probing this CPU")
    s.add_argument("--model-alias", default="", help="the model name /v1/models reports")
    s.add_argument("--api-key", default="", help="a bearer token every request must carry")
    s.add_argument("--parallel", type=common.int_between(1, MAX_PARALLEL), default=1,
                   help=f"chat completions decoded together in one batch (1 to {MAX_PARALLEL}; "
                   "1: one at a time). Each slot has --n-ctx tokens; requests with penalties, "
                   "tools or grammars are still served one at a time")
    s.add_argument("--max-queue", type=common.int_between(0, 100_000), default=64,
                   help="generation requests that may wait beyond --parallel; past that a new one "
                   "is answered 503 with Retry-After at once")
    s.set_defaults(fn=cmd_serve_model)

    s = sub.add_parser("doctor", help="the device (GPU layers offloaded, batch, prefix reuse) and "
                       "the AMX decision on this machine and where it is cached")
    s.add_argument("--probe", action="store_true", help="run the AMX probe if it has not run")
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_doctor)
