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


def _ids_held_once(index: Index, files: list[str]) -> list[tuple[str, str]]:
    """The call edges of files whose target is not the string its entity holds: a copy."""
    graph = index.graph
    copies = []
    for rel in files:
        for ent in graph.file_entities(rel):
            for dst in graph.out(CALLS, ent.id):
                target = graph.entity(dst)
                if target is not None and target.id is not dst:
                    copies.append((ent.id, dst))
    return copies


def test_a_warm_start_holds_each_id_once_as_a_cold_build_does(tmp_path: Path) -> None:
    """Each file's part of the cached graph is a pickle of its own, with its own copy of the
    ids its edges lead to: a warm start makes them one string again (so does the resolution
    state loaded for the first edit), and it gives the cold build's sites."""
    root = tmp_path / "repo"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns(".anchor-ls"))
    cache = tmp_path / "cache"
    cold = Index(root, cache_dir=cache)
    cold.build()
    files = cold.graph.files()
    across = [
        (ent.id, dst)
        for rel in files
        for ent in cold.graph.file_entities(rel)
        for dst in cold.graph.out(CALLS, ent.id)
        if dst.partition(":")[0] != rel and cold.graph.entity(dst) is not None
    ]
    assert across  # calls into other files: their ids come from those files' parts
    assert _ids_held_once(cold, files) == []
    cold.close()

    warm = Index(root, cache_dir=cache)
    assert warm.build().reparsed == 0
    assert _ids_held_once(warm, files) == []
    assert {rel: warm.graph.file_sites(rel) for rel in files} == {
        rel: cold.graph.file_sites(rel) for rel in files
    }
    # a new call into another file: its target's id comes from the state loaded for it
    service = root / "pkg" / "service.py"
    text = service.read_text(encoding="utf-8") + "\n\ndef later(item):\n    return price_of(item)\n"
    warm.update_file("pkg/service.py", text)
    [called] = warm.graph.out(CALLS, "pkg/service.py:later")
    assert called == "pkg/pricing.py:price_of"
    assert called is warm.graph.entity(called).id  # type: ignore[union-attr]
    warm.close()


def _many_files_repo(root: Path) -> list[str]:
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("", "utf-8")
    (root / "pkg" / "base.py").write_text("def helper():\n    return 1\n", "utf-8")
    names = [f"pkg/m{i}.py" for i in range(6)]
    for i, rel in enumerate(names):
        (root / rel).write_text(
            f"from pkg.base import helper\n\n\ndef f{i}():\n    return helper()\n", "utf-8"
        )
    return names


def test_a_checkout_right_after_a_warm_start_keeps_the_other_files(tmp_path: Path) -> None:
    """Files changed at once (a checkout) are resolved again with every other file held;
    right after a warm start the binder held none (its engine is loaded lazily), and the
    graph kept the changed files alone (base.py and its callers' edges gone)."""
    root = tmp_path / "repo"
    names = _many_files_repo(root)
    Index(root, cache_dir=tmp_path / "cache", workers=1).build()
    warm = Index(root, cache_dir=tmp_path / "cache", workers=1)
    assert warm.build().reparsed == 0
    for i, rel in enumerate(names):
        (root / rel).write_text(
            f"from pkg.base import helper\n\n\ndef g{i}():\n    return helper() + {i}\n", "utf-8"
        )
    warm.reload_files(names)
    assert sorted(warm.graph.into(CALLS, "pkg/base.py:helper")) == [
        f"pkg/m{i}.py:g{i}" for i in range(6)
    ]
    fresh = Index(root, use_cache=False, workers=1)
    fresh.build()
    assert warm.graph.to_json() == fresh.graph.to_json()
    warm.close()


def test_a_config_that_states_other_roots_moves_the_imports(tmp_path: Path) -> None:
    """pytest's pythonpath added to pyproject.toml makes lib/ a source root: an update of
    Python files alone never read it again, and `from helpers import h` stayed unresolved
    until a rebuild (a server, mcp); a config that states the same roots costs nothing."""
    root = tmp_path / "repo"
    (root / "lib").mkdir(parents=True)
    (root / "lib" / "helpers.py").write_text("def h():\n    return 1\n", "utf-8")
    (root / "app.py").write_text("from helpers import h\n\n\ndef run():\n    return h()\n", "utf-8")
    (root / "pyproject.toml").write_text('[project]\nname = "app"\n', "utf-8")
    index = Index(root, cache_dir=tmp_path / "cache", workers=1)
    index.build()
    assert index.graph.into(CALLS, "lib/helpers.py:h") == []
    (root / "pyproject.toml").write_text('[project]\nname = "app"\n# no roots\n', "utf-8")
    assert index.reload_files(["pyproject.toml"]) == set()  # the same roots: nothing to do
    (root / "pyproject.toml").write_text(
        '[project]\nname = "app"\n\n[tool.pytest.ini_options]\npythonpath = ["lib"]\n', "utf-8"
    )
    index.reload_files(["pyproject.toml"])
    assert index.graph.into(CALLS, "lib/helpers.py:h") == ["app.py:run"]
    fresh = Index(root, use_cache=False, workers=1)
    fresh.build()
    assert index.graph.to_json() == fresh.graph.to_json()
    index.close()
