"""The server's tag commands refuse what they cannot do, with a message that says why."""

from __future__ import annotations

from pathlib import Path

import pytest
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient
from support.lsp import copy_example, lsp, start

__all__ = ["lsp"]

LEGACY = "# -*- coding: latin-1 -*-\ndef old():\n    return 1\n"


def tree(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in root.rglob("*")
        if p.is_file() and ".anchor-ls" not in p.parts
    }


@pytest.mark.parametrize("lsp", ["visual-studio-code"], indirect=True)
async def test_materialize_names_a_character_the_buffer_encoding_cannot_hold(
    lsp: LanguageClient, tmp_path: Path
) -> None:
    root = copy_example(tmp_path)
    (root / "pkg/legacy.py").write_text(LEGACY, encoding="latin-1")
    ed = await start(lsp, root, lsp.profile)  # type: ignore[attr-defined]
    await ed.ready()
    doc = ed.open("pkg/legacy.py")
    edited = LEGACY + "SIGN = '\u20ac'\n"  # the euro sign is not in latin-1
    ed.change(doc, edited)
    before = tree(root)

    result = await ed.command("anchor.materialize", {"uri": doc})
    (why,) = result["skipped"]
    assert why.startswith("pkg/legacy.py: line 4, column 9: character '\u20ac' (U+20AC)")
    assert "latin" in why
    assert ed.applied == [] and ed.text("pkg/legacy.py") == edited
    assert tree(root) == before


@pytest.mark.parametrize("lsp", ["visual-studio-code"], indirect=True)
async def test_export_refuses_a_relative_folder_and_one_inside_the_workspace(
    lsp: LanguageClient, tmp_path: Path
) -> None:
    root = copy_example(tmp_path)
    ed = await start(lsp, root, lsp.profile)  # type: ignore[attr-defined]
    await ed.ready()
    before = tree(root)

    with pytest.raises(JsonRpcException, match="absolute path"):
        await ed.command("anchor.export", {"out": "snapshot"})
    (tmp_path / "alias").symlink_to(root / "pkg", target_is_directory=True)
    for inside in (root / "snapshot", root / "pkg", tmp_path / "alias" / "snap"):
        refused = await ed.command("anchor.export", {"out": str(inside), "force": True})
        assert refused["ok"] is False and "inside the source tree" in refused["reason"]
    assert tree(root) == before
    assert not (root / "snapshot").exists()
    shown = [m.message for m in ed.client.messages]
    assert any("inside the source tree" in m for m in shown)


SIG = (
    "# -*- coding: utf-8-sig -*-\n"
    "def first():\n    return second()\n\n\ndef second():\n    return first()\n"
)


@pytest.mark.parametrize("lsp", ["visual-studio-code"], indirect=True)
async def test_a_closed_file_whose_cookie_says_utf_8_sig_keeps_its_first_line(
    lsp: LanguageClient, tmp_path: Path
) -> None:
    root = copy_example(tmp_path)
    (root / "pkg/sig.py").write_text(SIG, encoding="utf-8")  # the cookie, no BOM: Python reads it
    ed = await start(lsp, root, lsp.profile)  # type: ignore[attr-defined]
    await ed.ready()

    result = await ed.command("anchor.materialize", {"uri": ed.uri("pkg/sig.py")})
    assert result["applied"] is True and result["files"] == 1
    tagged = ed.text("pkg/sig.py")
    assert tagged.startswith("# -*- coding: utf-8-sig -*-\n# === CodeAnchor pkg/sig.py")
    assert "# === CodeAnchor pkg/sig.py:first\n" in tagged

    result = await ed.command("anchor.strip", {"uri": ed.uri("pkg/sig.py")})
    assert result["applied"] is True
    assert ed.text("pkg/sig.py") == SIG


@pytest.mark.parametrize("lsp", ["visual-studio-code"], indirect=True)
async def test_a_file_whose_cookie_names_no_text_encoding_does_not_stop_the_index(
    lsp: LanguageClient, tmp_path: Path
) -> None:
    root = copy_example(tmp_path)
    (root / "pkg/rot.py").write_bytes(b"# coding: rot13\nqrs s():\n    cnff\n")
    ed = await start(lsp, root, lsp.profile)  # type: ignore[attr-defined]
    await ed.ready()
    rot = (root / "pkg/rot.py").read_bytes()

    # The index was built (a `coding: rot13` file stopped it: LookupError), so tags go in.
    result = await ed.command("anchor.materialize", {})
    assert result["applied"] is True and result["files"] > 0, result
    result = await ed.command("anchor.strip", {})
    assert result["applied"] is True, result
    assert (root / "pkg/rot.py").read_bytes() == rot
