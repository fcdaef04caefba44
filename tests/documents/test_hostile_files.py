"""Hostile and broken files: each is exactly one DocumentError naming the file (and the member of a
zip), found quickly, with nothing written to the knowledge base and nothing fetched."""
from __future__ import annotations

import io
import re
import socket
import struct
import time
import zipfile
from collections.abc import Callable
from pathlib import Path

import docx
import pytest

from flowkit.documents import archive
from flowkit.documents.read import read_files
from flowkit.errors import DocumentError
from flowkit.ingest import ingest
from flowkit.testing import HashEmbedder


def _zip(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(zipfile.ZipInfo(name), data, compress_type=zipfile.ZIP_DEFLATED)
    return path


def _lie_about_size(path: Path, size: int) -> Path:
    """Rewrite the unpacked size every header of the zip declares (local and central)."""
    raw = bytearray(path.read_bytes())
    for sig, at in ((b"PK\x03\x04", 22), (b"PK\x01\x02", 24)):
        for found in re.finditer(re.escape(sig), bytes(raw)):
            struct.pack_into("<I", raw, found.start() + at, size)
    path.write_bytes(bytes(raw))
    return path


def _declared_bomb(tmp: Path) -> Path:
    """A zip whose member declares 2 GB of zeros (its directory lies; what it holds is small)."""
    return _lie_about_size(_zip(tmp / "bomb.zip", {"zeros.txt": b"\0" * 4096}), 2 << 30)


def _packed_bomb(tmp: Path) -> Path:
    """A true 64 MB of zeros packed into ~64 KB (1000 times), under every size bound."""
    path = tmp / "ratio.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf, \
            zf.open("zeros.html", "w") as fh:
        block = b"\0" * (1 << 20)
        for _ in range(64):
            fh.write(block)
    return path


def _lying_small(tmp: Path) -> Path:
    """A member that declares 100 bytes and holds 8 MB: read bounded, it cannot unpack."""
    return _lie_about_size(_zip(tmp / "liar.zip", {"a.txt": b"a" * (8 << 20)}), 100)


def _named(name: str) -> Callable[[Path], Path]:
    def make(tmp: Path) -> Path:
        return _zip(tmp / "evil.zip", {"ok.txt": b"fine", name: b"overwrite me"})
    return make


def _not_a_pdf(tmp: Path) -> Path:
    path = tmp / "report.pdf"
    path.write_bytes(b"<html>this is a web page saved as .pdf</html>")
    return path


def _huge_text(tmp: Path) -> Path:
    path = tmp / "huge.txt"
    with path.open("wb") as fh:            # sparse: no disk used, and never read
        fh.truncate(1 << 30)
    return path


def _not_a_docx(tmp: Path) -> Path:
    path = tmp / "letter.docx"
    path.write_bytes(b"\xd0\xcf\x11\xe0 an old binary .doc renamed")
    return path


def _zip_not_docx(tmp: Path) -> Path:
    return _zip(tmp / "letter.docx", {"hello.txt": b"a zip, but not a Word package"})


CASES = {
    "declared bomb": (_declared_bomb, r"bomb.zip: member 'zeros.txt': unpacks to more than"),
    "packed bomb": (_packed_bomb, r"ratio.zip: member 'zeros.html': unpacks to 67,108,864 "
                                  r"bytes from [\d,]+, more than 100 times"),
    "lying header": (_lying_small, r"liar.zip: member 'a.txt': cannot unpack it"),
    "dot dot": (_named("../evil.txt"), r"evil.zip: member '../evil.txt': '..' in its path"),
    "absolute": (_named("/etc/evil.txt"), r"evil.zip: member '/etc/evil.txt': an absolute path"),
    "drive": (_named("C:/evil.txt"), r"evil.zip: member 'C:/evil.txt': an absolute path"),
    "backslash": (_named("..\\evil.txt"), r"evil.zip: member '..\\evil.txt': a backslash"),
    "not a pdf": (_not_a_pdf, r"report.pdf: .*not a PDF"),
    "1 GB text": (_huge_text, r"huge.txt: 1,073,741,824 bytes is more than one ingest takes"),
    "not a docx": (_not_a_docx, r"letter.docx: not a Word .docx file"),
    "zip not docx": (_zip_not_docx, r"letter.docx: not a readable Word .docx file"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_hostile_file_is_one_error_naming_it(tmp_path: Path, case: str) -> None:
    make, message = CASES[case]
    path = make(tmp_path)
    started = time.monotonic()
    with pytest.raises(DocumentError) as caught:
        read_files([path])
    assert time.monotonic() - started < 5, "refused, but not quickly"
    assert re.match(message, str(caught.value).replace(str(path.parent) + "/", "")), \
        str(caught.value)
    assert caught.value.path == path and "\n" not in str(caught.value)


def test_too_many_members_or_too_much_in_all_is_refused(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    path = _zip(tmp_path / "many.zip", {f"{i}.txt": b"x" * 2000 for i in range(5)})
    monkeypatch.setattr(archive, "MAX_ARCHIVE_FILES", 4)
    with pytest.raises(DocumentError, match=r"many.zip: 5 members; at most 4"):
        read_files([path])
    monkeypatch.setattr(archive, "MAX_ARCHIVE_FILES", 10)
    monkeypatch.setattr(archive, "MAX_ZIP_BYTES", 9000)
    with pytest.raises(DocumentError, match=r"many.zip: its members unpack to more than 9,000"):
        read_files([path])


def test_a_hostile_file_writes_nothing_to_the_knowledge_base(tmp_path: Path) -> None:
    from flowkit.runtime.resources import Resources
    res = Resources(tmp_path / "data")
    res.set_embedder(HashEmbedder())
    good = tmp_path / "good.txt"
    good.write_text("A good file read before the bad one.", encoding="utf-8")
    with pytest.raises(DocumentError, match="evil.zip"):
        ingest(res, "kb", [good, _named("../evil.txt")(tmp_path)])
    assert "kb" not in res.kb_names()


def _docx_with_external_links(path: Path) -> Path:
    """A Word file whose relationships point at http://127.0.0.1:9/ (a hyperlink, an attached
    template and an image linked by URL), as a hostile or careless author may leave them."""
    word = docx.Document()
    word.add_heading("Linked", level=1)
    word.add_paragraph("Text beside external links.")
    out = io.BytesIO()
    word.save(out)
    extra = ('<Relationship Id="rIdX1" Type="http://schemas.openxmlformats.org/officeDocument/'
             '2006/relationships/hyperlink" Target="http://127.0.0.1:9/x" TargetMode="External"/>'
             '<Relationship Id="rIdX2" Type="http://schemas.openxmlformats.org/officeDocument/'
             '2006/relationships/attachedTemplate" Target="http://127.0.0.1:9/t.dotm" '
             'TargetMode="External"/>'
             '<Relationship Id="rIdX3" Type="http://schemas.openxmlformats.org/officeDocument/'
             '2006/relationships/image" Target="http://127.0.0.1:9/i.png" TargetMode="External"/>')
    with zipfile.ZipFile(out) as src, zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            data = src.read(info)
            if info.filename in ("word/_rels/document.xml.rels", "word/_rels/settings.xml.rels"):
                data = data.replace(b"</Relationships>", extra.encode() + b"</Relationships>")
            dst.writestr(info, data)
        if "word/_rels/settings.xml.rels" not in src.namelist():
            dst.writestr("word/_rels/settings.xml.rels",
                         '<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships '
                         'xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
                         f'{extra}</Relationships>')
    return path


def test_a_docx_with_external_links_is_read_without_fetching_them(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tried: list[object] = []

    def no_network(self: socket.socket, address: object) -> None:
        tried.append(address)
        raise OSError("no network in this test")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(socket.socket, "connect_ex", no_network)
    path = _docx_with_external_links(tmp_path / "linked.docx")
    [doc] = read_files([path])
    assert doc.sections[0].path == ("Linked",)
    assert doc.text == "Text beside external links."
    assert tried == []
