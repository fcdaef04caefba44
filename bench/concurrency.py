"""`flowkit eval --concurrency N` against `flowkit serve-model --parallel N`, side by side in one
run (not a test): the same evaluation serially, then with N runs in flight, then serially again,
all with the completion cache off. Prints the wall times, the ratio concurrent / serial, and the
answers that differ: concurrent vs the first serial run, and the second serial run vs the first
(what differs between two serial runs is the server's own noise, not concurrency's).

Where `flowkit serve-model` has no `--parallel` option yet, the server runs with one slot and a
note says so (the client's concurrency is then measured against a serial server). The machine's
load (1-minute load average before and after, and the cores) is printed beside the figures.

Usage: nice -n 5 python bench/concurrency.py [--limit 8] [--concurrency 4]
       [--templates naive_rag,rewrite_retrieve_read] [--model smollm2-135m]
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from flowkit.eval.datasets import from_path
from flowkit.eval.runner import EvalPlan, FlowEntry, make_plan, run_evaluation
from flowkit.eval.strategy import EvalRun, InFlight
from flowkit.ingest import ensure_sample
from flowkit.runtime.llm import LLMSettings
from flowkit.runtime.models import model_file
from flowkit.runtime.resources import Settings
from flowkit.templates import load_template
from flowkit.testing.servers import llama_server
from service.workspace import Workspace
from storage.evals import EvalRepo

ROOT = Path(__file__).resolve().parent.parent
RUN = time.strftime("%H%M%S")


def has_parallel_option() -> bool:
    """Whether this checkout's `flowkit serve-model` takes --parallel."""
    out = subprocess.run([sys.executable, "-m", "service.cli", "serve-model", "--help"],
                         capture_output=True, text=True, cwd=ROOT, check=False)
    return "--parallel" in out.stdout


def evaluate(ws: Workspace, plan: EvalPlan, concurrency: int) -> tuple[float, dict[str, str]]:
    """Wall seconds and {run suffix: answer} of one evaluation."""
    repo = EvalRepo(ws.store)
    t0 = time.perf_counter()
    out = run_evaluation(ws, repo, plan, EvalRun(strategy=InFlight(concurrency), notice=print))
    wall = time.perf_counter() - t0
    runs = repo.runs(plan.eval_id)
    bad = [r.id for r in runs if r.record.status != "ok"]
    print(f"  {plan.eval_id}: concurrency {out.execution.concurrency} (server reports "
          f"{out.execution.server_parallel or 'nothing'}), ran {out.ran}, {wall:.1f} s"
          + (f", not ok: {', '.join(bad)}" if bad else ""), flush=True)
    return wall, {r.id[len(plan.eval_id) + 1:]: r.record.answer for r in runs}


def differing(a: dict[str, str], b: dict[str, str]) -> list[str]:
    return sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=int, default=8, help="sample questions")
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--templates", default="naive_rag,rewrite_retrieve_read")
    ap.add_argument("--model", default="smollm2-135m")
    args = ap.parse_args()
    n = args.concurrency
    parallel = has_parallel_option()
    if not parallel:
        print(f"note: `flowkit serve-model` has no --parallel option in this checkout: the server "
              f"serves one request at a time; --concurrency {n} is measured against it")
    load_before = os.getloadavg()[0]
    tmp = Path(tempfile.mkdtemp(prefix="flowkit-bench-concurrency-"))
    extra = ("--parallel", str(n)) if parallel else ()
    names = [t.strip() for t in args.templates.split(",") if t.strip()]
    ds = from_path(ROOT / "flowkit" / "sample_kb" / "questions.jsonl")
    with llama_server(model_file(args.model), n_ctx=4096, log_dir=tmp, extra_args=extra) as url:
        settings = Settings(llm=LLMSettings(backend="openai", base_url=url, model_name="default",
                                            n_ctx=4096), completion_cache=False)
        ws = Workspace(tmp / "home", settings)
        ensure_sample(ws.resources)
        EvalRepo(ws.store).save_dataset(ds.name, ds.source, ds.questions)

        def plan(tag: str) -> EvalPlan:
            flows = [FlowEntry(ref=name, spec=load_template(name)) for name in names]
            return make_plan(flows, ds.name, ds.questions, "sample", limit=args.limit,
                             eval_id=f"{tag}{RUN}")
        print(f"{len(names)} templates x {args.limit} sample questions on {args.model}, "
              f"server parallel {n if parallel else 1}, cache off", flush=True)
        serial_s, serial = evaluate(ws, plan("serial"), 1)
        conc_s, conc = evaluate(ws, plan("conc"), n)
        print(f"  so far: ratio concurrent / serial {conc_s / serial_s:.2f}, answers differing "
              f"{len(differing(serial, conc))} of {len(serial)}", flush=True)
        again_s, again = evaluate(ws, plan("again"), 1)
        ws.close()
    load_after = os.getloadavg()[0]
    print(f"\nwall: serial {serial_s:.1f} s, concurrency {n} {conc_s:.1f} s, serial again "
          f"{again_s:.1f} s")
    print(f"ratio concurrent / serial: {conc_s / serial_s:.2f} "
          f"(serial again / serial: {again_s / serial_s:.2f})")
    d_conc, d_again = differing(serial, conc), differing(serial, again)
    print(f"answers differing from the first serial run: concurrent {len(d_conc)} of "
          f"{len(serial)}, second serial {len(d_again)} of {len(serial)}")
    for k in d_conc:
        print(f"  {k}: serial {serial.get(k, '')[:70]!r} | concurrent {conc.get(k, '')[:70]!r}")
    print(f"load average (1 min): {load_before:.2f} before, {load_after:.2f} after; "
          f"{os.cpu_count()} cores")
    return 0


if __name__ == "__main__":
    sys.exit(main())
