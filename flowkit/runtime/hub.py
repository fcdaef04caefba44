"""Models by name: pull a GGUF from the Hugging Face Hub into the data directory's models folder.

`pull(repo, filename, models_dir)` asks the Hub for the file's metadata (its commit, size, the
sha256 of its LFS object and where its bytes are), then downloads them with huggingface_hub's
`http_get` into a part file of its own, `<models_dir>/.download/<owner>--<name>/<file>.<sha>.part`
(`hf_hub_download` deletes what it got when a pull is stopped, so a killed pull would start over).
A pull that was stopped (the process killed, the connection lost, the Settings page's Stop) goes
on from the bytes already in that part file: the next pull asks for the rest with a Range
request (a connection that drops part-way is resumed that way within one pull too). The whole
file's sha256 is then checked against the Hub's, and only then is it moved to
`<models_dir>/<owner>--<name>/<file>`, where `pulled_models` lists it (and `flowkit models` and the
Settings page show it). A file whose sha256 differs is deleted (its part too: it is not resumed)
and nothing is listed; an unreachable Hub is a `HubError` that says so in one line. Two pulls of
one file at once (two processes, or the CLI and the studio) are refused: a lock file beside the
part file is held while one downloads.

A broken or hostile Hub cannot stretch a pull (issue 47, finding 4): it writes at most the size
the Hub announced (more is refused, the part deleted), starts only with room for the rest of the
file (`DISK_MARGIN_BYTES` over), and ends within a stated time: a try with no byte for `STALL_S`,
or under `MIN_BYTES_PER_S` over a `RATE_WINDOW_S` window, ends; `MAX_FRUITLESS_TRIES` tries in a
row that add nothing to the part (a server that ignores Range and closes early) end the pull.
Each end is one HubError line saying what the Hub did.

`HF_ENDPOINT` (read when a pull starts) points at a mirror or a local stand-in. A pull is asked for
explicitly, so it goes online even where `HF_HUB_OFFLINE=1` keeps the rest of flowkit offline (the
Makefile sets it): only while a pull runs (several may run at once; the last to end restores it).
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ..errors import ResourceError
from .gguf import inspect_gguf

#: Called with (bytes so far, total bytes or None) while a pull downloads; a resumed pull's first
#: call gives the bytes it already had.
OnProgress = Callable[[int, "int | None"], None]
DEFAULT_ENDPOINT = "https://huggingface.co"
#: A Hub repository id, matched whole (`fullmatch`: a `$` would let a trailing newline through)
_REPO = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")

#: Seconds a try waits for the next byte (the connection, the answer's headers, each read)
#: before it ends as stalled; a Hub that goes silent ends a try after this long.
STALL_S = 30.0
#: The window over which a try's speed is measured: a try that brought fewer than
#: `MIN_BYTES_PER_S` × the window's seconds ends as too slow (a 1-byte-per-5-s drip ends
#: after one window, 60 s, plus at most one gap between its bytes).
RATE_WINDOW_S = 60.0
#: The slowest a download may go, averaged over `RATE_WINDOW_S` (16 KiB/s: a 1 Mbit/s link runs
#: at eight times this); slower is a stalled or hostile Hub, and the pull ends (its part kept).
MIN_BYTES_PER_S = 16 * 1024
#: Tries in a row that end (dropped, stalled, short) without adding a byte to the part: then the
#: pull ends. A Hub that ignores Range and closes early made huggingface_hub's http_get start
#: again forever; a silent Hub now ends a pull after this many × `STALL_S` (+ `RETRY_WAIT_S`).
MAX_FRUITLESS_TRIES = 3
#: Seconds between tries.
RETRY_WAIT_S = 1.0
#: Bytes left free on the models folder's disk beyond the rest of the file: a pull that would
#: leave less is refused before its first byte (the database, logs and runs need room too).
DISK_MARGIN_BYTES = 512 * 1024 * 1024
#: The part file grows in blocks of this size (huggingface_hub's download chunk): a pull
#: stopped part-way keeps its whole blocks, and the progress is reported once per block.
WRITE_BLOCK = 10 * 1024 * 1024


class HubError(ResourceError):
    """A pull failed: the Hub unreachable, no such repository or file, a sha256 mismatch."""


class PullCancelled(HubError):
    """Raised by an `on_progress` callback to stop a pull (the Settings page's Stop); the part
    downloaded is kept, so the next pull of the file goes on from it; nothing is listed."""


@dataclass(frozen=True)
class Pulled:
    """A pulled model: its file, repository, file name, commit and sha256."""

    path: Path
    repo: str
    filename: str
    commit: str
    sha256: str
    size_bytes: int


@dataclass(frozen=True)
class _Remote:
    """What the Hub says of a file: its sha256, commit, size and where its bytes are."""

    sha256: str
    commit: str
    size: int | None
    url: str


def check_request(repo: str, filename: str) -> None:
    """Refuse a repository id or file name that cannot be one on the Hub (one line each)."""
    if not isinstance(repo, str) or not _REPO.fullmatch(repo) or ".." in repo:
        raise HubError(f"repository {repo!r}: give it as owner/name, e.g. "
                       "ggml-org/gemma-3-1b-it-GGUF")
    parts = (filename or "").split("/")
    if not filename or filename.startswith("/") or not filename.isprintable() or \
            any(p in ("", ".", "..") for p in parts):
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


def part_files(models_dir: Path, repo: str, filename: str) -> list[Path]:
    """The part files of `repo`/`filename` waiting to be resumed (one per sha256 the Hub gave)."""
    staging = models_dir / ".download" / folder_name(repo)
    name = Path(filename)
    return sorted((staging / name.parent).glob(f"{name.name}.*.part"))


def partial_bytes(models_dir: Path, repo: str, filename: str) -> int:
    """Bytes of `repo`/`filename` downloaded by a pull that stopped (the next pull goes on from
    there); 0 when there is none (or the request cannot be one)."""
    repo, filename = repo.strip(), filename.strip()
    try:
        check_request(repo, filename)
        return max((p.stat().st_size for p in part_files(models_dir, repo, filename)), default=0)
    except (HubError, OSError):
        return 0


def _endpoint(endpoint: str | None) -> str:
    return (endpoint or os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")


class _OnlineGate:
    """Lets huggingface_hub make the pulls' requests where HF_HUB_OFFLINE=1 is set: on while at
    least one pull runs, back to what it was when the last one ends."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._inside = 0
        self._before = False

    @contextmanager
    def opened(self) -> Iterator[None]:
        from huggingface_hub import constants
        with self._lock:
            if self._inside == 0:
                self._before = constants.HF_HUB_OFFLINE
                constants.HF_HUB_OFFLINE = False
            self._inside += 1
        try:
            yield
        finally:
            with self._lock:
                self._inside -= 1
                if self._inside == 0:
                    constants.HF_HUB_OFFLINE = self._before


_ONLINE = _OnlineGate()


def _unreachable(err: BaseException, endpoint: str) -> HubError:
    return HubError(f"cannot reach the Hugging Face Hub at {endpoint} (offline?): "
                    f"{' '.join(str(err).split())[:200] or type(err).__name__}")


def _is_http_error(err: BaseException) -> bool:
    """An error of the HTTP client (httpx / httpx2 / httpcore: their classes differ between
    versions)."""
    return type(err).__module__.startswith(("httpx", "httpcore"))


def _remote(repo: str, filename: str, revision: str | None, endpoint: str) -> _Remote:
    """The file as the Hub says: the LFS object's sha256 is its etag; where the etag is not one,
    the repository's file metadata (model_info) is asked."""
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
        if _is_http_error(err):
            raise _unreachable(err, endpoint) from err
        raise HubError(f"the Hub refused {repo}/{filename}: {' '.join(str(err).split())[:200]}") \
            from err
    if not _SHA256.match(sha):
        raise HubError(f"the Hub gives no sha256 for {repo}/{filename}; not pulled (flowkit "
                       "pulls only files it can check)")
    return _Remote(sha, str(meta.commit_hash or ""), meta.size, meta.location or url)


def _sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


@contextmanager
def _only_pull(lock_path: Path, what: str) -> Iterator[None]:
    """Hold the file's pull lock, or refuse: another pull of the same file is downloading."""
    from filelock import FileLock, Timeout  # huggingface_hub's own dependency
    lock = FileLock(lock_path)
    try:
        lock.acquire(timeout=0)
    except Timeout:
        raise HubError(f"{what} is already being pulled (another flowkit process or page); "
                       "wait for that pull to end") from None
    try:
        yield
    finally:
        lock.release()


def _origin(url: str) -> tuple[str, str, int | None]:
    """(scheme, host, port) of `url`, the port made explicit for http and https."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError:                          # a port that is no number: no origin matches it
        return (scheme, "", -1)
    return (scheme, (parts.hostname or "").lower(),
            port if port is not None else {"http": 80, "https": 443}.get(scheme))


def _headers_for(url: str, endpoint: str, headers: dict[str, str]) -> dict[str, str]:
    """`headers` for a request to `url`, without the Hugging Face token unless `url` is on the
    endpoint's own origin. The Hub answers an LFS file with a redirect to a CDN (another host,
    a signed URL that needs no token): a token sent there leaves the Hub (issue 47, finding 1).
    Redirects the HTTP client follows itself drop it too (httpx strips Authorization when a
    redirect leaves the origin)."""
    if _origin(url) == _origin(endpoint):
        return dict(headers)
    return {k: v for k, v in headers.items() if k.lower() != "authorization"}


class _NotTheFile(HubError):
    """What the Hub sends cannot be the file it announced (more bytes, another size): the part
    is deleted, never resumed."""


class _Fruitless(Exception):
    """A try ended without the whole file (dropped, stalled, short): worth another try. `reached`:
    the part's length then; `why`: what happened; `ignored`: the Hub ignored the Range asked."""

    def __init__(self, reached: int, why: str, ignored: bool) -> None:
        super().__init__(why)
        self.reached, self.why, self.ignored = reached, why, ignored


