"""The grid repairs of flowkit.documents.pdf_tables, on the shape pdfplumber gave for the SQLite
manual's NULL-handling chart printed by Chromium: page 2 held the rest of the first table and a
second table with its own header, on other column lines, in one grid of 11 columns."""
from __future__ import annotations

from flowkit.documents.pdf_tables import merge_spacer_columns, repair, split_stacked

# page 2 of the chart as pdfplumber found it (cells cleaned, all-empty columns already dropped)
PAGE2 = [
    ["distinct in UNIQUE", "Yes", "Yes", "", "Yes", "No", "", "(Note 4)", "", "No", "Yes"],
    ["distinct in UNION", "No", "No", "", "No", "No", "", "No", "", "No", "No"],
    ["", "", "", "MySQL 3", "MySQL 4", "", "Firebird", "", "Anywhere", "", "Interbase"],
    ["adding null", "", "", "Yes", "Yes", "", "Yes", "", "Yes", "", "Yes"],
    ["distinct in UNION", "", "", "(Note 3)", "No", "", "No (Note 1)", "", "No", "", "No"],
]


def test_a_second_table_stacked_in_one_grid_is_cut_at_its_header_row():
    parts = split_stacked(PAGE2)
    assert [len(p) for p in parts] == [2, 3]
    assert parts[1][0][3] == "MySQL 3"


def test_each_stacked_table_gets_its_own_columns_back():
    first, second = repair(PAGE2)
    assert first == [["distinct in UNIQUE", "Yes", "Yes", "Yes", "No", "(Note 4)", "No", "Yes"],
                     ["distinct in UNION", "No", "No", "No", "No", "No", "No", "No"]]
    assert second[0] == ["", "MySQL 3", "MySQL 4", "Firebird", "Anywhere", "Interbase"]
    assert second[2] == ["distinct in UNION", "(Note 3)", "No", "No (Note 1)", "No", "No"]


def test_a_row_with_an_empty_first_cell_in_the_same_columns_does_not_start_a_table():
    rows = [["", "A", "B"], ["k1", "1", "2"], ["", "3", "4"], ["k2", "5", "6"]]
    assert split_stacked(rows) == [rows]


def test_check_mark_columns_that_no_row_fills_both_stay_two_columns():
    rows = [["feature", "Yes", "No"], ["a", "x", ""], ["b", "", "x"]]
    assert merge_spacer_columns(rows) == rows


def test_an_ordinary_table_is_left_as_it_is():
    rows = [["Name", "Type", "Size"], ["bigint", "int8", "8 bytes"], ["text", "", "variable"]]
    assert repair(rows) == [rows]


def test_a_short_title_centred_over_a_table_becomes_its_caption_a_sentence_does_not():
    from flowkit.documents.pdf_layout import Line, PageTable, take_caption

    def table() -> PageTable:
        return PageTable([["Offset", "Size"], ["0", "16"]], top=120, bottom=200, pages=[2],
                         x0=100, x1=500)
    title = Line("Database Header Format", 100, 110, 10, False, 2, x0=240, x1=360)
    t = table()
    assert take_caption([title], t) == [] and t.caption == "Database Header Format"
    sentence = Line("The header is laid out as follows:", 100, 110, 10, False, 2, x0=240, x1=360)
    t = table()
    assert take_caption([sentence], t) == [sentence] and t.caption == ""
    left = Line("Database Header Format", 100, 110, 10, False, 2, x0=100, x1=220)
    t = table()
    assert take_caption([left], t) == [left] and t.caption == ""
