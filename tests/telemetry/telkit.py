"""Shared by the telemetry tests: a self_rag run with a loop, spans read back as a tree, and a
small OTLP/HTTP receiver that decodes what it is sent (opentelemetry-proto)."""
from __future__ import annotations

import http.server
import threading
from dataclasses import dataclass, field
from typing import Any

from flowkit import ListSink, compile_flow, run_flow
from flowkit.run_request import RunHooks, RunRequest
from flowkit.templates import load_template
from flowkit.testing import FakeLLM, fake_resources

Q = "Where was Mara Velt born?"


def looping_llm() -> FakeLLM:
    """self_rag's script: retrieve, judge the first draft not useful (a second round through the
    rewrite loop), then useful and supported."""
    useful = iter(["no", "yes"])
    return FakeLLM([
        (r"Is the draft answer a useful answer", lambda _p: next(useful, "yes")),
        (r"Reply yes or no", "yes"),
        (r"Rewrite|search query", "Mara Velt birthplace"),
    ], default="Mara Velt was born on Tessel [1].")


def self_rag_run(llm: FakeLLM | None = None) -> tuple[Any, ListSink, FakeLLM]:
    """self_rag (a router branch and a judged loop) run on the fake resources."""
    model = llm or looping_llm()
    sink = ListSink()
    result = run_flow(compile_flow(load_template("self_rag")), fake_resources(model),
                      RunRequest(Q, kb="test"), RunHooks(sink=sink))
    return result, sink, model


def children(spans: list[Any], parent: Any) -> list[Any]:
    """The spans whose parent is `parent`, in start order."""
    kids = [s for s in spans if s.parent is not None and s.parent.span_id == parent.context.span_id]
    return sorted(kids, key=lambda s: (s.start_time, s.attributes.get("flowkit.step_index", 0)))


@dataclass
class Receiver:
    """An OTLP/HTTP endpoint on localhost that keeps the spans posted to it."""

    url: str
    spans: list[Any] = field(default_factory=list)
    requests: int = 0
    server: Any = None

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def start_receiver() -> Receiver:
    """Start a Receiver on a free port (decodes ExportTraceServiceRequest bodies)."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
        ExportTraceServiceResponse,
    )
    box: dict[str, Receiver] = {}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            req = ExportTraceServiceRequest()
            req.ParseFromString(body)
            rec = box["r"]
            rec.requests += 1
            for rs in req.resource_spans:
                for ss in rs.scope_spans:
                    rec.spans.extend(ss.spans)
            out = ExportTraceServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    box["r"] = Receiver(f"http://127.0.0.1:{server.server_address[1]}", server=server)
    return box["r"]


def free_port() -> int:
    """A port nothing listens on (bound, then released)."""
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def fake_workspace(data_dir: Any, endpoint: str | None, llm: FakeLLM | None = None) -> Any:
    """A Workspace on `data_dir` with the fake model and KB; live export to `endpoint` (None:
    off)."""
    from flowkit.runtime.resources import Settings
    from flowkit.telemetry.settings import TelemetrySettings
    from flowkit.testing.fakes import MemoryKB, fake_resources
    from service.workspace import Workspace
    tel = TelemetrySettings(enabled=endpoint is not None, otlp_endpoint=endpoint or "")
    ws = Workspace(data_dir, Settings(telemetry=tel))
    ws.resources.set_llm(llm or looping_llm())
    kb: MemoryKB = fake_resources().kbs["test"]
    ws.resources._kbs["test"] = kb
    return ws


def run_sent_live(url: str, resources: Any, question: str) -> tuple[Any, ListSink]:
    """iter_retgen on the real resources with live export to `url` (flushed before it returns):
    the run's result and its steps as the run wrote them."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    from flowkit.telemetry.export import SENT, LiveExport
    from flowkit.telemetry.settings import TelemetrySettings, target_for
    from flowkit.telemetry.sink import TelemetrySink
    from flowkit.trace import MultiSink
    target = target_for(TelemetrySettings(), {}, url=url)
    # the product gives a request 5 s (a CLI's exit is not held longer); a collector sharing two
    # busy cores with the model can take longer to answer, and the spans would be dropped (CI,
    # stop 55: the run never reached Phoenix). What is tested here is what arrives, so: 60 s.
    live = LiveExport(target, exporter=OTLPSpanExporter(endpoint=target.url, timeout=60))
    sink = ListSink()
    try:
        result = run_flow(compile_flow(load_template("iter_retgen")), resources,
                          RunRequest(question, kb="sample"),
                          RunHooks(sink=MultiSink(sink, TelemetrySink(live))))
        assert live.flush(90)
        assert live.outcome(result.run_id) == SENT, \
            f"the collector did not take run {result.run_id}'s spans: {live.outcome(result.run_id)}"
    finally:
        live.close()
    return result, sink

