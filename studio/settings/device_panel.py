"""The Settings page's device part: the GPU layers, prompt batch and prefix reuse fields (empty:
the device decides when the model loads) and the rows that say what the model loads with."""
from __future__ import annotations

from typing import Any

from flowkit.errors import FlowkitError
from service.device import plan_rows
from service.workspace import Workspace
from studio.common.state import SettingsKeys as K

from .settings import FormValues

REUSE_CHOICES = ("device default", "on", "off")


def fields(v: FormValues, col: Any) -> tuple[int | None, int | None, bool | None]:
    """Draw the three device fields in `col` (inside the settings form); returns GPU layers,
    prompt batch and prefix reuse as given, None where left to the device."""
    layers = col.number_input("GPU layers", value=v.n_gpu_layers, min_value=-1, step=1,
                              key=K.GPU, placeholder="device default",
                              help="Empty: the device decides (every layer on a GPU, none on a "
                                   "CPU); -1: all layers on the GPU; 0: CPU only")
    batch = col.number_input("Prompt batch (tokens)", value=v.n_batch, min_value=1,
                             max_value=65536, step=64, key=K.BATCH, placeholder="device default",
                             help="Empty: 512 with layers on a GPU, 64 on a CPU")
    index = 0 if v.prefix_reuse is None else (1 if v.prefix_reuse else 2)
    reuse = col.selectbox("Prefix reuse", REUSE_CHOICES, index=index, key=K.PREFIX_REUSE,
                          help="Keep the KV of whole prompt blocks of recent calls. Device "
                               "default: on for a CPU, off on a GPU (copying KV snapshots "
                               "costs the GPU more than the tokens it saves)")
    return (None if layers is None else int(layers), None if batch is None else int(batch),
            None if reuse == REUSE_CHOICES[0] else reuse == "on")


def rows(ws: Workspace) -> dict[str, str]:
    """What the model loads with on this device, for the 'Loaded now' table; a refused setting
    (GPU layers on a CPU-only build) is one row that says why."""
    try:
        return plan_rows(ws)
    except FlowkitError as err:
        return {"Device": f"refused: {err}"}
