"""Where the files to read come from: a file, a folder walked for files, or a .zip's members.

A folder or a zip is read as a set of files: walked recursively, in sorted order, hidden files and
folders (a name starting with '.') left out, a file whose type no reader takes skipped (and counted),
a folder or zip holding no file to read refused. Each file's `source` is its path below the root
with the root's name in front ('site/ch1/intro.html', 'docs.zip/a.html'); its document id is that
source without its suffix, made unique within the folder or zip ('site/ch1/intro').

What is refused, each as one DocumentError naming the file (a zip and its member), before any
reader runs, and with nothing written anywhere:

- a file larger than MAX_FILE_BYTES (by its size, without reading it);
- a zip with more than MAX_ARCHIVE_FILES members, or whose members would unpack to more than
  MAX_ZIP_BYTES, or a member that unpacks to more than MAX_ZIP_RATIO times its packed size (a zip
  bomb): the sizes its directory declares are checked first, and every member is then read with a
  bounded read that counts what it really unpacks to;
- a member named with '..', an absolute path, a drive letter or a backslash (it would point out of
  the archive if anything unpacked it; nothing here does), and an encrypted member.

Not opened, only skipped: a zip inside a zip, a link stored in a zip, a symbolic link in a folder
that points out of it (a link to a folder is never followed), and anything that is not a regular
file (a FIFO, a device).

The bounds of what one document may hold (MAX_DOC_CHARS) live here too, beside the bounds on the
bytes, so that every reader refuses the same sizes.
"""
from __future__ import annotations

import os
import re
import stat
import zipfile
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from ..errors import DocumentError, short

#: Longest text in one document, in characters (the bound is there to stop hostile input only).
MAX_DOC_CHARS = 20_000_000
#: One file read from disk or unpacked from a zip; a larger corpus: split it into files.
MAX_FILE_BYTES = 512 * 1024 * 1024
#: A .txt or .md file larger than this cannot hold at most MAX_DOC_CHARS characters (UTF-8 spends
#: at most 4 bytes on one), so it is refused by its size before a byte is read.
MAX_TEXT_BYTES = 4 * MAX_DOC_CHARS
#: Files read from one folder or zip (members of a zip, readable or not).
MAX_ARCHIVE_FILES = 10_000
#: What the members of one zip may unpack to, all together.
MAX_ZIP_BYTES = 1024 * 1024 * 1024
#: How many times its packed size a member may unpack to (text packs 3-10 times; zeros 1000).
MAX_ZIP_RATIO = 100
#: Members smaller than this are not held to MAX_ZIP_RATIO (a tiny file can pack very well).
RATIO_FLOOR_BYTES = 1024 * 1024
#: A bounded read takes this many bytes at a time.
READ_STEP = 1024 * 1024

_DRIVE = re.compile(r"^[A-Za-z]:")


@dataclass(frozen=True)
class Place:
    """Where one file to read lies and how it is named.

    `path`: the file on disk that an error names (for a zip's member, the zip itself); `member`:
    the member's name inside that zip ('' for a file on disk); `source`: the file as its user
    names it ('notes.txt', 'site/ch1/intro.html', 'docs.zip/a.html'); `doc_id`: the id of the
    document it holds (a reader of several documents per file derives theirs from it)."""

    path: Path
    source: str
    doc_id: str
    member: str = ""

    @property
    def suffix(self) -> str:
        return PurePosixPath(self.source).suffix.lower()

    @property
    def stem(self) -> str:
        """The file's name without its suffix ('intro' for 'site/ch1/intro.html')."""
        return PurePosixPath(self.source).stem

    def error(self, reason: str, line: int | None = None) -> DocumentError:
        """The DocumentError of this file: the file and line, or the zip, member and line."""
        if not self.member:
            return DocumentError(self.path, reason, line)
        at = f", line {line}" if line is not None else ""
        return DocumentError(self.path, f"member '{short(self.member)}'{at}: {reason}")

    def where(self, line: int | None) -> str:
        """How a later message points back here ('docs.jsonl:3', 'site/a.html')."""
        return f"{self.source}:{line}" if line is not None else self.source


@dataclass(frozen=True)
class Walk:
    """The files of a folder or zip to read, in order, and how many others were skipped."""

    places: tuple[Place, ...]
    skipped: int


