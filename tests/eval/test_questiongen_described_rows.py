"""Questions from tables whose rows are described rather than named (`questiongen.described_rows`):
a file format's fields keyed by offset, a format string's codes with their meaning. The tables are
made up for these tests and laid out as the structure-aware chunker writes one."""
from __future__ import annotations

from flowkit.eval.questiongen import candidates as C
from flowkit.eval.questiongen import described_rows as D
from flowkit.eval.questiongen import table_kind as K
from flowkit.eval.questiongen import tables as T

HEADER_TABLE = (
    "Archive Header Format\n"
    "Offset | Size | Description\n"
    "0 | 8 | The magic string of the archive. Always the same eight bytes.\n"
    "8 | 4 | The block size in bytes. Must be a power of two.\n"
    "12 | 4 | Reserved for expansion. Must be zero.\n"
    "16 | 4 | Reserved for expansion. Must be zero.\n"
    "20 | 2 | The number of entries in the directory that follows the header.")

CODES = (
    "Escape | Meaning\n"
    "b | The argument is shown in binary with a leading zero bit.\n"
    "o | The argument is shown in octal without a prefix.\n"
    "x, X | The argument is shown in hexadecimal, lower or upper case.")


def passage(text: str, section: str = "3 File Layout > 3.1 The Header") -> C.Passage:
    meta = {"doc_id": "guide", "source": "guide.pdf", "section": section, "section_id": "s3",
            "page_start": 7, "page_end": 7, "kind": "table"}
    return C.Passage("guide#9", "guide", "Guide > " + section.split(" > ")[-1], text, meta)


def asked(p: C.Passage) -> dict[str, str]:
    t = T.passage_table(p)
    assert t is not None
    return {c.question: c.answer for c in D.described_candidates(p, t)}


def test_offset_keyed_rows_are_asked_by_their_description_with_the_table_named():
    got = asked(passage(HEADER_TABLE))
    q = 'In the "Archive Header Format" table, what is the {} of "{}"?'
    assert got[q.format("offset", "The block size in bytes")] == "8"
    assert got[q.format("size", "The block size in bytes")] == "4"
    assert got[q.format("size", "The magic string of the archive")] == "8"
    assert got[q.format("offset", "The number of entries in the directory that follows the "
                                  "header")] == "20"
    # two rows start with the same sentence: neither names one row, neither is asked
    assert not any("Reserved for expansion" in k for k in got)
    # the description column itself is never an answer
    assert not any(k.startswith(('In the "Archive Header Format" table, what is the description',))
                   for k in got)
    assert len(got) == 6


def test_a_code_is_asked_by_its_meaning_and_the_section_names_an_uncaptioned_table():
    got = asked(passage(CODES, section="4 Formatting > 4.2 Escapes"))
    assert got['In the "Escapes" section, what is the escape of "The argument is shown in binary '
               'with a leading zero bit"?'] == "b"
    assert got['In the "Escapes" section, what is the escape of "The argument is shown in '
               'hexadecimal, lower or upper case"?'] == "x, X"
    # a key-by-name table keeps its own questions too, none of them twice
    found = list(K.candidates([passage(CODES, section="4 Formatting > 4.2 Escapes")], seed=1))
    assert len({c.question for c in found}) == len(found) and found


def test_tables_with_short_cells_only_are_not_described():
    plain = "Name | Storage Size\nsmallint | 2 bytes\ninteger | 4 bytes\nbigint | 8 bytes"
    t = T.passage_table(passage(plain))
    assert t is not None and D.description_column(t) is None
    assert D.described_candidates(passage(plain), t) == []


def test_a_descriptor_is_the_first_sentence_within_bounds():
    assert D.descriptor("File format read version. 1 for legacy; 2 for WAL.") == \
        "File format read version"
    assert D.descriptor("Unused.") is None                          # too short to name a row
    assert D.descriptor(" ".join(["word"] * 20) + ".") is None      # too long to be a name
    assert D.descriptor('The header string: "format 3".') is None   # quotes would nest
