"""Resources: settings plus the lazily loaded LLM, embedder, Chroma store and knowledge bases.

Building a `Resources` loads nothing; the model loads on the first LLM call, the embedder on the
first embedding. Validating or compiling a flow never touches these. `preload()` starts loading the
model in a background thread (the studio does when it opens its workspace), and `model_state()`
says how that went; a run that starts meanwhile waits for the same load.
"""
from __future__ import annotations

import json
import os
import threading
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from ..errors import ResourceError
from ..telemetry.settings import TelemetrySettings, settings_or_off
from .backends import make_llm
from .embed import Embedder
from .kb import KnowledgeBase, check_name
from .llm_contract import LLM, LLMSettings
from .vectorstore import ChromaStore


@dataclass(frozen=True)
class ModelState:
    """Where the background load of the model stands: `phase` is "idle" (never asked to preload),
    "loading", "ready" or "failed" (`error` then holds the reason, one line)."""

    phase: str
    error: str = ""


def _one_line(err: BaseException, limit: int = 240) -> str:
    text = " ".join(str(err).split()) or type(err).__name__
    return text if len(text) <= limit else text[:limit - 1] + "…"


def default_data_dir() -> Path:
    """FLOWKIT_HOME, else ~/.flowkit."""
    return Path(os.environ.get("FLOWKIT_HOME") or Path.home() / ".flowkit").expanduser()


#: LLM fields whose default is None (the device decides at load): the type a given value must have
_DEVICE_FIELD_TYPES: dict[str, type] = {"n_gpu_layers": int, "n_batch": int, "prefix_reuse": bool}
#: the version settings.json is written with; a file without one was written before the device
#: decided (version 1), when the Settings page saved every field with its value
SETTINGS_VERSION = 2
#: what version 1 saved for the device fields when the user had set none of them
_V1_DEVICE_DEFAULTS: dict[str, Any] = {"n_gpu_layers": 0, "n_batch": 64, "prefix_reuse": True}


def migrate(data: dict[str, Any]) -> dict[str, Any]:
    """settings.json as this version reads it. A version-1 file holds the old defaults for the
    device fields (0 GPU layers, batch 64, prefix reuse on) because the Settings page wrote every
    field; read as given, they would keep a CUDA install on the CPU after the upgrade. Where all
    three still hold those old defaults they are read as unset (the device decides); where the
    user changed any of them, all three are kept as they are."""
    data = dict(data)
    version = data.pop("version", 1)
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise ResourceError(f"settings: version must be a whole number >= 1, not {version!r}")
    if version > SETTINGS_VERSION:
        raise ResourceError(f"settings: version {version} was written by a newer flowkit "
                            f"(this one reads up to {SETTINGS_VERSION})")
    llm = data.get("llm")
    if version == 1 and isinstance(llm, dict) and all(
            k in llm and llm[k] == v and type(llm[k]) is type(v)
            for k, v in _V1_DEVICE_DEFAULTS.items()):
        data["llm"] = {k: (None if k in _V1_DEVICE_DEFAULTS else v) for k, v in llm.items()}
    return data


@dataclass(frozen=True)
class Settings:
    """Everything a run depends on besides the flow. Stored as settings.json in the data dir."""

    llm: LLMSettings = field(default_factory=LLMSettings)
    embedder_path: str = ""            # empty: all-MiniLM-L6-v2 from its package
    chroma_host: str = ""              # empty: PersistentClient in <data_dir>/chroma
    chroma_port: int = 8000
    database_url: str = ""             # empty: sqlite:///<data_dir>/flowkit.db
    completion_cache: bool = True      # serve deterministic model calls from the database
    cache_max_entries: int = 200_000   # the cache's bound; least recently used entries go first
    telemetry: TelemetrySettings = field(default_factory=TelemetrySettings)   # OTLP export of runs

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["llm"] = self.llm.to_dict()
        return d

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Settings:
        llm_fields = LLMSettings.__dataclass_fields__
        unknown = [k for k in (data.get("llm") or {}) if k not in llm_fields]
        if unknown:
            raise ResourceError(f"settings: unknown llm field(s) {unknown}")
        for key, value in (data.get("llm") or {}).items():
            if value is None and key in _DEVICE_FIELD_TYPES:
                continue                       # unset: the device decides (runtime/device.py)
            want = _DEVICE_FIELD_TYPES.get(key) or type(getattr(LLMSettings, key))
            fits = isinstance(value, want) and not (want is int and isinstance(value, bool)) \
                or (want is float and isinstance(value, int) and not isinstance(value, bool))
            if not fits:
                raise ResourceError(f"settings: llm.{key} must be {want.__name__}, not "
                                    f"{type(value).__name__} ({str(value)[:40]!r})")
        llm = LLMSettings(**(data.get("llm") or {}))
        top = {k: v for k, v in data.items() if k != "llm"}
        bad = [k for k in top if k not in cls.__dataclass_fields__]
        if bad:
            raise ResourceError(f"settings: unknown field(s) {bad}")
        if "telemetry" in top:
            top["telemetry"] = TelemetrySettings.from_dict(top["telemetry"])
        return cls(llm=llm, **top)

    def with_llm(self, **changes: Any) -> Settings:
        return replace(self, llm=replace(self.llm, **changes))


