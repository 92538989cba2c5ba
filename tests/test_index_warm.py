"""A warm start serves the cached graph at once and loads the binder only on the first edit."""

from __future__ import annotations

import shutil
from pathlib import Path

from anchor_ls.index import CALLS, Index

EXAMPLE = Path(__file__).resolve().parent.parent / "fixtures" / "example"


def test_warm_start_then_edit_matches_a_fresh_build(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns(".anchor-ls"))
    cache = tmp_path / "cache"
    cold = Index(root, cache_dir=cache)
    cold.build()
    cold_json = cold.graph.to_json()
    cold_stats = cold.stats()
    cold.close()

    warm = Index(root, cache_dir=cache)
    stats = warm.build()
    assert stats.reparsed == 0
    assert warm.graph.to_json() == cold_json
    assert (stats.call_sites, stats.resolved_binder, stats.files) == (
        cold_stats.call_sites,
        cold_stats.resolved_binder,
        cold_stats.files,
    )
    assert "pkg/service.py:quick_checkout" in warm.graph.into(CALLS, "pkg/service.py:checkout")

    # The first edit after a warm start loads the resolution state from the cache.
    service = root / "pkg" / "service.py"
    text = service.read_text(encoding="utf-8").replace(
        "def quick_checkout(", "def quick_checkout_renamed("
    )
    service.write_text(text, encoding="utf-8")
    changed = warm.update_file("pkg/service.py", text)
    assert "pkg/service.py" in changed
    assert warm.source("pkg/service.py") == text.encode("utf-8")
    assert warm.stats().reparsed == 0  # the saved state was loaded, not rebuilt from disk
    callers = warm.graph.into(CALLS, "pkg/service.py:checkout")
    assert "pkg/service.py:quick_checkout_renamed" in callers
    assert "pkg/service.py:quick_checkout" not in callers
    warm.close()

    fresh = Index(root, use_cache=False)
    fresh.build()
    assert warm.graph.to_json() == fresh.graph.to_json()
