"""The runtime's user-facing errors quote commands with plain quotes, never backticks: the studio
shows an error's text escaped (studio/common/inert.py), where a backtick would stay on screen as
a literal character instead of marking code."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from flowkit.errors import FlowkitError, NotFoundError, ResourceError
from flowkit.ingest import ingest
from flowkit.runtime import gguf_load, models
from flowkit.runtime.kb import INCOMPLETE
from flowkit.runtime.resources import Resources
from flowkit.testing import HashEmbedder


def _message(call: object, kind: type[FlowkitError]) -> str:
    with pytest.raises(kind) as err:
        call()  # type: ignore[operator]
    return str(err.value)


def test_knowledge_base_errors_quote_the_ingest_command_plainly(tmp_path: Path) -> None:
    res = Resources(tmp_path / "data")
    res.set_embedder(HashEmbedder())
    missing = _message(res.kb("nowhere").require_ready, NotFoundError)
    assert "'flowkit ingest --kb nowhere FILE...'" in missing and "`" not in missing
    doc = tmp_path / "d.txt"
    doc.write_text("The Corren lighthouse keeper kept a log.")
    ingest(res, "half", [doc])
    base = res.kb("half")
    base.update_meta(state=INCOMPLETE)                  # what a killed change leaves
    incomplete = _message(base.require_ready, ResourceError)
    assert "ingest its files again ('flowkit ingest --kb half FILE...')" in incomplete
    assert "`" not in incomplete


def test_a_missing_model_package_says_make_install_plainly(monkeypatch: pytest.MonkeyPatch) -> None:
    gone = models.PackagedModel("gone-1m", "Gone", "gone-model-pkg", "flowkit_no_such_module_x",
                                "none")
    monkeypatch.setitem(models.PACKAGED, gone.id, gone)
    text = _message(lambda: models.packaged_path(gone.id), ResourceError)
    assert "'gone-model-pkg' is not installed; run 'make install'" in text and "`" not in text


def test_a_missing_llama_cpp_says_make_install_plainly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "llama_cpp", None)   # `import llama_cpp` raises ImportError
    text = _message(lambda: gguf_load.load_llama("model.gguf"), ResourceError)
    assert "run 'make install'" in text and "`" not in text
