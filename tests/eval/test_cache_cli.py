"""`flowkit cache stats` / `flowkit cache clear` and `--no-cache` on `flowkit run` and `flowkit eval`."""
from __future__ import annotations

import json


def test_cache_stats_clear_and_no_cache(world, fk):
    q = "Who designed the Corren Lighthouse?"
    code, out, _ = fk("run", str(world.good), "--kb", "test", "-q", q, "--json")
    assert code == 0 and json.loads(out)["totals"]["cached_calls"] == 0
    code, out, _ = fk("run", str(world.good), "--kb", "test", "-q", q, "--json")
    assert json.loads(out)["totals"]["cached_calls"] == 1
    code, out, _ = fk("cache", "stats", "--json")
    stats = json.loads(out)
    assert code == 0 and stats["enabled"] is True and stats["entries"] == 2    # answer + token count
    assert stats["hits"] >= 2 and "prompt" in stats["key_parts"]
    code, out, _ = fk("cache", "stats")
    assert "completion cache" in out and "model file sha256" in out
    code, out, _ = fk("cache", "clear")
    assert code == 0 and "2 entries deleted" in out
    code, out, _ = fk("run", str(world.good), "--kb", "test", "-q", q, "--json", "--no-cache")
    assert json.loads(out)["totals"]["cached_calls"] == 0
    code, out, _ = fk("cache", "stats", "--json")
    assert json.loads(out)["entries"] == 0 and json.loads(out)["enabled"] is False
