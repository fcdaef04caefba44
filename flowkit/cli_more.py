"""Subcommands added by later features (eval, train-judge); each registers itself here."""
from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Hook for eval / train-judge commands."""
