"""First contact: a client that names no folder, and requests sent before the index is built.

A client without a workspace folder (Neovim finding no root marker, VS Code on a single
file) still gets the project of the file it opens indexed; requests that come in while
the first build runs wait for it and answer completely, not with a silent null.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient
from support.lsp import (
    CONFIG,
    SERVER,
    Editor,
    editor_capabilities,
    label_text,
    line_of,
    lsp,
    pos,
    start,
    write_files,
)
from support.repos import FILES, LOOSE, SHAPES, write_repo

from anchor_ls.index import Index
from anchor_ls.server.roots import project_root

__all__ = ["lsp"]  # the fixture, imported for pytest

# A package chain without markers: the project is the folder that holds `shop`.
CHAIN = {
    "shop/__init__.py": "",
    "shop/cart/__init__.py": "",
    "shop/cart/prices.py": "def total(items):\n    return sum(items)\n",
    "checkout.py": "from shop.cart.prices import total\n\n\ndef pay():\n    return total([1])\n",
}
HOME = Path(tempfile.mkdtemp(prefix="anchor-home-"))  # the server's home folder


async def start_without_folders(client: LanguageClient, root: Path, profile: str) -> Editor:
    """Initialize as a client that opened a single file: no workspace folder, no rootUri."""
    editor = Editor(client, root, profile)
    result = await client.initialize_session(
        types.InitializeParams(capabilities=editor_capabilities(profile), root_uri=None)
    )
    encoding = result.capabilities.position_encoding
    editor.encoding = str(getattr(encoding, "value", encoding) or "utf-16")
    return editor


async def incoming(ed: Editor, rel: str, needle: str, offset: int) -> list[str] | None:
    """Names of the callers the call hierarchy lists for the definition at needle."""
    text = ed.text(rel)
    items = await ed.client.text_document_prepare_call_hierarchy_async(
        types.CallHierarchyPrepareParams(
            types.TextDocumentIdentifier(ed.uri(rel)), pos(text, needle, ed.encoding, offset)
        )
    )
    if not items:
        return None
    calls = await ed.client.call_hierarchy_incoming_calls_async(
        types.CallHierarchyIncomingCallsParams(items[0])
    )
    return sorted(c.from_.name for c in calls)


def logged(client: LanguageClient, needle: str) -> list[str]:
    return [m.message for m in client.log_messages if needle in m.message]


@pytest_lsp.fixture(config=ClientServerConfig(SERVER, server_env={**os.environ, "HOME": str(HOME)}))
async def homed(lsp_client: LanguageClient) -> Any:
    """A server whose home folder is HOME."""
    yield
    await lsp_client.shutdown_session()


async def test_a_loose_folder_is_indexed_from_the_opened_file(
    lsp: LanguageClient, tmp_path: Path
) -> None:
    root = tmp_path / "loose"
    write_files(root, LOOSE)
    ed = await start_without_folders(lsp, root, lsp.profile)  # type: ignore[attr-defined]
    ed.open("shapes.py")
    stats = await ed.ready()
    (folder,) = stats["folders"]
    assert Path(folder["root"]) == root.resolve()
    assert folder["rootFrom"] == "opened file"
    assert folder["stats"]["files"] == 2
    assert logged(lsp, f"indexing {root.resolve()}"), lsp.log_messages
    line = line_of(ed.text("shapes.py"), "def area(")
    hints = await ed.until(lambda: ed.hints("shapes.py"), "hints of shapes.py after the build")
    (hint,) = [h for h in hints if h.position.line == line]
    assert "summary" in label_text(hint) and "twice" in label_text(hint)
    assert await incoming(ed, "shapes.py", "def area(", 4) == ["summary", "twice"]


async def test_the_top_of_a_package_chain_is_the_root(lsp: LanguageClient, tmp_path: Path) -> None:
    root = tmp_path / "chain"
    write_files(root, CHAIN)
    ed = await start_without_folders(lsp, root, lsp.profile)  # type: ignore[attr-defined]
    ed.open("shop/cart/prices.py")
    (folder,) = (await ed.ready())["folders"]
    assert Path(folder["root"]) == root.resolve()
    assert await incoming(ed, "shop/cart/prices.py", "def total(", 4) == ["pay"]


async def test_a_folder_is_adopted_only_while_none_is_known(
    lsp: LanguageClient, tmp_path: Path
) -> None:
    """A second file elsewhere (a library file reached by go-to-definition) adds nothing."""
    write_files(tmp_path / "loose", LOOSE)
    write_files(tmp_path / "other", CHAIN)
    ed = await start_without_folders(lsp, tmp_path, lsp.profile)  # type: ignore[attr-defined]
    ed.open("loose/report.py")
    ed.open("other/checkout.py")
    stats = await ed.ready()
    assert [Path(f["root"]) for f in stats["folders"]] == [(tmp_path / "loose").resolve()]


async def test_named_folders_are_kept(lsp: LanguageClient, tmp_path: Path) -> None:
    root = tmp_path / "loose"
    write_files(root, LOOSE)
    ed = await start(lsp, tmp_path, lsp.profile)  # type: ignore[attr-defined]
    ed.open("loose/shapes.py")
    (folder,) = (await ed.ready())["folders"]
    assert Path(folder["root"]) == tmp_path.resolve()
    assert folder["rootFrom"] == "workspace folder"


async def test_the_home_folder_is_never_the_root(homed: LanguageClient) -> None:
    """A marker in the home folder (a dotfiles repository) would make it the root: the
    file's own folder is indexed instead; a file in the home folder itself, nothing."""
    write_files(HOME, {".git/HEAD": "ref: refs/heads/main\n", "notes.py": "def n():\n    pass\n"})
    write_files(HOME / "scratch", LOOSE)
    ed = await start_without_folders(homed, HOME, "neovim")
    ed.open("notes.py")
    refusal = await ed.until(
        lambda: _async(logged(homed, "too wide")), "the refusal of the home folder"
    )
    assert str(HOME.resolve()) in refusal[0]
    stats = await ed.command("anchor.stats")
    assert stats["folders"] == []
    ed.open("scratch/report.py")
    (folder,) = (await ed.ready())["folders"]
    assert Path(folder["root"]) == (HOME / "scratch").resolve()
    assert await incoming(ed, "scratch/shapes.py", "def area(", 4) == ["summary", "twice"]


