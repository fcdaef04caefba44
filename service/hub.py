"""Models by name, as the Settings page pulls them: a GGUF from the Hugging Face Hub into the
workspace's data directory (flowkit.runtime.hub: sha256 checked against the Hub's; a pull that
was stopped goes on from the bytes it had), and the models pulled there so far."""
from __future__ import annotations

from pathlib import Path

from flowkit.runtime.hub import (
    HubError,
    OnProgress,
    PullCancelled,
    Pulled,
    check_request,
    partial_bytes,
    pull,
    pulled_models,
)

from .workspace import Workspace

__all__ = ["HubError", "PullCancelled", "Pulled", "check_request", "models_dir", "partial_bytes",
           "pull_into", "pull_model", "pulled"]


def models_dir(ws: Workspace) -> Path:
    """The workspace's models folder (<data dir>/models)."""
    return Path(ws.data_dir) / "models"


def pull_model(ws: Workspace, repo: str, filename: str,
               on_progress: OnProgress | None = None) -> Pulled:
    """Pull `filename` of the Hub repository `repo` into the workspace's models folder; raises
    a FlowkitError (one line) when the Hub is unreachable, the file is missing or its sha256
    differs from the Hub's."""
    return pull_into(models_dir(ws), repo, filename, on_progress=on_progress)


def pull_into(folder: Path, repo: str, filename: str,
              on_progress: OnProgress | None = None) -> Pulled:
    """`pull_model` into a models folder given by path (a background job keeps the folder, not
    the workspace, which a settings change may rebuild while the file downloads)."""
    return pull(repo.strip(), filename.strip(), folder, on_progress=on_progress)


def pulled(ws: Workspace) -> list[Path]:
    """The GGUF files pulled into the workspace so far."""
    return pulled_models(models_dir(ws))
