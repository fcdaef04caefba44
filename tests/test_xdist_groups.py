"""`make test` runs on two pytest-xdist workers with `--dist loadgroup`, counting on
tests/conftest.py's groups: a file's tests on one worker (its module fixtures, a studio or a
model, set up once) and every server's tests on one. Two things broke that silently before: the
conftest's marks came after xdist had read them, and pytest 9.2's node ids drop the group xdist
writes (pytest-xdist#1386; pyproject pins pytest below 9.2). This runs one small file on two
workers and checks that its tests carried their group and ran on one worker."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FILE = "tests/eval/test_questiongen_named.py"


def test_a_files_tests_run_on_one_worker_under_loadgroup():
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadgroup", "-v", "-p",
         "no:cacheprovider", FILE], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    ran = re.findall(r"\[(gw\d)\].*?PASSED (\S+)", out.stdout)
    assert len(ran) >= 5, out.stdout[-3000:]
    assert all(nodeid.endswith(f"@{FILE}") for _, nodeid in ran), ran
    assert len({worker for worker, _ in ran}) == 1, ran
