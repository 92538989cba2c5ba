"""How a call was found (via) and who may call through values the index could not
follow, as an editor sees them: call hierarchy data, hint tooltips, the callers lens."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from lsprotocol import types
from support.lsp import (
    Editor,
    hint_on,
    line_of,
    pos,
    resolves,
    shared_session,
    text_at,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")

CASE = Path(__file__).resolve().parent.parent / "fixtures" / "accuracy" / "via_kinds"


def copy_case(tmp: Path) -> Path:
    root = tmp / "repo"
    shutil.copytree(CASE, root, ignore=shutil.ignore_patterns(".anchor-ls", "__pycache__"))
    return root


session, ed = shared_session(copy_case)


async def test_incoming_calls_carry_their_via(ed: Editor) -> None:
    text = ed.text("lib.py")
    base = await ed.client.text_document_prepare_call_hierarchy_async(
        types.CallHierarchyPrepareParams(
            types.TextDocumentIdentifier(ed.uri("lib.py")), pos(text, "def run(", ed.encoding, 5)
        )
    )
    incoming = await ed.client.call_hierarchy_incoming_calls_async(
        types.CallHierarchyIncomingCallsParams(base[0])
    )
    assert [(c.from_.detail, c.from_.data) for c in incoming] == [
        ("main.py:entry", {"id": "main.py:entry", "call_via": "attribute"})
    ]


async def test_the_tooltip_of_a_hint_says_how_each_caller_calls(ed: Editor) -> None:
    text = ed.text("lib.py")
    hint = hint_on(await ed.hints("lib.py"), line_of(text, "    def run("))
    assert hint is not None
    if resolves(ed.client, "tooltip"):
        hint = await ed.client.inlay_hint_resolve_async(hint)
    assert "- `main.py:entry` (via attribute)" in hint.tooltip.value  # type: ignore[union-attr]


async def test_the_callers_lens_counts_the_possible_callers_and_locates_them(ed: Editor) -> None:
    text = ed.text("lib.py")
    line = line_of(text, "    def run(")
    lenses = await ed.client.text_document_code_lens_async(
        types.CodeLensParams(types.TextDocumentIdentifier(ed.uri("lib.py")))
    )
    titles = {}
    for lens in lenses or []:
        if lens.range.start.line == line:
            done = await ed.client.code_lens_resolve_async(lens)
            assert done.command is not None
            titles[done.command.title] = done.command
    command = titles["1 caller (+1 possible)"]
    _uri, _position, locations = command.arguments  # type: ignore[misc]
    main = ed.text("main.py")
    found = []
    for location in locations:
        assert location["uri"] == ed.uri("main.py")
        rng = types.Range(
            types.Position(**location["range"]["start"]), types.Position(**location["range"]["end"])
        )
        found.append((rng.start.line, text_at(main, rng, ed.encoding)))
    # the real caller's two sites first, then the unresolved site that calls a `run`
    lines = [line_of(main, f"    {x}.run()") for x in ("made", "job", "obj")]
    assert found == [(n, "run") for n in lines]
