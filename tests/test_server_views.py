"""Inlay hints, code lenses and both hierarchies on fixtures/example, read-only.

One server per client profile for the whole module: nothing here changes the repository.
Expected facts come from fixtures/example/expected.json (hand-written), positions from
the source text, converted to the units the client negotiated.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from lsprotocol import types
from support.lsp import (
    Editor,
    column,
    copy_example,
    expected_edges,
    hint_on,
    label_text,
    line_of,
    pos,
    resolves,
    shared_session,
    text_at,
)

from anchor_ls.index.via import VIA_KINDS

pytestmark = pytest.mark.asyncio(loop_scope="module")

CHECKOUT = "pkg/service.py:checkout"


session, ed = shared_session(copy_example)


def callers_of(entity_id: str, tests: bool = False) -> list[str]:
    """Expected callers; tags (hints, lenses) list callers in test files under TEST_REF."""
    return sorted(
        src
        for src, dst in expected_edges("calls")
        if dst == entity_id and (tests or not src.startswith("tests/"))
    )


def short(entity_id: str) -> str:
    return entity_id.partition(":")[2]


async def test_position_encoding_is_negotiated(ed: Editor) -> None:
    offered = ed.client.capabilities.general  # type: ignore[union-attr]
    offers_utf8 = offered is not None and "utf-8" in (offered.position_encodings or [])
    assert ed.encoding == ("utf-8" if offers_utf8 else "utf-16")


async def test_hint_lists_callers_at_the_end_of_the_header(ed: Editor) -> None:
    text = ed.text("pkg/service.py")
    line = line_of(text, "def checkout(")
    hint = hint_on(await ed.hints("pkg/service.py"), line)
    assert hint is not None
    callers = callers_of(CHECKOUT)
    assert label_text(hint) == "← " + ", ".join(short(c) for c in callers)
    header = text.splitlines()[line]
    assert hint.position.character == column(header, len(header), ed.encoding)
    lazy = resolves(ed.client, "tooltip")
    assert (hint.tooltip is None) == lazy  # left to inlayHint/resolve where it can be
    if lazy:
        hint = await ed.client.inlay_hint_resolve_async(hint)
    tooltip = hint.tooltip.value  # type: ignore[union-attr]
    assert all(f"`{c}`" in tooltip for c in callers)


async def test_every_name_in_a_hint_links_to_its_definition(ed: Editor) -> None:
    text = ed.text("pkg/service.py")
    hint = await ed.linked_hint("pkg/service.py", line_of(text, "def checkout("))
    assert hint is not None and not isinstance(hint.label, str)
    named = [p for p in hint.label if p.location is not None]
    assert [p.value for p in named] == [short(c) for c in callers_of(CHECKOUT)]
    for part in named:
        assert part.location is not None
        rel = part.location.uri.split("/repo/", 1)[1]
        source = ed.text(rel)
        leaf = part.value.rsplit(".", 1)[-1]
        assert text_at(source, part.location.range, ed.encoding) == leaf
    # größe: same start in both encodings, a different end (ö and ß are 2 bytes in UTF-8).
    grosse = next(p for p in named if p.value == "größe")
    assert grosse.location is not None
    header = ed.text("pkg/unicode.py").splitlines()[grosse.location.range.start.line]
    assert grosse.location.range.end.character == column(header, 9, ed.encoding)


async def test_hint_of_a_multi_line_header_sits_on_its_last_line(ed: Editor) -> None:
    text = ed.text("pkg/unicode.py")
    hints = await ed.hints("pkg/unicode.py")
    closing = line_of(text, "):")
    hint = hint_on(hints, closing)
    assert hint is not None and label_text(hint) == "← größer"
    assert hint_on(hints, line_of(text, "def größe(")) is None


async def test_only_hints_inside_the_requested_range(ed: Editor) -> None:
    text = ed.text("pkg/service.py")
    run = line_of(text, "def run(")
    hints = await ed.hints("pkg/service.py", run - 1, run + 1)
    assert [h.position.line for h in hints] == [run]
    everything = await ed.hints("pkg/service.py")
    assert len(everything) > 1 and any(h.position.line < run - 1 for h in everything)


async def test_inheritance_hints_both_ways(ed: Editor) -> None:
    text = ed.text("pkg/repo.py")
    hints = await ed.hints("pkg/repo.py")
    base = hint_on(hints, line_of(text, "class Repo:"))
    derived = hint_on(hints, line_of(text, "class SqlRepo(Repo):"))
    assert base is not None and "▼ SqlRepo" in label_text(base)
    assert derived is not None and "▲ Repo" in label_text(derived)


async def lenses_at(ed: Editor, rel: str, line: int) -> dict[str, types.CodeLens]:
    lenses = await ed.client.text_document_code_lens_async(
        types.CodeLensParams(types.TextDocumentIdentifier(ed.uri(rel)))
    )
    found = {}
    for lens in lenses or []:
        if lens.range.start.line == line:
            resolved = await ed.client.code_lens_resolve_async(lens)
            assert resolved.command is not None
            noun = resolved.command.title.split(" · ")[0].split(" ", 1)[1]  # `· 3 tests` aside
            found[noun] = resolved
    return found


async def test_lenses_count_and_locate_callers(ed: Editor) -> None:
    text = ed.text("pkg/service.py")
    line = line_of(text, "def checkout(")
    lenses = await lenses_at(ed, "pkg/service.py", line)
    callers = callers_of(CHECKOUT)
    lens = lenses["callers"]
    assert lens.command is not None
    everyone = callers_of(CHECKOUT, tests=True)
    tests = len(everyone) - len(callers)  # counted apart, listed after the callers
    assert tests and lens.command.title == f"{len(callers)} callers · {tests} tests"
    assert lens.command.command == "anchor.showLocations"
    doc_uri, position, locations = lens.command.arguments  # type: ignore[misc]
    assert doc_uri == ed.uri("pkg/service.py")
    assert position == {"line": line, "character": pos(text, "checkout", ed.encoding).character}

    def rel_of(location: dict) -> str:
        return location["uri"].split("/repo/", 1)[1]

    files = [rel_of(location) for location in locations]
    assert len(files) >= len(everyone)
    assert {f for f in files[: len(callers)]} == {c.partition(":")[0] for c in callers}
    assert {f for f in files[len(callers) :]} == {"tests/test_service.py"}
    for location in locations:
        rel = rel_of(location)
        rng = types.Range(
            types.Position(**location["range"]["start"]), types.Position(**location["range"]["end"])
        )
        assert text_at(ed.text(rel), rng, ed.encoding).startswith("checkout")
    callees = sorted(dst for src, dst in expected_edges("calls") if src == CHECKOUT)
    assert lenses["callees"].command is not None
    assert int(lenses["callees"].command.title.split()[0]) >= len(callees)


async def test_lens_sits_above_decorators_and_counts_subclasses(ed: Editor) -> None:
    service = ed.text("pkg/service.py")
    run_lenses = await lenses_at(ed, "pkg/service.py", line_of(service, "    @timed"))
    assert "callers" in run_lenses
    repo = ed.text("pkg/repo.py")
    repo_lenses = await lenses_at(ed, "pkg/repo.py", line_of(repo, "class Repo:"))
    assert repo_lenses["subclass"].command.title == "1 subclass"  # type: ignore[union-attr]


async def prepare_calls(ed: Editor, rel: str, position: types.Position) -> Any:
    return await ed.client.text_document_prepare_call_hierarchy_async(
        types.CallHierarchyPrepareParams(types.TextDocumentIdentifier(ed.uri(rel)), position)
    )


async def test_call_hierarchy_incoming_with_call_sites(ed: Editor) -> None:
    text = ed.text("pkg/service.py")
    items = await prepare_calls(ed, "pkg/service.py", pos(text, "def checkout(", ed.encoding, 5))
    assert items and items[0].name == "checkout" and items[0].detail == CHECKOUT
    assert text_at(text, items[0].selection_range, ed.encoding) == "checkout"
    incoming = await ed.client.call_hierarchy_incoming_calls_async(
        types.CallHierarchyIncomingCallsParams(items[0])
    )
    # Calls first; references (a function used as a value) follow, marked in their detail.
    calls = [c for c in incoming if c.from_.detail != f"{c.from_.data['id']} (reference)"]  # type: ignore[index]
    assert list(incoming[: len(calls)]) == calls
    assert sorted(c.from_.detail for c in calls) == callers_of(CHECKOUT, tests=True)
    # Each call says how the index found it (anchor_ls.index.via), in its data.
    assert {c.from_.data["call_via"] for c in calls} <= set(VIA_KINDS)  # type: ignore[index]
    for call in incoming:
        source = ed.text(call.from_.uri.split("/repo/", 1)[1])
        assert call.from_ranges
        for rng in call.from_ranges:
            assert text_at(source, rng, ed.encoding).startswith("checkout")


async def test_call_hierarchy_outgoing_and_prepare_on_a_call(ed: Editor) -> None:
    text = ed.text("pkg/service.py")
    call_line = text.splitlines()[line_of(text, "return checkout([sku]")]
    at = types.Position(
        line_of(text, "return checkout([sku]"),
        column(call_line, call_line.index("checkout") + 2, ed.encoding),
    )
    items = await prepare_calls(ed, "pkg/service.py", at)
    assert items and items[0].detail == CHECKOUT
    outgoing = await ed.client.call_hierarchy_outgoing_calls_async(
        types.CallHierarchyOutgoingCallsParams(items[0])
    )
    callees = {dst for src, dst in expected_edges("calls") if src == CHECKOUT}
    assert callees <= {c.to.detail for c in outgoing}
    body = items[0].range
    for call in outgoing:
        assert call.from_ranges
        for rng in call.from_ranges:
            # The site is the called expression (`price_of`, `order.add`, or a callback
            # parameter like `discount`), inside checkout's body.
            assert re.fullmatch(r"[\w.]+", text_at(text, rng, ed.encoding))
            assert body.start.line <= rng.start.line <= body.end.line


async def test_call_site_after_non_ascii_text(ed: Editor) -> None:
    text = ed.text("pkg/service.py")
    items = await prepare_calls(ed, "pkg/service.py", pos(text, "def checkout(", ed.encoding, 5))
    incoming = await ed.client.call_hierarchy_incoming_calls_async(
        types.CallHierarchyIncomingCallsParams(items[0])
    )
    call = next(c for c in incoming if c.from_.name == "größe")
    source = ed.text("pkg/unicode.py")
    expected = pos(source, "checkout([label]", ed.encoding)
    assert [r.start for r in call.from_ranges] == [expected]


async def prepare_types(ed: Editor, rel: str, position: types.Position) -> Any:
    return await ed.client.text_document_prepare_type_hierarchy_async(
        types.TypeHierarchyPrepareParams(types.TextDocumentIdentifier(ed.uri(rel)), position)
    )


async def test_type_hierarchy(ed: Editor) -> None:
    text = ed.text("pkg/repo.py")
    sql = await prepare_types(ed, "pkg/repo.py", pos(text, "class SqlRepo", ed.encoding, 7))
    assert [i.detail for i in sql] == ["pkg/repo.py:SqlRepo"]
    supers = await ed.client.type_hierarchy_supertypes_async(
        types.TypeHierarchySupertypesParams(sql[0])
    )
    assert [i.detail for i in supers] == ["pkg/repo.py:Repo"]
    subs = await ed.client.type_hierarchy_subtypes_async(
        types.TypeHierarchySubtypesParams(supers[0])
    )
    assert [i.detail for i in subs] == ["pkg/repo.py:SqlRepo"]
    # Inside a method, the hierarchy is the enclosing class's.
    inner = await prepare_types(ed, "pkg/repo.py", pos(text, "self._execute(f", ed.encoding))
    assert [i.detail for i in inner] == ["pkg/repo.py:SqlRepo"]


async def test_stats_report_index_and_policy(ed: Editor) -> None:
    stats = await ed.command("anchor.stats")
    (folder,) = stats["folders"]
    on_disk = sorted(p.relative_to(ed.root).as_posix() for p in ed.root.rglob("*.py"))
    assert folder["stats"]["files"] == len(on_disk)
    assert folder["policy"]["name"] in ("topo", "inv")
    assert folder["policy"]["reason"].startswith("auto")
    assert stats["settings"]["hintFields"] == ["CALLED_BY", "BASE", "DERIVED"]
    assert stats["positionEncoding"] == ed.encoding
