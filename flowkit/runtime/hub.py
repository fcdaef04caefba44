"""Models by name: pull a GGUF from the Hugging Face Hub into the data directory's models folder.

`pull(repo, filename, models_dir)` asks the Hub for the file's metadata (its commit, size and the
sha256 of its LFS object), downloads it with `huggingface_hub.hf_hub_download` (a progress bar; a
connection that drops part-way is resumed from the byte where it stopped, with a Range request;
huggingface_hub 2.x deletes the part of a pull that was stopped, so that one starts over), checks the file's sha256 against the
Hub's and only then moves it to `<models_dir>/<owner>--<name>/<file>`, where `pulled_models` lists
it (and `flowkit models` and the Settings page show it). A file whose sha256 differs is deleted and
nothing is listed; an unreachable Hub is a `HubError` that says so in one line.

`HF_ENDPOINT` (read when a pull starts) points at a mirror or a local stand-in. A pull is asked for
explicitly, so it goes online even where `HF_HUB_OFFLINE=1` keeps the rest of flowkit offline (the
Makefile sets it): only for the pull's own requests, under a lock.
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ResourceError
from .gguf import inspect_gguf

#: Called with (bytes so far, total bytes or None) while a pull downloads.
OnProgress = Callable[[int, "int | None"], None]
DEFAULT_ENDPOINT = "https://huggingface.co"
_REPO = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}$")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_ONLINE_LOCK = threading.Lock()


class HubError(ResourceError):
    """A pull failed: the Hub unreachable, no such repository or file, a sha256 mismatch."""


class PullCancelled(HubError):
    """Raised by an `on_progress` callback to stop a pull (the Settings page's stop); the part
    downloaded is deleted, nothing is listed."""


@dataclass(frozen=True)
class Pulled:
    """A pulled model: its file, repository, file name, commit and sha256."""

    path: Path
    repo: str
    filename: str
    commit: str
    sha256: str
    size_bytes: int


def check_request(repo: str, filename: str) -> None:
    """Refuse a repository id or file name that cannot be one on the Hub (one line each)."""
    if not _REPO.match(repo or "") or ".." in repo:
        raise HubError(f"repository {repo!r}: give it as owner/name, e.g. "
                       "ggml-org/gemma-3-1b-it-GGUF")
    parts = (filename or "").split("/")
    if not filename or filename.startswith("/") or any(p in ("", ".", "..") for p in parts):
        raise HubError(f"file {filename!r}: give the file's path inside the repository, e.g. "
                       "gemma-3-1b-it-Q4_K_M.gguf")
    if not filename.lower().endswith(".gguf"):
        raise HubError(f"file {filename!r} is not a .gguf file; flowkit runs GGUF models")


def folder_name(repo: str) -> str:
    """The folder a repository's files go to under the models folder ('owner--name')."""
    return repo.replace("/", "--")


def pulled_models(models_dir: Path) -> list[Path]:
    """The GGUF files pulled into `models_dir`, sorted (the download area is not listed)."""
    if not models_dir.is_dir():
        return []
    return sorted(p for p in models_dir.glob("*/**/*.gguf")
                  if p.is_file() and not any(part.startswith(".")
                                             for part in p.relative_to(models_dir).parts))


def _endpoint(endpoint: str | None) -> str:
    return (endpoint or os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")


@contextmanager
def _online() -> Iterator[None]:
    """Let huggingface_hub make the pull's requests where HF_HUB_OFFLINE=1 is set."""
    from huggingface_hub import constants
    with _ONLINE_LOCK:
        before = constants.HF_HUB_OFFLINE
        constants.HF_HUB_OFFLINE = False
        try:
            yield
        finally:
            constants.HF_HUB_OFFLINE = before


def _progress_class(on_progress: OnProgress | None) -> Any:
    """A tqdm class for hf_hub_download that also hands the progress to `on_progress`."""
    from huggingface_hub.utils import tqdm as hf_tqdm
    if on_progress is None:
        return None
    report: OnProgress = on_progress

    class _Reporting(hf_tqdm):
        def update(self, n: float | None = 1) -> bool | None:
            # counted here too: a disabled bar (no terminal) does not count
            done = getattr(self, "_done", None)
            self._done = (int(self.n) if done is None else done) + int(n or 0)
            shown = super().update(n)
            report(self._done, int(self.total) if self.total else None)
            return shown

    return _Reporting


def _unreachable(err: BaseException, endpoint: str) -> HubError:
    return HubError(f"cannot reach the Hugging Face Hub at {endpoint} (offline?): "
                    f"{' '.join(str(err).split())[:200] or type(err).__name__}")


def _lfs_sha256(repo: str, filename: str, revision: str | None, endpoint: str) -> tuple[str, str,
                                                                                        int | None]:
    """(sha256, commit, size) of the file as the Hub says: the LFS object's sha256 is its etag;
    where the etag is not one, the repository's file metadata (model_info) is asked."""
    from huggingface_hub import HfApi, get_hf_file_metadata, hf_hub_url
    from huggingface_hub.errors import EntryNotFoundError, RepositoryNotFoundError
    url = hf_hub_url(repo, filename, revision=revision, endpoint=endpoint)
    try:
        meta = get_hf_file_metadata(url, timeout=30)
        sha = (meta.etag or "").strip('"').lower()
        if not _SHA256.match(sha):
            info = HfApi(endpoint=endpoint).model_info(repo, revision=revision,
                                                       files_metadata=True)
            lfs = next((s.lfs for s in info.siblings or [] if s.rfilename == filename), None)
            sha = str(getattr(lfs, "sha256", "") or "").lower()
    except EntryNotFoundError as err:
        raise HubError(f"{repo} has no file {filename} (check the name on the repository's "
                       "'Files' tab)") from err
    except RepositoryNotFoundError as err:
        raise HubError(f"no repository {repo} on {endpoint} (or it is private or gated: log in "
                       "with `huggingface-cli login`)") from err
    except (OSError, ConnectionError, TimeoutError) as err:
        raise _unreachable(err, endpoint) from err
    except HubError:
        raise
    except Exception as err:  # httpx's errors differ between versions
        if type(err).__module__.startswith(("httpx", "httpcore")):
            raise _unreachable(err, endpoint) from err
        raise HubError(f"the Hub refused {repo}/{filename}: {' '.join(str(err).split())[:200]}") \
            from err
    if not _SHA256.match(sha):
        raise HubError(f"the Hub gives no sha256 for {repo}/{filename}; not pulled (flowkit "
                       "pulls only files it can check)")
    return sha, str(meta.commit_hash or ""), meta.size


def _sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def pull(repo: str, filename: str, models_dir: Path, *, revision: str | None = None,
         endpoint: str | None = None, on_progress: OnProgress | None = None) -> Pulled:
    """Download `filename` of the Hub repository `repo` into `models_dir`, check its sha256 and
    GGUF header, and return where it is. A file already pulled with the Hub's sha256 is not
    downloaded again; a connection dropped part-way resumes where it stopped."""
    from huggingface_hub import hf_hub_download
    check_request(repo, filename)
    ep = _endpoint(endpoint)
    target = models_dir / folder_name(repo) / filename
    staging = models_dir / ".download" / folder_name(repo)
    with _online():
        sha, commit, size = _lfs_sha256(repo, filename, revision, ep)
        if target.is_file() and _sha256_of(target) == sha:
            return Pulled(target, repo, filename, commit, sha, target.stat().st_size)
        try:
            got = Path(hf_hub_download(repo, filename, revision=revision, endpoint=ep,
                                       local_dir=staging,
                                       tqdm_class=_progress_class(on_progress)))
        except (OSError, ConnectionError, TimeoutError) as err:
            raise _unreachable(err, ep) from err
        except HubError:
            raise                           # PullCancelled from on_progress: the part is kept
        except Exception as err:  # httpx's errors differ between versions
            if type(err).__module__.startswith(("httpx", "httpcore")):
                raise _unreachable(err, ep) from err
            raise HubError(f"the download of {repo}/{filename} failed: "
                           f"{' '.join(str(err).split())[:200]}") from err
    actual = _sha256_of(got)
    if actual != sha:
        shutil.rmtree(staging, ignore_errors=True)
        raise HubError(f"{repo}/{filename}: the downloaded file's sha256 is {actual[:12]}…, the "
                       f"Hub says {sha[:12]}…; deleted, nothing pulled (download it again)")
    try:
        inspect_gguf(got)                   # a GGUF that llama.cpp can read, before it is listed
    except ResourceError:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    target.parent.mkdir(parents=True, exist_ok=True)
    os.replace(got, target)
    shutil.rmtree(staging, ignore_errors=True)
    return Pulled(target, repo, filename, commit, sha, size or target.stat().st_size)
