"""Property-based fuzzing of flow files through `flowkit validate` and `flowkit flows import`.

Bytes level: random and mutated bytes of a template's JSON. Structure level: a template's dict with
one value replaced by something hostile (wrong type, huge or invalid text, deep nesting, NaN).
For every input: only the project's typed errors escape, every refusal names a code and a node or
field, a refused file adds nothing to the database, and validate and import agree.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flowkit.names import flaw, name_problem
from flowkit.spec import MAX_STRING
from flowkit.templates import _dir
from flowkit.validate import CODES, errors, validate_bytes, validate_document
from service import cli
from storage.repo import Store

TEMPLATE = (_dir() / "naive_rag.json").read_bytes()
LOOP = (_dir() / "iter_retgen.json").read_bytes()
FUZZ = settings(max_examples=250, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz-flows")


def _rows(store: Store) -> int:
    return sum(len(store.versions(f.name)) for f in store.list_flows())


def check_agreement(raw: bytes, data_dir: Path) -> None:
    """validate and import see the same file the same way; a refusal writes nothing."""
    spec, problems = validate_bytes(raw, "fuzz.json")
    for p in problems:
        assert p.code in CODES, p
        assert p.node or p.field, p
        assert len(p.message) < 1000, p.message[:200]
    rejected = spec is None or bool(errors(problems))
    path = data_dir / "fuzz.json"
    path.write_bytes(raw)
    store = Store(f"sqlite:///{data_dir / 'flowkit.db'}")
    before = _rows(store)
    # a new flow's name also follows the one rule for names (flowkit.names), which the file
    # check does not apply: a flow saved before the rule must still validate and run
    misnamed = spec is not None and name_problem(spec.name) is not None
    rc = cli.main(["--data-dir", str(data_dir), "flows", "import", str(path)])
    after = _rows(store)
    if rejected or misnamed:
        assert rc == 2 and after == before
    else:
        assert rc == 0 and after == before + 1
        assert spec is not None
        exported = json.loads(Store(f"sqlite:///{data_dir / 'flowkit.db'}").get_flow(spec.name)[0]
                              .model_dump_json())                 # strict JSON: no NaN/Infinity
        assert exported["name"] == spec.name
        store.delete_flow(spec.name)


def _mutate(base: bytes, edits: list[tuple[int, int, bytes]]) -> bytes:
    out = bytearray(base)
    for pos, cut, insert in edits:
        pos %= len(out) + 1
        out[pos:pos + cut] = insert
    return bytes(out)


_TOKENS = st.sampled_from([b"\xff", b"\xc3", b"\x00", b"[", b"{", b"]", b"}", b'"', b"\\u",
                           b"\\ud800", b"NaN", b"Infinity", b"-1", b"1e999", b"true", b"null",
                           b",", b":", b"[" * 200, b"9" * 5000, b"\xed\xa0\x80"])
_EDITS = st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 8),
                            st.one_of(_TOKENS, st.binary(max_size=8))), min_size=1, max_size=6)


@FUZZ
@given(base=st.sampled_from([TEMPLATE, LOOP]), edits=_EDITS)
def test_mutated_template_bytes(data_dir: Path, base: bytes, edits: list) -> None:
    check_agreement(_mutate(base, edits), data_dir)


@settings(max_examples=100, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(raw=st.binary(max_size=300))
def test_random_bytes(data_dir: Path, raw: bytes) -> None:
    check_agreement(raw, data_dir)


def _nested(depth: int, leaf: Any = 1) -> Any:
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


#: Names and labels that Rich would read as markup (issue 39 item 3) or as an emoji code.
MARKUP = ["[/]", "[link=https://evil.example/]x[/link]", "[bold red]x", ":smile:", "[/bold]",
          "\\[x]", "x\\", "[red]a[/blue]"]

HOSTILE = st.one_of(
    st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(allow_nan=True),
    st.sampled_from([float("nan"), float("inf"), -float("inf"), "\ud800", "a\udfffb", "",
                     "x" * (MAX_STRING + 1), "é" * 100, [], {}, -1, 0, True, *MARKUP])
    .map(lambda v: v), st.text(max_size=30), st.integers(30, 300).map(_nested),
    st.lists(st.integers(), max_size=3), st.dictionaries(st.text(max_size=5), st.integers(),
                                                         max_size=3))


def _paths(value: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _paths(v, (*prefix, i))
    return out


@FUZZ
@given(base=st.sampled_from([TEMPLATE, LOOP]), data=st.data())
def test_mutated_structure(data_dir: Path, base: bytes, data: st.DataObject) -> None:
    doc = json.loads(base)
    for _ in range(data.draw(st.integers(1, 3))):
        path = data.draw(st.sampled_from(_paths(doc)[1:]))
        parent = doc
        for key in path[:-1]:
            parent = parent[key]
        parent[path[-1]] = data.draw(HOSTILE)
    _, direct = validate_document(doc)                       # the studio's path (a dict)
    for p in direct:
        assert p.code in CODES and (p.node or p.field), p
    raw = json.dumps(doc).encode()                           # NaN/Infinity become bare tokens
    check_agreement(raw, data_dir)
    from_bytes = validate_bytes(raw)
    assert bool(errors(direct)) == bool(errors(from_bytes[1])), (direct, from_bytes[1])


def test_both_outcomes_are_reachable(data_dir: Path) -> None:
    """The properties above see accepted files too: the untouched templates import."""
    for raw in (TEMPLATE, LOOP):
        spec, problems = validate_bytes(raw)
        assert spec is not None and not errors(problems)
        check_agreement(raw, data_dir)
    check_agreement(b"\xff\xfe{}", data_dir)
    assert cli.main(["--data-dir", str(data_dir), "flows", "list"]) == 0


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.one_of(st.sampled_from(MARKUP),
                      st.lists(st.sampled_from([*MARKUP, "a", " ", "[", "]", "=", "/", ":"]),
                               min_size=1, max_size=5).map("".join)))
def test_markup_names_are_refused_on_import_and_listed_as_text(
        data_dir: Path, name: str, capsys: pytest.CaptureFixture[str]) -> None:
    """A markup-bearing flow name breaks the rule for new names (one error line, nothing stored);
    one saved before the rule is listed as those very characters, never read as markup."""
    doc = json.loads(TEMPLATE)
    doc["name"] = name
    check_agreement(json.dumps(doc).encode(), data_dir)
    err = capsys.readouterr().err
    assert "Traceback" not in err and len([x for x in err.splitlines() if "error:" in x]) <= 1
    if flaw(name) is not None or name_problem(name) is None or len(name) > 24:
        return
    store = Store(f"sqlite:///{data_dir / 'flowkit.db'}")
    spec, _ = validate_bytes(TEMPLATE)
    assert spec is not None
    store.save_flow(spec.model_copy(update={"name": name}), None)      # saved before the rule
    try:
        assert cli.main(["--data-dir", str(data_dir), "flows", "list"]) == 0
        out = capsys.readouterr().out
        assert name in out or all(part in out for part in name.split())
    finally:
        store.delete_flow(name)
