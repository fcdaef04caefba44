"""Test doubles shipped with the library: a scripted LLM, an in-memory knowledge base, builders."""
from .fakes import FakeLLM, MemoryKB, fake_resources
from .builders import flow

__all__ = ["FakeLLM", "MemoryKB", "fake_resources", "flow"]
