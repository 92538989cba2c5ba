"""Bad input gets an LSP error or an empty result, never a crash or a hang.

One server per client profile; every test ends by checking that it still answers.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from support.lsp import Editor, copy_example, line_of, pos, shared_session, uri

pytestmark = pytest.mark.asyncio(loop_scope="module")

INVALID_PARAMS = types.ErrorCodes.InvalidParams.value
REQUEST_CANCELLED = types.LSPErrorCodes.RequestCancelled.value


def bad_repo(base: Path) -> Path:
    """fixtures/example with a non-Python file in it and a Python file outside it."""
    root = copy_example(base)
    (root / "README.md").write_text("# not python\n", encoding="utf-8")
    (base / "elsewhere.py").write_text("def f():\n    return 1\n", encoding="utf-8")
    (root / "pkg" / "sections.py").write_text(SECTIONS, encoding="utf-8")
    return root


# Form feeds split sections in some code (the stdlib's email/encoders.py); Python and LSP
# count neither them nor U+2028 as line ends, and str.splitlines counts both.
SECTIONS = (
    '"""Sections."""\n\f\ndef first():\n    return second()\n\f\n'
    "# a line separator \u2028 and a \x1c in a comment\n"
    'def second():\n    return ("\U0001f642\U0001f642\U0001f642\U0001f642", third())\n'
    "def third():\n    return 1\n"
)


session, ed = shared_session(bad_repo)


async def still_answers(ed: Editor) -> None:
    stats = await ed.command("anchor.stats")
    assert stats["folders"][0]["state"] == "ready"
    assert await ed.hints("pkg/service.py")


def doc(u: str) -> types.TextDocumentIdentifier:
    return types.TextDocumentIdentifier(u)


async def test_uris_that_are_not_ours_get_empty_results(ed: Editor) -> None:
    for odd in (
        uri(ed.root.parent / "elsewhere.py"),  # outside the workspace
        ed.uri("README.md"),  # not Python
        ed.uri("pkg/missing.py"),  # no such file
        "untitled:Untitled-1",
        "not a uri at all",
    ):
        c = ed.client
        hints = await c.text_document_inlay_hint_async(
            types.InlayHintParams(doc(odd), types.Range(types.Position(0, 0), types.Position(9, 0)))
        )
        assert list(hints) == []
        assert list(await c.text_document_code_lens_async(types.CodeLensParams(doc(odd)))) == []
        at = types.Position(0, 4)
        prepared = await c.text_document_prepare_call_hierarchy_async(
            types.CallHierarchyPrepareParams(doc(odd), at)
        )
        assert prepared is None
        typed = await c.text_document_prepare_type_hierarchy_async(
            types.TypeHierarchyPrepareParams(doc(odd), at)
        )
        assert typed is None
    await still_answers(ed)


async def test_positions_out_of_range(ed: Editor) -> None:
    c, service = ed.client, ed.uri("pkg/service.py")
    past_the_end = await c.text_document_prepare_call_hierarchy_async(
        types.CallHierarchyPrepareParams(doc(service), types.Position(100_000, 0))
    )
    assert past_the_end is None
    hints = await ed.hints("pkg/service.py", 100_000, 200_000)
    assert hints == []
    # A character past the end of its line means the end of the line (LSP spec).
    line = line_of(ed.text("pkg/service.py"), "def checkout(")
    items = await c.text_document_prepare_call_hierarchy_async(
        types.CallHierarchyPrepareParams(doc(service), types.Position(line, 100_000))
    )
    assert items is not None and items[0].name == "checkout"
    await still_answers(ed)


async def test_lines_are_counted_as_lsp_counts_them_past_form_feeds(ed: Editor) -> None:
    sections = ed.open("pkg/sections.py")
    text = ed.text("pkg/sections.py")
    at = pos(text, "second():", ed.encoding)
    assert at.line == 6
    items = await ed.client.text_document_prepare_call_hierarchy_async(
        types.CallHierarchyPrepareParams(doc(sections), at)
    )
    assert items is not None and [i.name for i in items] == ["second"]
    assert items[0].selection_range.start.line == 6
    calls = await ed.client.call_hierarchy_incoming_calls_async(
        types.CallHierarchyIncomingCallsParams(items[0])
    )
    found = [(c.from_.name, [r.start.line for r in c.from_ranges]) for c in calls]
    assert found == [("first", [3])]
    # a column past emoji is read in its own line, not in the one splitlines() puts there
    callee = await ed.client.text_document_prepare_call_hierarchy_async(
        types.CallHierarchyPrepareParams(doc(sections), pos(text, "third()", ed.encoding))
    )
    assert callee is not None and [i.name for i in callee] == ["third"]
    ed.close("pkg/sections.py")
    await still_answers(ed)


async def test_malformed_params_get_invalid_params(ed: Editor) -> None:
    service = ed.uri("pkg/service.py")
    for method, params in (
        (types.TEXT_DOCUMENT_INLAY_HINT, {"textDocument": 5}),
        (types.TEXT_DOCUMENT_INLAY_HINT, {"textDocument": {"uri": service}}),
        (
            types.TEXT_DOCUMENT_PREPARE_CALL_HIERARCHY,
            {"textDocument": {"uri": service}, "position": {"line": -1, "character": 0}},
        ),
        (types.CALL_HIERARCHY_INCOMING_CALLS, {"item": {"name": 1}}),
        (types.TEXT_DOCUMENT_CODE_LENS, None),
    ):
        with pytest.raises(JsonRpcException) as caught:
            await ed.raw_request(method, params)
        assert caught.value.code == INVALID_PARAMS, (method, params)
    # A malformed notification is dropped; the next message is handled.
    ed.client.protocol._send_data(
        {"jsonrpc": "2.0", "method": types.TEXT_DOCUMENT_DID_OPEN, "params": {"textDocument": 1}}
    )
    await still_answers(ed)


async def test_items_and_lenses_the_server_never_made(ed: Editor) -> None:
    c = ed.client
    blank = types.Range(types.Position(1, 0), types.Position(1, 0))  # a blank line

    def item(cls: Any, item_uri: str, data: Any) -> Any:
        kind = types.SymbolKind.Function
        return cls(name="x", kind=kind, uri=item_uri, range=blank, selection_range=blank, data=data)

    for item_uri, data in (
        ("file:///nowhere/x.py", {"id": "x.py:f"}),
        (ed.uri("pkg/service.py"), {"id": "pkg/service.py:no_such_function"}),
        (ed.uri("pkg/service.py"), "garbage"),
    ):
        calls = item(types.CallHierarchyItem, item_uri, data)
        incoming = await c.call_hierarchy_incoming_calls_async(
            types.CallHierarchyIncomingCallsParams(calls)
        )
        outgoing = await c.call_hierarchy_outgoing_calls_async(
            types.CallHierarchyOutgoingCallsParams(calls)
        )
        supers = await c.type_hierarchy_supertypes_async(
            types.TypeHierarchySupertypesParams(item(types.TypeHierarchyItem, item_uri, data))
        )
        assert list(incoming) == list(outgoing) == list(supers) == []
    for data in (
        None,
        "garbage",
        {"uri": ed.uri("pkg/service.py"), "id": "nope", "field": "CALLS"},
    ):
        lens = await c.code_lens_resolve_async(types.CodeLens(range=blank, data=data))
        assert lens.command is not None and lens.command.command == ""
    await still_answers(ed)


async def test_commands_with_wrong_arguments(ed: Editor) -> None:
    for name, args in (
        ("anchor.materialize", ["not an object"]),
        ("anchor.materialize", [{"uri": 5}]),
        ("anchor.materialize", [{"uri": ed.uri("README.md")}]),
        ("anchor.strip", [{}, {}]),
        ("anchor.export", [{}]),
        ("anchor.export", [{"out": 5}]),
        ("anchor.export", [{"out": "/tmp/x", "force": "yes"}]),
        ("anchor.reindex", [{"uri": "file:///not/a/folder"}]),
        ("anchor.stats", ["x"]),
        ("anchor.no_such_command", []),
    ):
        with pytest.raises(JsonRpcException) as caught:
            await ed.command(name, *args)
        assert caught.value.code == INVALID_PARAMS, (name, args)
        assert caught.value.message
    await still_answers(ed)


async def test_a_cancelled_request_is_answered_as_cancelled(ed: Editor) -> None:
    service = ed.open("pkg/service.py")
    ed.change(service, ed.text("pkg/service.py") + "\n# typing...\n")
    # The hints request waits for the debounced re-index of the changed buffer; the
    # client gives up on it at once, as editors do when the text moves on.
    line = pos(ed.text("pkg/service.py"), "def checkout(", ed.encoding).line
    request = ed.raw_request(
        types.TEXT_DOCUMENT_INLAY_HINT,
        {
            "textDocument": {"uri": service},
            "range": {
                "start": {"line": line, "character": 0},
                "end": {"line": line + 1, "character": 0},
            },
        },
        msg_id="to-cancel",
    )
    ed.client.protocol._send_data(
        {"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": "to-cancel"}}
    )
    with pytest.raises(JsonRpcException) as caught:
        await request
    assert caught.value.code == REQUEST_CANCELLED
    ed.close("pkg/service.py")
    await still_answers(ed)
