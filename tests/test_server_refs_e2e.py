"""References end to end: a real index of fixtures/server_refs, over stdio.

app/handlers.py defines on_save, on_load and Plugin; app/registry.py calls them and
also uses them as values (callbacks passed to register, a dict entry, a returned
class). The call hierarchy lists the references after the calls, at the names; the
code lenses count them.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from lsprotocol import types
from support.lsp import Editor, line_of, pos, shared_session, text_at

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.e2e]

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "server_refs"
HANDLERS, REGISTRY = "app/handlers.py", "app/registry.py"
ON_SAVE, ON_LOAD = f"{HANDLERS}:on_save", f"{HANDLERS}:on_load"
SETUP, HOOKS = f"{REGISTRY}:setup", f"{REGISTRY}:hooks"


def refs_repo(base: Path) -> Path:
    root = base / "repo"
    shutil.copytree(FIXTURE, root, ignore=shutil.ignore_patterns(".anchor-ls", "__pycache__"))
    return root


session, ed = shared_session(refs_repo)


async def incoming(ed: Editor, name: str) -> list[types.CallHierarchyIncomingCall]:
    text = ed.text(HANDLERS)
    items = await ed.client.text_document_prepare_call_hierarchy_async(
        types.CallHierarchyPrepareParams(
            types.TextDocumentIdentifier(ed.uri(HANDLERS)),
            pos(text, f"def {name}(", ed.encoding, 5),
        )
    )
    assert items and items[0].detail == f"{HANDLERS}:{name}"
    return list(
        await ed.client.call_hierarchy_incoming_calls_async(
            types.CallHierarchyIncomingCallsParams(items[0])
        )
    )


def is_reference(item: types.CallHierarchyItem) -> bool:
    return item.detail is not None and item.detail.endswith("(reference)")


async def test_incoming_calls_then_references_at_the_names(ed: Editor) -> None:
    found = await incoming(ed, "on_save")
    kinds = [(is_reference(c.from_), c.from_.detail) for c in found]
    assert kinds == [
        (False, ON_LOAD),
        (True, f"{HOOKS} (reference)"),
        (True, f"{SETUP} (reference)"),
    ]
    registry = ed.text(REGISTRY)
    setup = found[2]
    assert [text_at(registry, r, ed.encoding) for r in setup.from_ranges] == ["on_save"] * 2
    assert [r.start.line for r in setup.from_ranges] == [
        line_of(registry, "register(on_save)"),
        line_of(registry, "when=on_save"),
    ]


async def test_a_caller_that_also_references_is_listed_twice(ed: Editor) -> None:
    found = await incoming(ed, "on_load")
    registry = ed.text(REGISTRY)
    by_kind = {is_reference(c.from_): c for c in found if c.from_.data["id"] == SETUP}  # type: ignore[index]
    assert set(by_kind) == {False, True}
    (call,) = by_kind[False].from_ranges
    assert call.start.line == line_of(registry, "on_load(None)")
    (reference,) = by_kind[True].from_ranges
    assert reference.start.line == line_of(registry, "register(on_load")
    assert text_at(registry, reference, ed.encoding) == "on_load"
    # A reference item expands like the function it stands for.
    outgoing = await ed.client.call_hierarchy_outgoing_calls_async(
        types.CallHierarchyOutgoingCallsParams(by_kind[True].from_)
    )
    assert f"{REGISTRY}:register" in {c.to.detail for c in outgoing}


async def test_lenses_count_references(ed: Editor) -> None:
    lenses = await ed.client.text_document_code_lens_async(
        types.CodeLensParams(types.TextDocumentIdentifier(ed.uri(HANDLERS)))
    )
    titles: dict[int, set[str]] = {}
    for lens in lenses or []:
        resolved = await ed.client.code_lens_resolve_async(lens)
        assert resolved.command is not None
        titles.setdefault(lens.range.start.line, set()).add(resolved.command.title)
    text = ed.text(HANDLERS)
    assert titles[line_of(text, "def on_save(")] >= {"1 caller", "2 references"}
    assert titles[line_of(text, "def on_load(")] >= {"1 caller", "1 reference"}
    assert "1 reference" in titles[line_of(text, "class Plugin")]
