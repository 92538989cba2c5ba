"""End to end with the real Index: the example repository and packages of the standard library."""

from __future__ import annotations

import json
import re
import shutil
import sysconfig
import warnings
from pathlib import Path

import pytest

from anchor_ls.index import Index
from anchor_ls.tags.apply import check_tree, export_snapshot, file_blocks, strip_tree
from anchor_ls.tags.policy import HUB_CALLERS, is_test_path, resolve_policy
from anchor_ls.tags.render import CLOSE, OPEN, expand_id
from anchor_ls.tags.text import strip

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

EXAMPLE = Path(__file__).resolve().parent.parent / "fixtures" / "example"
STDLIB = Path(sysconfig.get_paths()["stdlib"])
SKIP = (".anchor-ls", "__pycache__", ".pytest_cache")


def tree_files(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.is_symlink() and not any(s in p.parts for s in SKIP)
    }


def compile_quietly(data: bytes, name: str) -> object:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return compile(data, name, "exec", dont_inherit=True)


@pytest.fixture(scope="module")
def example_snapshot(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Index]:
    base = tmp_path_factory.mktemp("example")
    source = base / "example"
    shutil.copytree(EXAMPLE, source, ignore=shutil.ignore_patterns(*SKIP))
    index = Index(source, cache_dir=base / "cache")
    index.build()
    out = base / "snap"
    report = export_snapshot(index, out, resolve_policy("topo", 0, 0))
    assert report.problems == []
    return out, index


def test_example_snapshot_is_tagged_compiles_and_checks_clean(
    example_snapshot: tuple[Path, Index], tmp_path: Path
) -> None:
    out, _index = example_snapshot
    for rel, data in tree_files(out).items():
        if rel.endswith(".py"):
            compile_quietly(data, rel)
    again = Index(out, cache_dir=tmp_path / "cache")
    again.build()
    report = check_tree(again, resolve_policy("topo", 0, 0), require=True)
    assert report.problems == [] and report.ok


def test_example_tags_show_the_hand_written_calls(example_snapshot: tuple[Path, Index]) -> None:
    """Every expected call the index found appears on both ends (tests aside: TEST_REF).

    A constructor call shows as a call of the class, which also runs its __init__.
    """
    out, index = example_snapshot
    graph = index.graph
    expected = json.loads((EXAMPLE / "expected.json").read_text())["calls"]
    found = 0
    for src, dst in expected:
        if is_test_path(src) or is_test_path(dst):
            continue
        if dst not in graph.out("calls", src):
            continue  # the index's accuracy is tested elsewhere; here: tags mirror the graph
        if dst.endswith(".__init__") and dst.removesuffix(".__init__") in graph.out("calls", src):
            dst = dst.removesuffix(".__init__")
        found += 1
        assert src in _fields_of(out, dst)["CALLED_BY"], (src, dst)
        if graph.in_degree("calls", dst) <= HUB_CALLERS:  # hubs are left out of CALLS
            assert dst in _fields_of(out, src)["CALLS"], (src, dst)
    assert found >= 10


def _fields_of(out: Path, ident: str) -> dict[str, list[str]]:
    """The fields of ident's block in the snapshot, every link written out in full."""
    text = (out / ident.partition(":")[0]).read_text()
    m = re.search(rf"^[ \t]*{OPEN} {re.escape(ident)}\n((?:[ \t]*# [A-Z_]+: .*\n)*)", text, re.M)
    assert m, f"no block for {ident}"
    fields: dict[str, list[str]] = {"CALLS": [], "CALLED_BY": []}
    for line in m.group(1).splitlines():
        name, _, items = line.strip()[2:].partition(": ")
        fields[name] = [expand_id(i, ident) for i in items.split(", ") if not i.startswith("[+")]
    return fields


def test_decorated_method_block_sits_above_its_decorator(
    example_snapshot: tuple[Path, Index],
) -> None:
    out, index = example_snapshot
    text = (out / "pkg/service.py").read_text()
    decorated = [e for e in index.graph.file_entities("pkg/service.py") if e.start_line != e.line]
    assert decorated
    lines = text.split("\n")
    for ent in decorated:
        header = lines.index(f"    {OPEN} {ent.id}")
        closer = next(i for i in range(header, len(lines)) if lines[i].strip() == CLOSE)
        assert lines[closer + 1].startswith("    @")


def test_example_snapshot_strips_back_to_the_example(
    example_snapshot: tuple[Path, Index], tmp_path: Path
) -> None:
    out, _index = example_snapshot
    copy = tmp_path / "copy"
    shutil.copytree(out, copy, symlinks=True)
    strip_tree(copy)
    assert tree_files(copy) == tree_files(EXAMPLE)


@pytest.mark.parametrize("package", ["json", "email", "importlib"])
def test_stdlib_package_round_trip_with_the_real_index(package: str, tmp_path: Path) -> None:
    root = STDLIB / package
    index = Index(root, cache_dir=tmp_path / "cache")
    index.build()
    blocks = sum(
        len(file_blocks(index.graph, rel, resolve_policy("topo", 0, 8))[0])
        for rel in index.graph.files()
    )
    assert blocks > 20
    out = tmp_path / "snap"
    report = export_snapshot(index, out, resolve_policy("topo", 0, 8))
    assert report.problems == []
    original = tree_files(root)
    tagged = tree_files(out)
    assert tagged.keys() == original.keys()
    for rel, data in tagged.items():
        if rel.endswith(".py"):
            assert strip(data, rel).text == original[rel]
            before = compile_quietly(original[rel], rel)
            after = compile_quietly(data, rel)
            assert after.co_code == before.co_code  # type: ignore[attr-defined]
    strip_tree(out)
    assert tree_files(out) == original
