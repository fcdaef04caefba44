"""The provenance line under a shown passage, drawn as a caption (the line itself and when it is
shown: studio/common/provenance.py)."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import streamlit as st

from studio.common import inert
from studio.common.provenance import line


def caption(passage: Mapping[str, Any], known: Mapping[str, Mapping[str, Any]] | None = None,
            container: Any = None) -> None:
    """Draw the passage's provenance line as a caption (into `container`, default the current
    one), when it has one worth showing."""
    text = line(passage, known)
    if text:
        (container or st).caption(inert.escape(text))
