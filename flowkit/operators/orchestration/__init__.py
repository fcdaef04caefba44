"""Orchestration: routers (conditional), judges (end loops) and merges (join branches)."""
from . import agent, fusion, judges, routers  # noqa: F401
from . import (budget_judge, classifier_judge, ensembles, flare, llm_judges,  # noqa: F401
               llm_routers, semantic_routers)