class _Progress:
    """Where the part is: reported to `on_progress` (which may raise PullCancelled) or, where
    none is given (the CLI), shown as huggingface_hub's tqdm bar."""

    def __init__(self, on_progress: OnProgress | None, size: int, have: int, name: str) -> None:
        from huggingface_hub.utils import tqdm as hf_tqdm
        self._report = on_progress
        self._bar = None if on_progress else hf_tqdm(
            total=size, initial=have, unit="B", unit_scale=True, unit_divisor=1024, desc=name,
            name="huggingface_hub.http_get")
        self._shown, self.size = have, size

    def at(self, done: int) -> None:
        if self._report is not None:
            self._report(done, self.size)
        elif self._bar is not None:
            self._bar.update(done - self._shown)
        self._shown = done

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


class _Pace:
    """Ends a try that is too slow: fewer than MIN_BYTES_PER_S averaged over RATE_WINDOW_S."""

    def __init__(self, what: str) -> None:
        self.what, self._start, self._bytes = what, time.monotonic(), 0

    def add(self, n: int) -> None:
        self._bytes += n
        spent = time.monotonic() - self._start
        if spent < RATE_WINDOW_S:
            return
        if self._bytes < MIN_BYTES_PER_S * spent:
            raise HubError(f"the Hub sent {self.what} too slowly: {self._bytes:,} bytes in "
                           f"{spent:.0f} s (under {MIN_BYTES_PER_S // 1024} KiB/s)")
        self._start, self._bytes = time.monotonic(), 0