def file_place(path: Path) -> Place:
    """The place of a file given on its own: named by its file name, its id its stem."""
    return Place(path, path.name, path.stem)


def check_size(path: Path, size: int, suffix: str) -> None:
    """Refuse a file by its size alone: MAX_FILE_BYTES, or MAX_TEXT_BYTES for .txt and .md."""
    if size > MAX_FILE_BYTES:
        raise DocumentError(path, f"{size:,} bytes is more than one ingest takes "
                                  f"({MAX_FILE_BYTES:,}); split it into smaller files")
    if suffix in (".txt", ".md") and size > MAX_TEXT_BYTES:
        raise DocumentError(path, f"{size:,} bytes of text is more than one document holds "
                                  f"(at most {MAX_DOC_CHARS:,} characters); split it into "
                                  f"smaller files")


def check_chars(place: Place, chars: int) -> None:
    """Refuse a document whose text is longer than MAX_DOC_CHARS characters."""
    if chars > MAX_DOC_CHARS:
        raise place.error(f"its text is {chars:,} characters, more than one document holds "
                          f"({MAX_DOC_CHARS:,}); split it into smaller files")


def unique_ids(sources: Iterable[str]) -> list[str]:
    """Each source without its suffix; a repeat gets '-2', '-3', ... ('a.md', 'a.txt' -> 'a',
    'a-2')."""
    out: list[str] = []
    taken: set[str] = set()
    for source in sources:
        stem = str(PurePosixPath(source).with_suffix("")) if PurePosixPath(source).suffix \
            else source
        doc_id, n = stem, 1
        while doc_id in taken:
            n += 1
            doc_id = f"{stem}-{n}"
        taken.add(doc_id)
        out.append(doc_id)
    return out


# ---- folders ----------------------------------------------------------------------------------
def walk_folder(root: Path, readable: Callable[[str], bool]) -> Walk:
    """The files below `root` that a reader takes (`readable(suffix)`), sorted by their path.

    Hidden files and folders are left out; links to folders are not followed; a link to a file
    is read only when it resolves inside `root`; only regular files are read."""
    base = root.resolve()
    name = base.name or "folder"
    found: list[tuple[tuple[str, ...], Path]] = []
    skipped = 0
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for fname in filenames:
            if fname.startswith("."):
                continue
            full = Path(dirpath) / fname
            if not (_inside(full, base) and _regular(full) and readable(full.suffix.lower())):
                skipped += 1
                continue
            found.append((full.relative_to(root).parts, full))
            if len(found) > MAX_ARCHIVE_FILES:
                raise DocumentError(root, f"more than {MAX_ARCHIVE_FILES:,} files to read; "
                                          f"ingest it in parts")
    found.sort()
    sources = [f"{name}/{'/'.join(parts)}" for parts, _ in found]
    places = tuple(Place(full, source, doc_id) for (_, full), source, doc_id
                   in zip(found, sources, unique_ids(sources)))
    return Walk(places, skipped)


def _inside(path: Path, base: Path) -> bool:
    """Whether `path` (a link: what it points to) lies in `base`."""
    if not path.is_symlink():
        return True
    try:
        return path.resolve(strict=True).is_relative_to(base)
    except (OSError, RuntimeError):     # a dangling link or a loop
        return False


def _regular(path: Path) -> bool:
    try:
        return stat.S_ISREG(path.stat().st_mode)
    except OSError:
        return False


# ---- zips -------------------------------------------------------------------------------------
def open_zip(path: Path) -> zipfile.ZipFile:
    """The zip at `path`, or DocumentError when it is not one."""
    try:
        return zipfile.ZipFile(path)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, ValueError) as err:
        raise DocumentError(path, f"not a readable zip archive ({short(str(err))})") from None


def check_zip(path: Path, archive: zipfile.ZipFile) -> None:
    """Refuse a zip by what its directory declares: too many members, too much unpacked in all,
    a member packed too well, a member's name that points out of it, an encrypted member."""
    infos = archive.infolist()
    if len(infos) > MAX_ARCHIVE_FILES:
        raise DocumentError(path, f"{len(infos):,} members; at most {MAX_ARCHIVE_FILES:,} are "
                                  f"read from one zip")
    total = 0
    for info in infos:
        if why := unsafe_name(info.filename):
            raise DocumentError(path, f"member '{short(info.filename)}': {why}")
        if info.flag_bits & 0x1:
            raise DocumentError(path, f"member '{short(info.filename)}': it is encrypted")
        _check_ratio(path, info.filename, info.file_size, info.compress_size)
        total += info.file_size
        if total > MAX_ZIP_BYTES:
            raise DocumentError(path, f"its members unpack to more than {MAX_ZIP_BYTES:,} bytes "
                                      f"(a zip bomb?); split it into smaller zips")