def load_settings(data_dir: Path) -> Settings:
    path = data_dir / "settings.json"
    if not path.is_file():
        return Settings()
    try:
        data = json.loads(path.read_text())
        if not isinstance(data, dict):
            raise ResourceError("settings must be a JSON object")
        data = migrate(data)
        if "telemetry" in data:             # a bad block: one warning, export off (never refused)
            data["telemetry"] = settings_or_off(data["telemetry"], str(path))
        return Settings.from_dict(data)
    except (json.JSONDecodeError, TypeError) as err:
        raise ResourceError(f"{path}: cannot read settings: {err}") from err
    except ResourceError as err:
        raise ResourceError(f"{path}: {err}") from None


def save_settings(data_dir: Path, settings: Settings) -> None:
    data_dir.mkdir(parents=True, exist_ok=True)
    path = data_dir / "settings.json"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"version": SETTINGS_VERSION, **settings.to_dict()}, indent=2))
    tmp.replace(path)


class Resources:
    """The heavy things a run uses, created on first use and shared by runs in this process."""

    def __init__(self, data_dir: Path | str | None = None, settings: Settings | None = None) -> None:
        self.data_dir = Path(data_dir) if data_dir else default_data_dir()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.settings = settings or load_settings(self.data_dir)
        self._llm: LLM | None = None
        self._embedder: Embedder | None = None
        self._store: ChromaStore | None = None
        self._kbs: dict[str, KnowledgeBase] = {}
        self._lock = threading.Lock()
        self._kb_lock = threading.Lock()    # apart: kb() takes _lock through store and embedder
        self._closed = False
        self._llm_owned = False    # the model was made here (not given with set_llm)
        self._load_state = ModelState("idle")
        self._load_thread: threading.Thread | None = None

    @property
    def database_url(self) -> str:
        return self.settings.database_url or f"sqlite:///{self.data_dir / 'flowkit.db'}"

    @property
    def llm(self) -> LLM:
        """The model: by default llama.cpp in a supervised worker process (see runtime/supervisor)."""
        with self._lock:
            if self._llm is None:
                if self._closed:
                    raise ResourceError("these resources were closed (the studio dropped its "
                                        "workspace); no new model is started for them")
                self._llm = make_llm(self.settings.llm, log_dir=self.data_dir / "logs")
                self._llm_owned = True
            return self._llm

    def preload(self) -> None:
        """Start loading the model in a background thread, once (later calls do nothing): make
        the LLM and, where it has one, call its `start()` (the worker process starts and loads the
        model; no completion is asked, so nothing cached changes). Never blocks the caller; a run
        that asks for the model meanwhile waits for this same load (the LLM's own lock)."""
        with self._lock:
            if self._load_thread is not None or self._closed:
                return
            self._load_state = ModelState("loading")
            self._load_thread = threading.Thread(target=self._preload, name="flowkit-model-preload",
                                                 daemon=True)
            self._load_thread.start()

    def _preload(self) -> None:
        try:
            start = getattr(self.llm, "start", None)
            if callable(start):
                start()
        except Exception as err:  # noqa: BLE001 - any failure is the state the sidebar shows
            self._load_state = ModelState("failed", _one_line(err))
        else:
            self._load_state = ModelState("ready")

    def model_state(self) -> ModelState:
        """How the background load stands (see `preload`); starts nothing."""
        return self._load_state

    def wait_preloaded(self, timeout_s: float | None = None) -> ModelState:
        """Wait for the background load to end (tests, benches); returns its state."""
        thread = self._load_thread
        if thread is not None:
            thread.join(timeout_s)
        return self._load_state

    def close(self) -> None:
        """Stop the model worker these resources started (never waits: a call in flight ends
        first) and start no other. Safe to call twice; a model given with set_llm is left alone."""
        with self._lock:
            self._closed = True
            llm, owned = self._llm, self._llm_owned
            if owned:
                self._llm = None
        if owned and llm is not None:
            release = getattr(llm, "release", None) or getattr(llm, "close", None)
            if callable(release):
                release()

    def set_llm(self, llm: Any) -> None:
        """Use a given LLM (a FakeLLM in tests, a shared loaded model)."""
        self._llm, self._llm_owned = llm, False

    @property
    def embedder(self) -> Embedder:
        with self._lock:
            if self._embedder is None:
                self._embedder = Embedder(self.settings.embedder_path)
            return self._embedder

    def set_embedder(self, embedder: Any) -> None:
        self._embedder = embedder

    @property
    def store(self) -> ChromaStore:
        with self._lock:
            if self._store is None:
                self._store = ChromaStore(path=self.data_dir / "chroma",
                                          host=self.settings.chroma_host,
                                          port=self.settings.chroma_port)
            return self._store

    def kb(self, name: str) -> KnowledgeBase:
        """The knowledge base `name`, one object per name however many threads ask at once
        (its BM25 index and locks are shared by the runs of a concurrent evaluation)."""
        check_name(name)
        with self._kb_lock:
            if name not in self._kbs:
                self._kbs[name] = KnowledgeBase(name, self.data_dir / "kb", self.store,
                                                self.embedder)
            return self._kbs[name]

    def kb_names(self) -> list[str]:
        root = self.data_dir / "kb"
        if not root.is_dir():
            return []
        return sorted(p.name for p in root.iterdir() if (p / "meta.json").is_file())

    def model_hash(self) -> str:
        llm = self.llm
        return str(getattr(llm, "model_hash", "unknown"))