def _check_room(folder: Path, need: int, what: str) -> None:
    """Refuse a pull the disk has no room for (the rest of the file + DISK_MARGIN_BYTES)."""
    free = shutil.disk_usage(folder).free
    if free < need + DISK_MARGIN_BYTES:
        raise HubError(f"{what} needs {need / 1e9:.1f} GB more on {folder}, and "
                       f"{DISK_MARGIN_BYTES / 1e9:.1f} GB kept free; {free / 1e9:.1f} GB free: "
                       "make room and pull again")


def _skip_for(status: int, headers: Any, have: int, size: int, what: str) -> int:
    """Bytes of the answer's body to skip (a Hub that ignores Range sends the whole file: the
    bytes already in the part are skipped); HubError where the answer cannot be this file."""
    if status == 206:
        got = re.fullmatch(r"bytes (\d+)-(\d+)/(\d+)", headers.get("Content-Range", "").strip())
        if got is None or int(got[1]) != have or int(got[3]) != size:
            raise _NotTheFile(f"the Hub answered the range from byte {have:,} of {what} with "
                              f"{headers.get('Content-Range', 'no Content-Range')[:80]!r}; not "
                              f"the {size:,} bytes it announced")
        return 0
    if status != 200:
        raise HubError(f"the Hub answered {status} for the bytes of {what}")
    length = headers.get("Content-Length")
    if length is not None and length.strip().isdigit() and int(length) != size:
        raise _NotTheFile(f"the Hub announced {size:,} bytes for {what} and then served "
                          f"{int(length):,}")
    return have


