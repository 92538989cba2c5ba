"""The sourceRoots setting through a real server over stdio, and the roots it finds alone."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from lsprotocol import types
from pytest_lsp import LanguageClient
from support.lsp import ROOT, hint_on, label_text, line_of, lsp, start

__all__ = ["lsp"]

FIXTURE = ROOT / "fixtures" / "source_roots"
RENDER = "lib/reporting/render.py"
DB = "examples/tutorial/flaskr/db.py"


def copy_fixture(tmp: Path) -> Path:
    root = tmp / "repo"
    shutil.copytree(FIXTURE, root, ignore=shutil.ignore_patterns(".anchor-ls", "__pycache__"))
    return root


async def incoming(ed: Any, rel: str, needle: str) -> set[str]:
    """The names of the callers call hierarchy lists for the definition on needle's line."""
    text = ed.text(rel)
    line = line_of(text, needle)
    items = await ed.client.text_document_prepare_call_hierarchy_async(
        types.CallHierarchyPrepareParams(
            types.TextDocumentIdentifier(ed.uri(rel)),
            types.Position(line, text.splitlines()[line].index(needle.split()[1].split("(")[0])),
        )
    )
    assert items, f"no call hierarchy item at {rel}:{line}"
    calls = await ed.client.call_hierarchy_incoming_calls_async(
        types.CallHierarchyIncomingCallsParams(item=items[0])
    )
    return {f"{call.from_.uri.rsplit('/repo/', 1)[1]}:{call.from_.name}" for call in calls or []}


async def render_hint(ed: Any) -> str:
    text = ed.text(RENDER)
    hint = hint_on(await ed.hints(RENDER), line_of(text, "def render_all("))
    return label_text(hint) if hint is not None else ""


async def test_source_roots_from_options_then_changed_live(
    lsp: LanguageClient, tmp_path: Path
) -> None:
    root = copy_fixture(tmp_path)
    options = {"anchorLs": {"sourceRoots": ["lib"]}}
    ed = await start(lsp, root, lsp.profile, options=options)  # type: ignore[attr-defined]
    stats = await ed.ready()
    assert stats["settings"]["sourceRoots"] == ["lib"]
    assert "lib" in stats["folders"][0]["stats"]["source_roots"]
    assert "main" in await render_hint(ed)
    assert await incoming(ed, RENDER, "def render_all(") == {"tools/report.py:main"}
    # Found without the setting: the nested project's tests call its package.
    assert await incoming(ed, DB, "def get_db(") >= {
        "examples/tutorial/tests/conftest.py:app",
        "examples/tutorial/tests/test_db.py:test_get_close_db",
        "examples/tutorial/tests/test_auth.py:test_register",
        "examples/tutorial/flaskr/auth.py:register",
    }

    lsp.set_configuration({"sourceRoots": []}, section="anchorLs")
    lsp.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))

    async def caller_gone() -> bool:
        return (await ed.command("anchor.stats"))["settings"]["sourceRoots"] == [] and (
            await incoming(ed, RENDER, "def render_all(") == set()
        )

    await ed.until(caller_gone, "the index to be rebuilt without lib/")

    lsp.set_configuration({"sourceRoots": "lib"}, section="anchorLs")
    lsp.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))

    async def told() -> bool:
        return any("anchorLs.sourceRoots" in m.message for m in lsp.messages)

    await ed.until(told, "a message about the bad value")
