"""A settings file's llm fields must have their declared types: a hand-edited file with a wrong
type is refused when it is read, naming the field, not later inside the model worker."""
from __future__ import annotations

import pytest

from flowkit.errors import ResourceError
from flowkit.runtime.resources import Settings


@pytest.mark.parametrize("key,value", [("prefix_cache_mb", "abc"), ("n_batch", 6.5),
                                       ("prefix_slots", True), ("prefix_reuse", "yes"),
                                       ("temperature", "0"), ("model_path", 3)])
def test_a_wrong_type_is_refused_naming_the_field(key, value):
    with pytest.raises(ResourceError, match=f"llm.{key} must be"):
        Settings.from_dict({"llm": {key: value}})


def test_right_types_are_read_and_an_int_stands_for_a_float():
    s = Settings.from_dict({"llm": {"prefix_cache_mb": 64, "temperature": 0, "prefix_reuse": False,
                                    "model_path": "x.gguf"}})
    assert (s.llm.prefix_cache_mb, s.llm.temperature, s.llm.prefix_reuse) == (64, 0, False)
