"""Settings and models, as the Settings page, the sidebar and `flowkit models` / `flowkit doctor`
use them: the saved settings of a data directory, the packaged models and which file each one
is, a GGUF file's header, and the choices the settings form offers. The one door from the
studio to flowkit.runtime's configuration."""
from __future__ import annotations

from flowkit.runtime.amx import EXTRA_BUFTS_CHOICES as EXTRA_BUFTS_CHOICES
from flowkit.runtime.amx import cpu_flags
from flowkit.runtime.engines import EngineInfo as EngineInfo
from flowkit.runtime.engines import describe_engines as describe_engines
from flowkit.runtime.gguf import inspect_gguf as inspect_gguf
from flowkit.runtime.models import DEFAULT_MODEL as DEFAULT_MODEL
from flowkit.runtime.models import PACKAGED as PACKAGED
from flowkit.runtime.models import model_file as model_file
from flowkit.runtime.models import models_table as models_table
from flowkit.runtime.resources import Settings as Settings
from flowkit.runtime.resources import default_data_dir as default_data_dir
from flowkit.runtime.resources import load_settings as load_settings
from flowkit.runtime.resources import save_settings as save_settings

from .workspace import Workspace

__all__ = ["DEFAULT_MODEL", "EXTRA_BUFTS_CHOICES", "PACKAGED", "EngineInfo", "Settings",
           "cpu_has_amx", "default_data_dir", "describe_engines", "engines", "inspect_gguf", "load_settings",
           "model_file", "models_table", "save_settings"]


def cpu_has_amx(cpuinfo: str | None = None) -> bool:
    """Whether the CPU advertises AMX (`amx_tile` in /proc/cpuinfo, or in `cpuinfo`)."""
    return "amx_tile" in cpu_flags(cpuinfo)


def engines(ws: Workspace) -> EngineInfo:
    """The engines the workspace uses, in words: its database (the URL it was opened with), the
    vector engine, the LLM backend and the llama.cpp threads actually used (0 in the settings
    means half the cores: the resolved number). Starts, opens and connects nothing."""
    return describe_engines(ws.data_dir, ws.resources.settings,
                            database_url=ws.resources.database_url)