def _try(url: str, headers: dict[str, str], f: Any, have: int, size: int, what: str,
         progress: _Progress) -> None:
    """One GET from byte `have` to the end: writes whole WRITE_BLOCKs (the last one short), never
    past `size`. _Fruitless when the answer fails or ends early; HubError when it is not the file
    or comes too slow."""
    from huggingface_hub.utils import get_session
    asked = dict(headers, Range=f"bytes={have}-") if have else headers
    pace, buf, pos, ignored = _Pace(what), bytearray(), have, False
    try:
        with get_session().stream("GET", url, headers=asked, timeout=STALL_S) as answer:
            skip = _skip_for(answer.status_code, answer.headers, have, size, what)
            ignored = bool(have) and answer.status_code == 200
            for piece in answer.iter_raw():
                pace.add(len(piece))
                cut = min(skip, len(piece))
                skip -= cut
                buf += piece[cut:]
                if pos + len(buf) > size:
                    raise _NotTheFile(f"the Hub sent more than the {size:,} bytes it announced "
                                      f"for {what}; stopped")
                while len(buf) >= WRITE_BLOCK or (buf and pos + len(buf) == size):
                    block = bytes(buf[:WRITE_BLOCK])
                    progress.at(pos + len(block))     # may raise PullCancelled: not written
                    f.write(block)
                    del buf[:len(block)]
                    pos += len(block)
    except Exception as err:
        if _is_http_error(err) or isinstance(err, (ConnectionError, TimeoutError)):
            raise _Fruitless(pos, " ".join(str(err).split())[:160] or type(err).__name__,
                             ignored) from err
        raise
    if pos < size:
        raise _Fruitless(pos, f"the answer ended after {pos:,} of {size:,} bytes", ignored)


def _download(remote: _Remote, part: Path, endpoint: str, what: str,
              on_progress: OnProgress | None) -> None:
    """Download the file's bytes into `part`, going on from the bytes already there, within the
    module's bounds (bytes, room, stall, rate, fruitless tries)."""
    from huggingface_hub.utils import build_hf_headers
    if remote.size is None:
        raise HubError(f"the Hub gives no size for {what}; not pulled (flowkit pulls only files "
                       "whose size it can bound)")
    size = remote.size
    have = part.stat().st_size if part.is_file() else 0
    if have > size:
        part.unlink()                           # longer than the file: not a part of it
        have = 0
    _check_room(part.parent, size - have, what)
    headers = _headers_for(remote.url, endpoint, build_hf_headers())
    headers["Accept-Encoding"] = "identity"     # the bytes as stored (sizes and ranges hold)
    progress = _Progress(on_progress, size, have, Path(what).name)
    try:
        progress.at(have)
        with part.open("r+b" if have else "wb") as f:
            _tries(remote.url, headers, f, have, size, what, progress)
    except _NotTheFile as err:
        part.unlink(missing_ok=True)
        raise HubError(f"{err}; the part deleted, nothing pulled") from None
    except HubError as err:
        if isinstance(err, PullCancelled):
            raise                               # from on_progress: the part is kept
        raise HubError(f"{err}{_kept(part)}") from None
    except OSError as err:                      # the disk (full, gone)
        raise HubError(f"the download of {what} failed writing {part}: "
                       f"{' '.join(str(err).split())[:200]}{_kept(part)}") from None
    finally:
        progress.close()


