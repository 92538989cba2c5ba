"""The index commands of the CLI (index, graph, callers, callees), run as real processes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from anchor_ls.index import CALLS, Index
from anchor_ls.index.via import VIA_KINDS

EXAMPLE = Path(__file__).resolve().parent.parent / "fixtures" / "example"


def run(*args: str, seed: str = "0") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONHASHSEED": seed}
    return subprocess.run(
        [sys.executable, "-m", "anchor_ls", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "example"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns(".anchor-ls", "__pycache__"))
    return root


def test_graph_json_is_byte_identical_across_hash_seeds_and_sorted(
    repo: Path, tmp_path: Path
) -> None:
    first = run("graph", str(repo), "--json", "--cache", str(tmp_path / "c1"), seed="1")
    second = run("graph", str(repo), "--json", "--cache", str(tmp_path / "c2"), seed="4242")
    warm = run("graph", str(repo), "--json", "--cache", str(tmp_path / "c2"), seed="7")
    assert first.returncode == second.returncode == warm.returncode == 0, first.stderr
    assert first.stdout == second.stdout == warm.stdout
    assert first.stderr == second.stderr == ""
    data = json.loads(first.stdout)
    assert list(data) == ["root", "entities", "edges"]
    assert data["root"] == str(repo.resolve())
    ids = [e["id"] for e in data["entities"]]
    assert ids == sorted(ids) and len(ids) == len(set(ids))
    edges = [(e["kind"], e["src"], e["dst"]) for e in data["edges"]]
    assert edges == sorted(edges) and len(edges) == len(set(edges))
    assert {e["kind"] for e in data["edges"]} == {
        *("calls", "inherits", "imports", "contains", "overrides"),
        *("references", "env_var", "const_ref", "config_usage", "test_ref"),
    }
    for entity in data["entities"]:
        assert {"id", "kind", "path", "line", "end_line"} <= set(entity)
        fields = {"id", "kind", "path", "line", "end_line", "unresolved", "external"}
        assert set(entity) <= fields
        # outside the repository (the standard library's `sys.exit`): said, path absolute
        external = entity["id"].startswith("ext:")
        assert entity.get("external", False) == external == Path(entity["path"]).is_absolute()
        assert entity.get("unresolved", 1) > 0  # omitted when 0
    for edge in data["edges"]:
        assert ("via" in edge) == (edge["kind"] == "calls"), edge
        assert edge.get("via", "name") in VIA_KINDS
    index = Index(repo, use_cache=False)
    index.build()
    assert data == json.loads(json.dumps(index.graph.to_json()))


def listed(output: str) -> list[str]:
    """The ids a callers/callees answer lists: each line starts with one (deeper levels
    indented)."""
    return [line.split()[0] for line in output.splitlines() if line.strip()]


def test_callers_by_suffix_and_by_full_id(repo: Path) -> None:
    by_suffix = run("callers", "checkout", str(repo))
    by_id = run("callers", "pkg/service.py:checkout", str(repo))
    assert by_suffix.returncode == by_id.returncode == 0, by_suffix.stderr
    assert by_suffix.stdout == by_id.stdout
    names = listed(by_id.stdout)
    # the code under test first, then test code (marked), each sorted
    assert names == [
        "pkg/service.py:CheckoutService.run",
        "pkg/service.py:quick_checkout",
        "tests/test_service.py:test_checkout_saves_and_charges",
        "tests/test_service.py:test_unknown_sku_is_rejected",
    ]
    index = Index(repo, use_cache=False)
    index.build()
    assert set(names) == set(index.graph.into(CALLS, "pkg/service.py:checkout"))
    # Each caller is followed by the file, line and text of its call.
    for line in by_id.stdout.splitlines():
        caller, where = line.split("\t")
        path, lineno, text = where.split(":", 2)
        assert caller.split()[0].startswith(path + ":")
        source = (repo / path).read_text(encoding="utf-8").splitlines()
        assert "checkout(" in text and source[int(lineno) - 1].strip() == text.strip()
    assert by_id.stdout.splitlines()[2].endswith(
        ' (test)\ttests/test_service.py:17: order = checkout(["apple", "pear"], repo, no_discount)'
    )


def test_callers_lists_every_call_line_of_a_caller(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("")
    calls = "\n".join(f"    ping({i})" for i in range(5))
    (root / "pkg" / "m.py").write_text(
        f"def ping(n):\n    return n\n\n\ndef busy():\n{calls}\n\n\ndef once():\n    ping(9)\n"
    )
    done = run("callers", "ping", str(root), "--cache", str(tmp_path / "c"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "pkg/m.py:busy [name]\tpkg/m.py:6, 7, 8, 9, 10: ping(0)",
        "pkg/m.py:once [name]\tpkg/m.py:14: ping(9)",
    ]


def test_the_call_line_shown_is_the_line_called_from_past_form_feeds(tmp_path: Path) -> None:
    # Python counts lines at \n alone; str.splitlines() also splits at \f and U+2028
    root = tmp_path / "repo"
    root.mkdir()
    (root / "m.py").write_text(
        "def ping():\n    pass\n\f\n# \u2028 \x1c\ndef busy():\n    x = 1\n    ping()\n",
        encoding="utf-8",
    )
    done = run("callers", "ping", str(root), "--cache", str(tmp_path / "c"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["m.py:busy [name]\tm.py:7: ping()"]


def test_callers_and_callees_say_when_there_are_none(repo: Path) -> None:
    cache = ["--cache", str(repo.parent / "c")]
    nobody = run("callers", "test_empty_order_is_rejected", str(repo), *cache)
    assert nobody.returncode == 0, nobody.stderr
    assert nobody.stdout == "no callers of tests/test_service.py:test_empty_order_is_rejected\n"
    nothing = run("callees", "Order.is_empty", str(repo), *cache)
    assert nothing.returncode == 0
    assert nothing.stdout == "no callees of pkg/models.py:Order.is_empty\n"


def test_callees_of_a_method_by_suffix(repo: Path) -> None:
    done = run("callees", "CheckoutService.run", str(repo))
    assert done.returncode == 0, done.stderr
    names = listed(done.stdout)
    assert "pkg/service.py:checkout" in names
    assert "pkg/service.py:CheckoutService.report" in names


def test_a_suffix_matching_several_entities_is_refused_with_the_candidates(repo: Path) -> None:
    done = run("callers", "total", str(repo))
    assert done.returncode == 1
    assert done.stdout == ""
    assert "'total' is ambiguous" in done.stderr
    assert "  pkg/models.py:LineItem.total\n  pkg/models.py:Order.total" in done.stderr


def test_unknown_target_exits_1_with_a_message(repo: Path) -> None:
    done = run("callers", "no_such_function", str(repo))
    assert done.returncode == 1
    assert done.stdout == ""
    assert "no definition matches 'no_such_function'" in done.stderr
    assert "Traceback" not in done.stderr


def test_index_json_prints_stats_and_policy(repo: Path) -> None:
    done = run("index", str(repo), "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["files"] == 9
    assert data["reparsed"] == 9 and data["from_cache"] == 0
    assert data["entities"] > 9 and data["edges"]["calls"] > 0
    assert data["problems"] == {}
    assert data["policy"].startswith(("topo", "inv", "dense"))
    index = Index(repo, use_cache=False)
    index.build()
    expected = index.stats().as_dict()
    for key in ("files", "entities", "edges", "call_sites", "mean_out_degree", "hub_share"):
        assert data[key] == expected[key], key
    again = json.loads(run("index", str(repo), "--json").stdout)
    assert (again["reparsed"], again["from_cache"]) == (0, 9)


def test_index_reports_bad_files_on_stderr_and_carries_on(repo: Path) -> None:
    (repo / "pkg" / "blob.py").write_bytes(b"\x00\x01\x02")
    (repo / "pkg" / "oops.py").write_text("def oops(:\n    pass\n", encoding="utf-8")
    done = run("index", str(repo))
    assert done.returncode == 0, done.stderr
    assert "pkg/blob.py: binary:" in done.stderr
    assert "pkg/oops.py: syntax: missing ) at line 1, column 10" in done.stderr
    assert "problems: 1 binary, 1 syntax" in done.stdout
    assert "files: 10 " in done.stdout


@pytest.mark.parametrize(
    ("command", "where"),
    [("index", "pkg/service.py"), ("graph", "missing"), ("callers", "pkg/service.py")],
)
def test_a_path_that_is_not_a_folder_exits_nonzero_without_a_traceback(
    repo: Path, command: str, where: str
) -> None:
    target = ["checkout"] if command == "callers" else []
    path = repo / where
    done = run(command, *target, str(path))
    assert done.returncode == 2
    said = "no such file or folder" if where == "missing" else "not a folder"
    assert done.stderr == f"anchor-ls: {said}: {path}\n"
    assert "Traceback" not in done.stderr
    assert done.stdout == ""


def test_cache_option_keeps_the_root_clean(repo: Path, tmp_path: Path) -> None:
    cache = tmp_path / "elsewhere"
    done = run("index", str(repo), "--cache", str(cache))
    assert done.returncode == 0, done.stderr
    assert (cache / "index.sqlite3").is_file()
    assert not (repo / ".anchor-ls").exists()
