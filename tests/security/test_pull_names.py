"""`flowkit models pull` / the Settings page's Pull: a repository or file name that would leave the
models folder (or is no Hub name at all) is refused before anything is fetched or written."""
from __future__ import annotations

import pytest

from flowkit.runtime.hub import HubError, check_request

BAD = [("../../etc", "x.gguf"), ("owner/../name", "x.gguf"), ("owner/name", "../../x.gguf"),
       ("owner/name", "/etc/passwd.gguf"), ("owner/name", "a/../../b.gguf"),
       ("owner/name", "a//b.gguf"), ("owner/name", "./x.gguf"), ("owner/name", "model.bin"),
       ("", "x.gguf"), ("owner/name", ""),
       # issue 47 finding 9: a trailing newline passed the `^...$` pattern (a traceback later)
       ("owner/repo\n", "x.gguf"), ("owner/name", "a\nb.gguf"), ("owner/name", "x\x1b[2J.gguf")]


@pytest.mark.parametrize(("repo", "filename"), BAD)
def test_names_that_leave_the_models_folder_are_refused(repo: str, filename: str) -> None:
    with pytest.raises(HubError) as err:
        check_request(repo, filename)
    assert ("repository" in str(err.value)) or ("file" in str(err.value))


def test_a_plain_name_and_a_file_in_a_subfolder_pass() -> None:
    check_request("ggml-org/gemma-3-1b-it-GGUF", "gemma-3-1b-it-Q4_K_M.gguf")
    check_request("owner/name", "quant/model-Q4.gguf")
