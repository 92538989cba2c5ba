"""prepareCallHierarchy at either definition of a function defined in both branches of
an `if` (pytest's `_pytest/_argcomplete.py:109` and `:114`) gives the one entity, whose
incoming and outgoing calls are those of both variants; through the real server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from support.lsp import Editor, column, shared_session, write_files
from test_index_redefinitions import FUNCTION, SOURCE, lines_of

pytestmark = pytest.mark.asyncio(loop_scope="module")


def make_repo(tmp: Path) -> Path:
    root = tmp / "repo"
    write_files(root, {"argcomplete.py": SOURCE})
    return root


session, ed = shared_session(make_repo)


async def prepare_at(ed: Editor, line: int) -> Any:
    text = ed.text("argcomplete.py")
    header = text.splitlines()[line]
    at = types.Position(line, column(header, header.index("try_argcomplete") + 3, ed.encoding))
    return await ed.client.text_document_prepare_call_hierarchy_async(
        types.CallHierarchyPrepareParams(types.TextDocumentIdentifier(ed.uri("argcomplete.py")), at)
    )


@pytest.mark.parametrize("which", [0, 1], ids=["first", "second"])
async def test_either_definition_prepares_the_function(ed: Editor, which: int) -> None:
    line = lines_of(SOURCE, "def try_argcomplete")[which]
    items = await prepare_at(ed, line)
    assert items and [item.detail for item in items] == [FUNCTION]
    incoming = await ed.client.call_hierarchy_incoming_calls_async(
        types.CallHierarchyIncomingCallsParams(items[0])
    )
    assert [call.from_.detail for call in incoming] == ["argcomplete.py:main"]
    outgoing = await ed.client.call_hierarchy_outgoing_calls_async(
        types.CallHierarchyOutgoingCallsParams(items[0])
    )
    assert sorted(call.to.detail for call in outgoing) == [
        "argcomplete.py:complete",
        "argcomplete.py:ignore",
    ]