def unsafe_name(name: str) -> str:
    """Why a member's name could point out of the archive ('' when it cannot)."""
    if "\\" in name:
        return "a backslash in its name; name members with '/'"
    if name.startswith("/") or _DRIVE.match(name):
        return "an absolute path; members are named relative to the archive"
    if ".." in name.split("/"):
        return "'..' in its path points out of the archive"
    return ""


def _check_ratio(path: Path, member: str, unpacked: int, packed: int) -> None:
    if unpacked > MAX_FILE_BYTES:
        raise DocumentError(path, f"member '{short(member)}': unpacks to more than "
                                  f"{MAX_FILE_BYTES:,} bytes (a zip bomb?)")
    if unpacked > RATIO_FLOOR_BYTES and unpacked > MAX_ZIP_RATIO * max(packed, 1):
        raise DocumentError(path, f"member '{short(member)}': unpacks to {unpacked:,} bytes "
                                  f"from {packed:,}, more than {MAX_ZIP_RATIO} times (a zip "
                                  f"bomb?)")


def walk_zip(path: Path, archive: zipfile.ZipFile, root: str,
             readable: Callable[[str], bool]) -> Walk:
    """The members of a checked zip that a reader takes, sorted by name, each named
    '<root>/<member>'. Folders, hidden files, links and zips inside it are skipped."""
    chosen: list[str] = []
    skipped = 0
    for info in archive.infolist():
        if info.is_dir():
            continue
        parts = info.filename.split("/")
        if any(p.startswith(".") for p in parts if p):
            continue
        suffix = PurePosixPath(info.filename).suffix.lower()
        if _is_link(info) or suffix == ".zip" or not readable(suffix):
            skipped += 1
            continue
        chosen.append(info.filename)
    chosen.sort()
    sources = [f"{root}/{m}" for m in chosen]
    return Walk(tuple(Place(path, s, i, member=m)
                      for m, s, i in zip(chosen, sources, unique_ids(sources))), skipped)


def _is_link(info: zipfile.ZipInfo) -> bool:
    return stat.S_ISLNK(info.external_attr >> 16)


class MemberReader:
    """Reads members of one checked zip, counting what they really unpack to against
    MAX_ZIP_BYTES (all together) and MAX_FILE_BYTES / MAX_ZIP_RATIO (each)."""

    def __init__(self, path: Path, archive: zipfile.ZipFile) -> None:
        self.path, self.archive, self.unpacked = path, archive, 0

    def read(self, place: Place) -> bytes:
        info = self.archive.getinfo(place.member)
        limit = MAX_TEXT_BYTES if place.suffix in (".txt", ".md") else MAX_FILE_BYTES
        try:
            data = b"".join(self._chunks(place, info, limit))
        except (zipfile.BadZipFile, zlib.error, EOFError, OSError, NotImplementedError) as err:
            raise place.error(f"cannot unpack it ({short(str(err))})") from None
        return data

    def _chunks(self, place: Place, info: zipfile.ZipInfo, limit: int) -> Iterator[bytes]:
        got = 0
        with self.archive.open(info) as fh:
            while chunk := fh.read(READ_STEP):
                got += len(chunk)
                self.unpacked += len(chunk)
                if got > limit:
                    raise place.error(f"unpacks to more than {limit:,} bytes; split it")
                if self.unpacked > MAX_ZIP_BYTES:
                    raise DocumentError(self.path, f"its members unpack to more than "
                                                   f"{MAX_ZIP_BYTES:,} bytes (a zip bomb?)")
                if got > RATIO_FLOOR_BYTES and got > MAX_ZIP_RATIO * max(info.compress_size, 1):
                    raise place.error(f"unpacks to more than {MAX_ZIP_RATIO} times its packed "
                                      f"size (a zip bomb?)")
                yield chunk