async def _async(value: Any) -> Any:
    return value


def test_project_root_picks_marker_then_package_chain_then_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    write_files(tmp_path / "chain", CHAIN)
    write_files(tmp_path / "loose", LOOSE)
    write_files(
        tmp_path / "marked", {"setup.cfg": "", "src/app/__init__.py": "", "src/app/m.py": ""}
    )
    assert project_root(tmp_path / "chain/shop/cart/prices.py").folder == tmp_path / "chain"
    assert project_root(tmp_path / "chain/checkout.py").folder == tmp_path / "chain"
    assert project_root(tmp_path / "loose/report.py").folder == tmp_path / "loose"
    assert project_root(tmp_path / "marked/src/app/m.py").folder == tmp_path / "marked"
    # A home folder with a marker is refused for the folder of the file.
    write_files(tmp_path / "home", {"pyproject.toml": "", "proj/x.py": "", "y.py": ""})
    assert project_root(tmp_path / "home/proj/x.py").folder == tmp_path / "home/proj"
    assert project_root(tmp_path / "home/y.py").folder is None
    # A buffer's URI that names no folder here indexes nothing.
    assert project_root(tmp_path / "nowhere/x.py").folder is None
    # Nor does a library file: not site-packages, not the standard library, but a project
    # holding its virtual environment, or a checkout of CPython, is the project.
    write_files(
        tmp_path,
        {
            "site/lib/python3.12/site-packages/req/__init__.py": "",
            "site/lib/python3.12/site-packages/req/api.py": "",
            "site/lib/python3.12/os.py": "",
            "site/lib/python3.12/site.py": "",
            "site/lib/python3.12/json/__init__.py": "",
            "proj/pyproject.toml": "",
            "proj/.venv/pyvenv.cfg": "",
            "proj/.venv/lib/python3.12/site-packages/req/__init__.py": "",
            "cpython/.git/HEAD": "",
            "cpython/Lib/os.py": "",
            "cpython/Lib/site.py": "",
            "cpython/Lib/json/__init__.py": "",
        },
    )
    for library in ("site-packages/req/api.py", "json/__init__.py", "os.py"):
        assert project_root(tmp_path / "site/lib/python3.12" / library).folder is None
    venv_file = tmp_path / "proj/.venv/lib/python3.12/site-packages/req/__init__.py"
    assert project_root(venv_file).folder == tmp_path / "proj"
    assert project_root(tmp_path / "cpython/Lib/json/__init__.py").folder == tmp_path / "cpython"


async def test_a_library_file_opened_first_indexes_no_installation(
    lsp: LanguageClient, tmp_path: Path
) -> None:
    """Go to definition into a package of a virtual environment outside the project (or
    the standard library) opens a file whose package chain tops at site-packages: a client
    with no folder (Neovim's plugin finds its root the same way) indexed every installed
    package."""
    venv = tmp_path / "venvs/shop/lib/python3.12/site-packages"
    write_files(venv, {**{f"pkg{i}/__init__.py": "" for i in range(3)}, "pkg0/api.py": "x = 1\n"})
    ed = await start_without_folders(lsp, venv, lsp.profile)  # type: ignore[attr-defined]
    ed.open("pkg0/api.py")

    async def refused() -> list[str]:
        return logged(lsp, "belongs to the Python installation at")

    (message,) = await ed.until(refused, "the refusal of site-packages")
    assert str(venv.resolve()) in message
    assert (await ed.command("anchor.stats"))["folders"] == []
    assert await ed.hints("pkg0/api.py") == []


