"""OpenTelemetry export's cost on a run, measured side by side in one run (not a test). Prints ratios.

bench/engine.py's naive flow (real default model in process, sample KB, the SQLite trace on in
every variant), three ways, interleaved round by round (who goes first rotates):
1. off:  no export (the baseline);
2. on:   live export to a collector in another process (an OTLP/HTTP receiver that answers 200;
         --phoenix URL sends to a running Phoenix instead) — goal <= 1.03x;
3. down: live export to a port nothing listens on — goal <= 1.05x, and no run fails.
Two figures per variant: the wall time until the run returns (what a user waits; noisy when other
work shares the CPUs, so the load average is printed), and this process's CPU time for the run plus
its export (the "on" variant waits for its spans to be sent; export threads included), which other
processes' load moves less (llama.cpp's threads spin while they wait, so it still moves). Both swing
by more than 3% between identical variants on a loaded machine, so the export's own costs are
measured apart too: the time spent inside the telemetry sink during a run (on the run's path), and
the CPU to build one run's spans and send them (off its path, median of 20), each as a share of the
run. Usage: python bench/telemetry.py [--rounds 5] [--phoenix URL]
"""
from __future__ import annotations

import argparse
import http.server
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from flowkit import compile_flow, run_flow
from flowkit.ingest import ensure_sample
from flowkit.run_request import RunHooks, RunRequest
from flowkit.runtime.llm import LlamaCppLLM, LLMSettings
from flowkit.runtime.resources import Resources, Settings
from flowkit.telemetry.export import LiveExport, build_spans, otlp_exporter
from flowkit.telemetry.record import RunRecord
from flowkit.telemetry.settings import TelemetrySettings, target_for
from flowkit.telemetry.sink import TelemetrySink
from flowkit.templates import load_template
from flowkit.trace import MultiSink, TraceSink
from storage.repo import Store

QUESTIONS = ["Who designed the Corren Lighthouse?", "When was the Corren Lighthouse first lit?",
             "What is the name of the main telescope at the Mount Aldra Observatory?"]


def serve_receiver(port: int) -> None:
    """A stand-in collector: answers every POST with 200 and an empty OTLP response; counts."""
    count = [0]

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            count[0] += 1
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_GET(self) -> None:
            body = str(count[0]).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()


class TimedSink:
    """A TelemetrySink whose calls are timed (the export's cost on the run's path)."""

    def __init__(self, inner: TelemetrySink, spent: list[float]) -> None:
        self.inner, self.spent = inner, spent

    def _timed(self, fn: object, arg: object) -> None:
        t0 = time.perf_counter()
        fn(arg)  # type: ignore[operator]
        self.spent[-1] += time.perf_counter() - t0

    def start(self, run: object) -> None:
        self._timed(self.inner.start, run)

    def step(self, event: object) -> None:
        self._timed(self.inner.step, event)

    def end(self, result: object) -> None:
        self._timed(self.inner.end, result)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--phoenix", default="", help="a running Phoenix's URL (default: a receiver)")
    ap.add_argument("--receiver", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.receiver:
        serve_receiver(args.receiver)
        return
    receiver = None
    url = args.phoenix
    if not url:
        port = free_port()
        receiver = subprocess.Popen([sys.executable, __file__, "--receiver", str(port)])
        url = f"http://127.0.0.1:{port}"
        time.sleep(1.0)
    data_dir = Path(tempfile.mkdtemp(prefix="flowkit-bench-otel-"))
    settings = LLMSettings(n_ctx=4096)
    res = Resources(data_dir, Settings(llm=settings))
    store = Store(res.database_url)
    flow = compile_flow(load_template("naive_rag"))
    res.set_llm(LlamaCppLLM(settings))
    ensure_sample(res)
    up = LiveExport(target_for(TelemetrySettings(), {}, url=url))
    down = LiveExport(target_for(TelemetrySettings(), {}, url=f"http://127.0.0.1:{free_port()}"))
    failed: list[str] = []
    on_path: list[float] = []

    def run(q: str, extra: LiveExport | None) -> tuple[float, float]:
        sinks: list[TraceSink] = [store.sink()]
        if extra is not None:
            on_path.append(0.0)
            sinks.append(TimedSink(TelemetrySink(extra), on_path))  # type: ignore[arg-type]
        c0, t0 = time.process_time(), time.perf_counter()
        result = run_flow(flow, res, RunRequest(q, kb="sample"), RunHooks(sink=MultiSink(*sinks)))
        took = time.perf_counter() - t0
        if extra is up:
            up.flush(30)                # its export's CPU counted with it
        if result.status != "ok":
            failed.append(f"{result.run_id}: {result.status} {result.error}")
        return took, time.process_time() - c0

    for q in QUESTIONS:                 # warm up: model, embedder, Chroma, BM25, both exporters
        run(q, None), run(q, up), run(q, down)
    up.flush(30)
    times: dict[str, list[float]] = {"off": [], "on": [], "down": []}
    cpu: dict[str, list[float]] = {"off": [], "on": [], "down": []}
    exporters = {"off": None, "on": up, "down": down}
    order = list(times)
    for r in range(args.rounds):
        for q in QUESTIONS:
            k = r % len(order)
            for name in order[k:] + order[:k]:
                wall, used = run(q, exporters[name])
                times[name].append(wall)
                cpu[name].append(used)
    flushed = up.flush(60)
    med = statistics.median
    # the export's own CPU, off the run's path: build one stored run's spans and send them
    last = store.list_runs(limit=1)[0]
    record = RunRecord.from_stored(last, store.steps(last.id))
    sender = otlp_exporter(up.target)
    off_path: list[float] = []
    for _ in range(20):
        c0 = time.thread_time()
        sender.export(build_spans([record]))
        off_path.append(time.thread_time() - c0)
    sender.shutdown()
    load = os.getloadavg()
    print(f"rounds: {args.rounds} x {len(QUESTIONS)} questions x 3 variants; collector {url}; "
          f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} CPUs")
    for name, ts in times.items():
        print(f"naive flow, export {name:<5} wall median {med(ts) * 1000:8.1f} ms "
              f"(min {min(ts) * 1000:.1f}, max {max(ts) * 1000:.1f}); CPU median "
              f"{med(cpu[name]) * 1000:8.1f} ms")
    for label, name, goal in (("export on / off", "on", 1.03), ("collector down / off", "down", 1.05)):
        print(f"ratio {label:<22} wall {med(times[name]) / med(times['off']):.3f}  "
              f"CPU {med(cpu[name]) / med(cpu['off']):.3f}   (goal <= {goal})")
    run_s = med(times["off"])
    print(f"on the run's path (the sink): median {med(on_path) * 1000:.3f} ms per run "
          f"({med(on_path) / run_s * 100:.4f}% of a run); off it, building and sending one run's "
          f"{len(record.steps)}-step spans: {med(off_path) * 1000:.2f} ms CPU "
          f"({med(off_path) / med(cpu['off']) * 100:.2f}% of a run's CPU)")
    print(f"exports: to the collector all sent: {flushed and up.exporter.failures == 0}; to the "
          f"dead port {down.exporter.failures} failed requests, runs failed: {len(failed)}")
    for line in failed:
        print("  ", line)
    up.close()
    down.close()
    if receiver is not None:
        receiver.terminate()


if __name__ == "__main__":
    main()
