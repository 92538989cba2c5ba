"""Commands: materialize and strip through workspace/applyEdit, export, reindex.

The client applies edits the way an editor does: to its open buffers (then it sends
didChange), to files on disk otherwise, refusing a TextDocumentEdit for a stale version.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient
from support.lsp import copy_example, lsp, start

__all__ = ["lsp"]

OPENER = "# === CodeAnchor"  # a block's first line starts so, its last line with "# ==="


def names(block: list[str], entity_id: str) -> bool:
    """Whether a block's opening lines say it is for entity_id."""
    return any(line.endswith(f" {entity_id}") for line in block[:2])


def snapshot(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in root.rglob("*")
        if p.is_file() and ".anchor-ls" not in p.parts
    }


def block_above(text: str, needle: str) -> list[str]:
    """The comment lines directly above the line holding needle (and its decorators)."""
    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines) if needle in line)
    while at > 0 and lines[at - 1].lstrip().startswith("@"):
        at -= 1
    block = []
    while at > 0 and lines[at - 1].lstrip().startswith("#"):
        at -= 1
        block.insert(0, lines[at].strip())
    return block


async def test_materialize_and_strip_an_open_file(lsp: LanguageClient, tmp_path: Path) -> None:
    root = copy_example(tmp_path)
    ed = await start(lsp, root, lsp.profile)  # type: ignore[attr-defined]
    await ed.ready()
    uri = ed.open("pkg/service.py")
    original = ed.text("pkg/service.py")
    on_disk = ed.path("pkg/service.py").read_bytes()

    result = await ed.command("anchor.materialize", {"uri": uri})
    assert result["applied"] is True and result["files"] == 1
    (sent,) = ed.applied
    if ed.client.capabilities.workspace.workspace_edit.document_changes:  # type: ignore[union-attr]
        (change,) = sent.edit.document_changes  # type: ignore[misc]
        assert change.text_document.uri == uri and change.text_document.version == 1
    else:
        assert list(sent.edit.changes) == [uri]  # type: ignore[arg-type]
    tagged = ed.text("pkg/service.py")
    block = block_above(tagged, "def checkout(")
    assert block[0].startswith(OPENER) and block[-1].startswith("# ===")
    assert names(block, "pkg/service.py:checkout")
    called_by = next(line for line in block if line.startswith("# CALLED_BY: "))
    assert "quick_checkout" in called_by  # (the id, or its same-file short form)
    assert ed.path("pkg/service.py").read_bytes() == on_disk, "materialize wrote the file"

    again = await ed.command("anchor.materialize", {"uri": uri})
    assert again == {"applied": True, "files": 0, "skipped": []}, "materialize is idempotent"

    stripped = await ed.command("anchor.strip", {"uri": uri})
    assert stripped["applied"] is True
    assert ed.text("pkg/service.py") == original


async def test_materialize_and_strip_the_workspace(lsp: LanguageClient, tmp_path: Path) -> None:
    root = copy_example(tmp_path)
    ed = await start(lsp, root, lsp.profile)  # type: ignore[attr-defined]
    await ed.ready()
    before = snapshot(root)

    result = await ed.command("anchor.materialize", {})
    assert result["applied"] is True and result["files"] >= 5
    tagged = snapshot(root)
    changed = [rel for rel in before if tagged[rel] != before[rel]]
    assert len(changed) == result["files"]
    assert all(rel.endswith(".py") for rel in changed)
    models = (root / "pkg/models.py").read_text(encoding="utf-8")
    assert names(block_above(models, "class Order:"), "pkg/models.py:Order")

    stripped = await ed.command("anchor.strip", {})
    assert stripped["applied"] is True and stripped["files"] == len(changed)
    assert snapshot(root) == before, "strip(materialize(x)) == x for every file"


# Neovim's profile takes no versioned document changes: the server's own check is the guard.
@pytest.mark.parametrize("lsp", ["neovim"], indirect=True)
async def test_refused_when_the_document_moved_on(lsp: LanguageClient, tmp_path: Path) -> None:
    root = copy_example(tmp_path)
    ed = await start(lsp, root, lsp.profile)  # type: ignore[attr-defined]
    await ed.ready()
    uri = ed.open("pkg/service.py")
    ed.change(uri, ed.text("pkg/service.py") + "\n# edited\n")
    text = ed.text("pkg/service.py")

    result = await ed.command("anchor.materialize", {"uri": uri, "version": 1})
    assert result["applied"] is False and "version 2" in result["reason"]
    assert ed.applied == []
    assert ed.text("pkg/service.py") == text
    assert any("nothing was changed" in m.message for m in ed.client.messages)


@pytest.mark.parametrize("lsp", ["visual-studio-code"], indirect=True)
async def test_refused_when_the_client_cannot_apply_edits(
    lsp: LanguageClient, tmp_path: Path
) -> None:
    root = copy_example(tmp_path)

    def no_apply_edit(caps: types.ClientCapabilities) -> None:
        assert caps.workspace is not None
        caps.workspace.apply_edit = False

    ed = await start(lsp, root, lsp.profile, drop=no_apply_edit)  # type: ignore[attr-defined]
    await ed.ready()
    before = snapshot(root)
    result = await ed.command("anchor.materialize", {})
    assert result["applied"] is False
    assert any("cannot apply" in m.message for m in ed.client.messages)
    assert snapshot(root) == before


async def test_export_writes_a_tagged_snapshot(lsp: LanguageClient, tmp_path: Path) -> None:
    root = copy_example(tmp_path)
    ed = await start(lsp, root, lsp.profile)  # type: ignore[attr-defined]
    await ed.ready()
    before = snapshot(root)
    out = tmp_path / "snapshot"
    tokens = set(ed.client.progress_reports)

    result = await ed.command("anchor.export", {"out": str(out)})
    assert result["ok"] is True
    (export,) = result["exports"]
    assert export["out"] == str(out) and export["tagged"] >= 5
    service = (out / "pkg/service.py").read_text(encoding="utf-8")
    assert names(block_above(service, "def checkout("), "pkg/service.py:checkout")
    assert snapshot(root) == before, "export changed the source tree"
    new = [t for t in ed.client.progress_reports if t not in tokens]
    kinds = [v.kind for t in new for v in ed.client.progress_reports[t]]
    assert kinds[0] == "begin" and kinds[-1] == "end"

    refused = await ed.command("anchor.export", {"out": str(out)})
    assert refused["ok"] is False and "not empty" in refused["reason"]

    reindexed = await ed.command("anchor.reindex")
    assert [f["state"] for f in reindexed["folders"]] == ["ready"]
    assert reindexed["folders"][0]["stats"]["files"] == len(list(root.rglob("*.py")))