def _kept(part: Path) -> str:
    got = part.stat().st_size if part.is_file() else 0
    return f"; {got / 1e6:.0f} MB of it kept: pull again to go on from there" if got else ""


def _tries(url: str, headers: dict[str, str], f: Any, have: int, size: int, what: str,
           progress: _Progress) -> None:
    """Try until the part is whole; MAX_FRUITLESS_TRIES in a row adding nothing end the pull."""
    fruitless, ignored = 0, False
    while have < size:                          # a whole part (a pull killed before its
        f.seek(have)                            # check) asks for nothing
        try:
            _try(url, headers, f, have, size, what, progress)
            return
        except _Fruitless as err:
            ignored = ignored or err.ignored
            fruitless = 0 if err.reached > have else fruitless + 1
            have = err.reached
            if fruitless >= MAX_FRUITLESS_TRIES:
                how = (" (it ignores Range requests and closes the connection early)"
                       if ignored else "")
                raise HubError(f"the download of {what} made no progress in "
                               f"{MAX_FRUITLESS_TRIES} tries{how}: {err.why}") from None
        time.sleep(RETRY_WAIT_S)


def pull(repo: str, filename: str, models_dir: Path, *, revision: str | None = None,
         endpoint: str | None = None, on_progress: OnProgress | None = None) -> Pulled:
    """Download `filename` of the Hub repository `repo` into `models_dir`, check its sha256 and
    GGUF header, and return where it is. A file already pulled with the Hub's sha256 is not
    downloaded again; a pull stopped part-way (killed, disconnected, cancelled) goes on from the
    bytes it had; another pull of the same file running now is refused (HubError)."""
    check_request(repo, filename)
    ep = _endpoint(endpoint)
    what = f"{repo}/{filename}"
    target = models_dir / folder_name(repo) / filename
    staging = models_dir / ".download" / folder_name(repo)
    with _ONLINE.opened():
        remote = _remote(repo, filename, revision, ep)
        if target.is_file() and _sha256_of(target) == remote.sha256:
            return Pulled(target, repo, filename, remote.commit, remote.sha256,
                          target.stat().st_size)
        part = staging / f"{filename}.{remote.sha256[:16]}.part"
        part.parent.mkdir(parents=True, exist_ok=True)
        with _only_pull(staging / f"{filename}.lock", what):
            for old in part_files(models_dir, repo, filename):
                if old != part:
                    old.unlink(missing_ok=True)     # a part of a file the Hub no longer serves
            _download(remote, part, ep, what, on_progress)
            _verify(part, remote, what)
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(part, target)
    return Pulled(target, repo, filename, remote.commit, remote.sha256,
                  remote.size or target.stat().st_size)


def _verify(part: Path, remote: _Remote, what: str) -> None:
    """The whole file's sha256 is the Hub's and llama.cpp can read its header; else the part is
    deleted (never resumed) and HubError/ResourceError says why."""
    actual = _sha256_of(part)
    if actual != remote.sha256:
        part.unlink(missing_ok=True)
        raise HubError(f"{what}: the downloaded file's sha256 is {actual[:12]}…, the Hub says "
                       f"{remote.sha256[:12]}…; deleted, nothing pulled (download it again)")
    try:
        inspect_gguf(part)                  # a GGUF that llama.cpp can read, before it is listed
    except ResourceError as err:
        part.unlink(missing_ok=True)
        raise HubError(str(err)) from None  # what the Hub sent: an expected failure, one line
