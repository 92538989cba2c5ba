"""What the editor shows of the first step out of the repository, through a real server
over stdio whose `python` setting names an environment with the fake packages of
fixtures/libraries: inlay hints and type hierarchy reach the library's classes (at their
file: a click opens it), code lenses say what a method overrides, call hierarchy's outgoing
calls reach library methods. Places and titles are written by hand from the fixture."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.uris import from_fs_path
from support.library_env import SITE_PACKAGES, copy_app, make_environment
from support.lsp import Editor, line_of, shared_session

pytestmark = pytest.mark.asyncio(loop_scope="module")

VIEWS, CLIENTS = "shop/views.py", "shop/clients.py"
GENERIC = from_fs_path(str(SITE_PACKAGES / "django" / "views" / "generic" / "base.py"))
SESSIONS = from_fs_path(str(SITE_PACKAGES / "requests" / "sessions.py"))
RESPONSE = from_fs_path(str(SITE_PACKAGES / "requests" / "models.py"))


def span(rng: types.Range) -> tuple[int, int, int, int]:
    return (rng.start.line, rng.start.character, rng.end.line, rng.end.character)


def environment(work: Path) -> dict[str, Any]:
    return {"anchorLs": {"python": str(make_environment(work / "env"))}}


session, ed = shared_session(copy_app, environment)


def at(ed: Editor, rel: str, needle: str) -> types.Position:
    text = ed.text(rel)
    line = line_of(text, needle)
    return types.Position(line, text.splitlines()[line].index(needle.split()[1].split("(")[0]))


async def test_a_class_hint_links_its_library_base_to_the_library_file(ed: Editor) -> None:
    line = line_of(ed.text(VIEWS), "class ArticleView(")
    hint = await ed.linked_hint(VIEWS, line)
    assert hint is not None and not isinstance(hint.label, str)
    part = next(p for p in hint.label if p.value == "View")
    assert part.location is not None
    assert part.location.uri == GENERIC
    assert span(part.location.range) == (0, 6, 0, 10)  # `class View:`, line 1
    assert "".join(p.value for p in hint.label).startswith("▲ View")


async def test_type_hierarchy_goes_up_into_the_library_and_back(ed: Editor) -> None:
    client = ed.client
    items = await client.text_document_prepare_type_hierarchy_async(
        types.TypeHierarchyPrepareParams(
            types.TextDocumentIdentifier(ed.uri(VIEWS)), at(ed, VIEWS, "class ArticleView(")
        )
    )
    assert items and items[0].name == "ArticleView"
    supers = await client.type_hierarchy_supertypes_async(
        types.TypeHierarchySupertypesParams(item=items[0])
    )
    assert [(s.name, s.detail, s.uri) for s in supers or []] == [
        ("View", "ext:django.views.generic.base.View", GENERIC)
    ]
    view = supers[0]  # type: ignore[index]
    assert span(view.selection_range) == (0, 6, 0, 10)
    assert (view.range.start.line, view.range.end.line) == (0, 11)  # lines 1-12
    # From the library's class, back down to the repository's subclasses.
    subs = await client.type_hierarchy_subtypes_async(types.TypeHierarchySubtypesParams(item=view))
    assert [s.detail for s in subs or []] == ["shop/views.py:ArticleView"]


async def lens_titles(ed: Editor, rel: str) -> dict[int, list[tuple[str, list[Any]]]]:
    """line -> (title, locations) of every resolved lens of the file."""
    found: dict[int, list[tuple[str, list[Any]]]] = {}
    lenses = await ed.client.text_document_code_lens_async(
        types.CodeLensParams(types.TextDocumentIdentifier(ed.uri(rel)))
    )
    for lens in lenses or []:
        if lens.command is None:
            lens = await ed.client.code_lens_resolve_async(lens)
        assert lens.command is not None
        places = lens.command.arguments[2] if lens.command.arguments else []
        found.setdefault(lens.range.start.line, []).append((lens.command.title, places))
    return found


async def test_code_lenses_say_what_a_method_overrides(ed: Editor) -> None:
    lenses = await lens_titles(ed, VIEWS)
    # 0-based lines of views.py: ArticleView.dispatch, SpecialArticleView.dispatch, and
    # HomeView.render_to_response
    dispatch, special, render = 6, 14, 19
    titles = {
        line: [t for t, _ in lenses.get(line, []) if "override" in t]
        for line in (dispatch, special, render)
    }
    assert titles == {
        dispatch: ["overrides View.dispatch", "1 override"],
        special: ["overrides ArticleView.dispatch"],
        render: ["overrides TemplateResponseMixin.render_to_response"],
    }
    places = dict(lenses[dispatch])["overrides View.dispatch"]
    assert places == [
        {
            "uri": GENERIC,
            "range": {"start": {"line": 9, "character": 8}, "end": {"line": 9, "character": 16}},
        }
    ]
    assert [p["uri"] for p in dict(lenses[dispatch])["1 override"]] == [ed.uri(VIEWS)]
    assert [p["range"]["start"]["line"] for p in dict(lenses[dispatch])["1 override"]] == [special]


async def test_outgoing_calls_reach_library_methods_at_their_files(ed: Editor) -> None:
    client = ed.client
    items = await client.text_document_prepare_call_hierarchy_async(
        types.CallHierarchyPrepareParams(
            types.TextDocumentIdentifier(ed.uri(CLIENTS)), at(ed, CLIENTS, "    def fetch(")
        )
    )
    assert items and items[0].detail == "shop/clients.py:Client.fetch"
    calls = await client.call_hierarchy_outgoing_calls_async(
        types.CallHierarchyOutgoingCallsParams(item=items[0])
    )
    call_line = line_of(ed.text(CLIENTS), "        return self.session.get(url).json()")
    found = {
        (
            c.to.detail,
            c.to.uri,
            span(c.to.selection_range),
            tuple(r.start.line for r in c.from_ranges),
        )
        for c in calls or []
    }
    assert found == {
        ("ext:requests.sessions.Session.get", SESSIONS, (4, 8, 4, 11), (call_line,)),
        ("ext:requests.models.Response.json", RESPONSE, (1, 8, 1, 12), (call_line,)),
    }
    # From the library's method, its callers in the repository.
    get = next(c.to for c in calls or [] if c.to.name == "get")
    incoming = await client.call_hierarchy_incoming_calls_async(
        types.CallHierarchyIncomingCallsParams(item=get)
    )
    assert [(c.from_.detail, [r.start.line for r in c.from_ranges]) for c in incoming or []] == [
        ("shop/clients.py:Client.fetch", [call_line])
    ]


async def test_a_lens_listed_before_its_override_went_away_counts_none(ed: Editor) -> None:
    """A client resolves lenses it listed before an edit (VS Code does as it scrolls): where
    the method overrides nothing now, the title says so, never a bare `overrides`."""
    doc = ed.open(VIEWS)
    before = ed.text(VIEWS)
    try:
        lenses = await ed.client.text_document_code_lens_async(
            types.CodeLensParams(types.TextDocumentIdentifier(doc))
        )
        special = line_of(before, "class SpecialArticleView(") + 1
        stale = next(
            lens
            for lens in lenses or []
            if lens.range.start.line == special and lens.data["field"] == "OVERRIDES"
        )
        ed.change(doc, before.replace("SpecialArticleView(ArticleView):", "SpecialArticleView:"))

        async def resolved_after_the_edit() -> types.CodeLens | None:
            lens = await ed.client.code_lens_resolve_async(stale)
            assert lens.command is not None
            return None if lens.command.title == "overrides ArticleView.dispatch" else lens

        lens = await ed.until(resolved_after_the_edit, "the edit to reach the index")
        assert lens.command.title == "0 overridden definitions"
        assert lens.command.arguments[2] == []
    finally:
        ed.change(doc, before)
        ed.close(VIEWS)
