"""The Replay page: a run step by step, the memory before and after, its LLM calls and
retrievals, and forking a new run from a step."""
