"""Hints stored with the index cache: the next build of the same graph reads them back.

The real server over stdio on a copy of fixtures/example; the cache is the real
SQLite file the server writes into the copy.
"""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

from pytest_lsp import LanguageClient
from support.lsp import Editor, copy_example, dump, lsp, start

from anchor_ls.index.cache import FILE_NAME

__all__ = ["lsp"]

FILES = ["pkg/service.py", "pkg/models.py", "pkg/repo.py", "pkg/unicode.py"]


def stored_rows(editor: Editor) -> int:
    path = editor.root / ".anchor-ls" / FILE_NAME
    with sqlite3.connect(path) as db:
        return db.execute("SELECT count(*) FROM derived WHERE name = 'inlay-hints'").fetchone()[0]


async def all_hints(editor: Editor) -> dict[str, str]:
    return {rel: dump(await editor.hints(rel)) for rel in FILES}


async def restored(editor: Editor) -> int:
    stats = await editor.command("anchor.stats")
    return stats["folders"][0].get("hintsRestored", 0)


async def test_a_rebuild_of_the_same_files_reads_the_stored_hints(
    lsp: LanguageClient, tmp_path: Path
) -> None:
    editor = await start(lsp, copy_example(tmp_path), lsp.profile)  # type: ignore[attr-defined]
    await editor.ready()
    before = await all_hints(editor)
    assert any(h != "[]" for h in before.values())

    await editor.until(lambda: _stored(editor), "the warm pass to store the hints")
    await editor.command("anchor.reindex")  # a new index from the cache: the same graph
    count = await editor.until(lambda: restored(editor), "the stored hints to be read")
    assert count >= len(FILES)
    assert await all_hints(editor) == before


async def test_an_unsaved_edit_is_never_hidden_by_stored_hints(
    lsp: LanguageClient, tmp_path: Path
) -> None:
    """The buffer differs from the file on disk: a rebuild reads the same files (their
    stored hints may be read), then applies the buffer again, which drops them."""
    editor = await start(lsp, copy_example(tmp_path), lsp.profile)  # type: ignore[attr-defined]
    await editor.ready()
    await editor.until(lambda: _stored(editor), "the warm pass to store the hints")
    doc = editor.open("pkg/service.py")
    edited = editor.text("pkg/service.py") + "\n\ndef later(r):\n    return checkout([], r, None)\n"
    editor.change(doc, edited)
    await editor.until(lambda: _shows(editor, "later"), "the edit in the hints")
    await editor.command("anchor.reindex")
    await editor.ready()
    await editor.until(lambda: _shows(editor, "later"), "the edit in the hints again")
    assert stored_rows(editor) == 1  # still the one of the files on disk


async def _stored(editor: Editor) -> bool:
    await asyncio.sleep(0.05)
    return stored_rows(editor) == 1


async def _shows(editor: Editor, name: str) -> bool:
    return name in dump(await editor.hints("pkg/service.py"))
