"""Test doubles shipped with the library: a scripted LLM, an in-memory knowledge base, builders."""
from .builders import flow
from .fakes import FakeLLM, HashEmbedder, MemoryKB, fake_resources
from .operators import operator_instance, run_operator

__all__ = ["FakeLLM", "HashEmbedder", "MemoryKB", "fake_resources", "flow", "operator_instance",
           "run_operator"]
