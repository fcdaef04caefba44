"""`flowkit trace RUN_ID --otlp [URL]` and `flowkit evals send EVAL_ID [--otlp URL]`: stored runs
sent to an OpenTelemetry collector (Phoenix, Langfuse, any OTLP/HTTP endpoint) in the OpenInference
conventions. Without a URL, settings' `telemetry.otlp_endpoint`, else `OTEL_EXPORTER_OTLP_ENDPOINT`,
else http://localhost:4318."""
from __future__ import annotations

import argparse

from . import common

OTLP_HELP = ("send the run to an OpenTelemetry collector (OTLP/HTTP) instead of showing it; URL "
             "like http://localhost:6006 (default: settings' telemetry.otlp_endpoint, then "
             "OTEL_EXPORTER_OTLP_ENDPOINT, then http://localhost:4318)")


def add_otlp_option(parser: argparse.ArgumentParser) -> None:
    """`--otlp [URL]` on `flowkit trace` (bare `--otlp` means the configured collector)."""
    parser.add_argument("--otlp", nargs="?", const="", default=None, metavar="URL", help=OTLP_HELP)


def cmd_trace_otlp(args: argparse.Namespace) -> int:
    """Send one stored run; prints where it went and how many spans."""
    from service.telemetry import send_run
    sent = send_run(common.open_workspace(args), args.run_id, args.otlp or None)
    common.out.print(f"sent run {args.run_id}: {sent.spans} spans to {sent.url}", markup=False, highlight=False)
    return 0


def add_send_arguments(parser: argparse.ArgumentParser) -> None:
    """`flowkit evals send EVAL_ID [--otlp URL]` on the `evals` parser (alone it lists)."""
    parser.add_argument("action", nargs="?", choices=["send"],
                        help="send: an evaluation's runs to an OpenTelemetry collector")
    parser.add_argument("eval_id", nargs="?", help="the evaluation to send (with send)")
    parser.add_argument("--otlp", default="", metavar="URL",
                        help="with send: the collector's OTLP/HTTP URL, like http://localhost:6006 "
                             "(default: settings' telemetry.otlp_endpoint, then "
                             "OTEL_EXPORTER_OTLP_ENDPOINT, then http://localhost:4318)")


def cmd_evals_send(args: argparse.Namespace) -> int:
    """Send an evaluation's finished runs, grouped under its id."""
    from flowkit.errors import FlowkitError
    from service.telemetry import send_eval
    if not args.eval_id:
        raise FlowkitError("evals send: name the evaluation (flowkit evals send EVAL_ID)")
    sent = send_eval(common.open_workspace(args), args.eval_id, args.otlp or None)
    common.out.print(f"sent evaluation {args.eval_id}: {sent.runs} runs, {sent.spans} spans to "
                     f"{sent.url}", markup=False, highlight=False)
    return 0
