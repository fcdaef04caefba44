"""Trained judges: the sufficiency classifier's weights (the JSON files shipped here), their I/O
(`classifier`) and the text they score (`features`)."""
from .classifier import (
                         DEFAULT_WEIGHTS,
                         PACKAGED_DIR,
                         Classifier,
                         load_classifier,
                         resolve_weights,
                         save_classifier,
)
from .features import chain_items, judge_text

__all__ = ["DEFAULT_WEIGHTS", "PACKAGED_DIR", "Classifier", "chain_items", "judge_text",
           "load_classifier", "resolve_weights", "save_classifier"]