# ----- requests before the first build ends --------------------------------


@pytest_lsp.fixture(config=CONFIG)
async def cold(lsp_client: LanguageClient) -> Any:
    yield
    await lsp_client.shutdown_session()


async def test_call_hierarchy_sent_at_once_on_a_warm_start_waits_for_the_build(
    cold: LanguageClient, tmp_path: Path
) -> None:
    """prepareCallHierarchy right after initialized, while a warm start of a few hundred
    modules reads its cache, answers with the item and its complete callers: a build from
    a cache is given GLIMPSE_AFTER seconds before a glimpse would answer."""
    root = tmp_path / "repo"
    write_repo(root)
    # the cache the server's build reads, made under the same environment (the CLI's)
    subprocess.run([sys.executable, "-m", "anchor_ls", "index", str(root), "-q"], check=True)
    ed = await start(cold, root, "neovim")
    last = f"pkg/m{FILES - 1}.py"
    ed.open(last)
    text = ed.text(last)
    items = await cold.text_document_prepare_call_hierarchy_async(
        types.CallHierarchyPrepareParams(
            types.TextDocumentIdentifier(ed.uri(last)), pos(text, "def run", ed.encoding, 4)
        )
    )
    assert items, "prepareCallHierarchy answered null while the index was built"
    assert items[0].detail == f"{last}:run{FILES - 1}"
    calls = await cold.call_hierarchy_incoming_calls_async(
        types.CallHierarchyIncomingCallsParams(items[0])
    )
    assert sorted(c.from_.detail for c in calls) == [f"{last}:Base{FILES - 1}.go"]
    hints = await ed.hints(last)
    assert any(h.position.line == line_of(text, "def run") for h in hints), hints
    assert not logged(cold, "partial"), "the warm start fits in the wait: no answer is partial"


async def test_a_cold_first_build_answers_the_call_hierarchy_from_a_glimpse(
    cold: LanguageClient, tmp_path: Path
) -> None:
    """While a cold first build runs (here it waits for a slow interpreter's answer), the
    call hierarchy answers at once from a glimpse, says in the log that it is partial, and
    lists only callers the build lists too; after the build, all of them."""
    root = tmp_path / "repo"
    write_files(root, SHAPES)
    slow = tmp_path / "slowpython"  # outside the repository, as the user named it
    slow.write_text(f'#!/bin/sh\nsleep 5\nexec {sys.executable} "$@"\n', encoding="utf-8")
    slow.chmod(0o755)
    ed = await start(cold, root, "visual-studio-code", options={"anchorLs": {"python": str(slow)}})
    ed.open("pkg/shapes.py")
    answered = await incoming(ed, "pkg/shapes.py", "def area", 4)
    stats = await ed.command("anchor.stats")
    assert [f["state"] for f in stats["folders"]] == ["indexing"], "the build had ended"
    assert answered == ["describe"]  # use.py does not name Shape: the build finds it
    (said,) = logged(cold, "glimpse")
    assert "partial" in said and "4 files" in said, said
    types_at = await cold.text_document_prepare_type_hierarchy_async(
        types.TypeHierarchyPrepareParams(
            types.TextDocumentIdentifier(ed.uri("pkg/shapes.py")),
            pos(ed.text("pkg/shapes.py"), "class Shape", ed.encoding, 6),
        )
    )
    assert types_at and types_at[0].detail == "pkg/shapes.py:Shape"
    subtypes = await cold.type_hierarchy_subtypes_async(
        types.TypeHierarchySubtypesParams(types_at[0])
    )
    assert [t.detail for t in subtypes or []] == ["pkg/shapes.py:Square"]
    supertypes = await cold.type_hierarchy_supertypes_async(
        types.TypeHierarchySupertypesParams(subtypes[0])
    )
    assert [t.detail for t in supertypes or []] == ["pkg/shapes.py:Shape"]
    stats = await ed.command("anchor.stats")
    assert [f["state"] for f in stats["folders"]] == ["indexing"], "the build had ended"
    await ed.ready()
    assert await incoming(ed, "pkg/shapes.py", "def area", 4) == ["describe", "measure"]


def test_a_definition_as_long_as_its_file_is_found_inside_the_module(tmp_path: Path) -> None:
    """Asked at `def area(` of a file that is only that function, the function answers
    (the module spans the same lines; it used to win the tie)."""
    write_files(tmp_path, LOOSE)
    index = Index(tmp_path, use_cache=False)
    index.build()
    found = index.graph.entity_at("shapes.py", 0)
    assert found is not None and found.id == "shapes.py:area"
    module = index.graph.entity_at("report.py", 1)
    assert module is not None and module.id == "report.py"
