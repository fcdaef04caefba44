"""Test doubles shipped with the library: a scripted LLM, an in-memory knowledge base, builders."""
from .fakes import FakeLLM, HashEmbedder, MemoryKB, fake_resources
from .builders import flow

__all__ = ["FakeLLM", "HashEmbedder", "MemoryKB", "fake_resources", "flow"]
