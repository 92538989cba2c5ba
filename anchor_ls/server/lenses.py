"""Code lenses: counts above each definition; resolving one fills in its locations.

`anchor.showLocations` is a client-side command: the editor clients map it to
their references view, with arguments [uri, position, locations].
"""

from __future__ import annotations

from typing import Any

from lsprotocol import types

from anchor_ls.index import Entity, Graph
from anchor_ls.index.model import path_of
from anchor_ls.server.fields import (
    SITE_KINDS,
    across_tests,
    look,
    related,
    short_name,
    sites,
)
from anchor_ls.server.folders import Folder
from anchor_ls.server.hints import DEF_KINDS
from anchor_ls.server.locations import Locator
from anchor_ls.server.settings import Settings
from anchor_ls.tags.policy import FIELD_SPECS

SHOW_LOCATIONS = "anchor.showLocations"
POSSIBLE_FIELD = "CALLED_BY"  # its lens adds the unresolved sites that may call
NAMED_FIELD = "OVERRIDES"  # its lens names what it lists (one definition, as a rule)


def title(field: str, count: int, other: int = 0, other_noun: str = "tests") -> str:
    """`7 callers`; with what the field leaves across the test boundary, `7 callers · 33 tests`."""
    noun = look(field)
    text = f"{count} {noun.one if count == 1 else noun.many}"
    return f"{text} · {other} {other_noun}" if other else text


def code_lenses(folder: Folder, relpath: str, uri: str, settings: Settings) -> list[types.CodeLens]:
    """Unresolved lenses (range and data) for every field with a non-zero count."""
    graph, policy = folder.graph, folder.policy
    if graph is None or policy is None:
        return []
    lenses: list[types.CodeLens] = []
    for entity in graph.file_entities(relpath):
        if entity.kind not in DEF_KINDS:
            continue
        line = entity.start_line - 1
        at = types.Range(types.Position(line, 0), types.Position(line, 0))
        for field in settings.lens_fields:
            if related(graph, policy, field, entity.id) or (
                field == POSSIBLE_FIELD and graph.has_maybe_callers(entity.name)
            ):
                lenses.append(
                    types.CodeLens(range=at, data={"uri": uri, "id": entity.id, "field": field})
                )
    return lenses


def _locations(graph: Graph, field: str, ids: list[str], entity: Entity, where: Locator) -> list:
    """Where the other side calls, references or tests entity (SITE_KINDS fields); where a
    forward dense fact is made, for targets that are not definitions (env:HOME); else the
    definitions of the related entities."""
    spec = FIELD_SPECS[field]
    found: list[types.Location] = []
    for other_id in ids:
        other = graph.entity(other_id)
        if other is None and spec.forward:
            spans, path = sites(graph, spec.kind, entity.id, other_id), entity.path
        elif other is None:
            continue
        else:
            path = other.path
            spans = _first_sites(graph, field, other_id, entity.id)
            if not spans:
                found.append(where.name_location(other))
                continue
        uri = where.uri(path)
        found.extend(types.Location(uri, where.range(path, span)) for span in spans)
    return found


def _possible(graph: Graph, field: str, entity: Entity) -> list:
    """For CALLED_BY: the unresolved call sites that call entity's name, (caller, span)
    each (who may call it through a value the index could not follow)."""
    if field != POSSIBLE_FIELD or entity.kind not in DEF_KINDS:
        return []
    return graph.maybe_callers(entity.name)


def _first_sites(graph: Graph, field: str, src: str, dst: str) -> list:
    for kind in SITE_KINDS.get(field, ()):
        found = sites(graph, kind, src, dst)
        if found:
            return found
    return []


def _plain(location: types.Location) -> dict[str, Any]:
    """A Location as JSON, since command arguments are untyped."""
    r = location.range
    return {
        "uri": location.uri,
        "range": {
            "start": {"line": r.start.line, "character": r.start.character},
            "end": {"line": r.end.line, "character": r.end.character},
        },
    }


def resolve_lens(folder: Folder, lens: types.CodeLens, encoding: str) -> types.CodeLens:
    """Fill in the title and the showLocations command of a lens made by code_lenses."""
    data = lens.data if isinstance(lens.data, dict) else {}
    graph, policy = folder.graph, folder.policy
    entity_id, field, uri = data.get("id"), data.get("field"), data.get("uri")
    if (
        graph is None
        or policy is None
        or not isinstance(entity_id, str)
        or not isinstance(field, str)
    ):
        lens.command = types.Command(title="(not indexed)", command="")
        return lens
    entity = graph.entity(entity_id)
    if entity is None:
        lens.command = types.Command(title="(no longer indexed)", command="")
        return lens
    where = Locator(folder, encoding)
    ids = related(graph, policy, field, entity_id)
    across, other_noun = across_tests(graph, field, entity_id)
    # the click shows what the title counts: `7 callers · 33 tests` lists the tests after
    found = _locations(graph, field, ids + across, entity, where)
    possible = _possible(graph, field, entity)
    for src, span in possible:  # after the callers, one click away as well
        path = path_of(src)
        found.append(types.Location(where.uri(path), where.range(path, span)))
    locations = [_plain(loc) for loc in found]
    position = where.name_location(entity).range.start
    if field == NAMED_FIELD and ids:  # `overrides View.dispatch`: the name says more
        named = f"{look(field).symbol} {', '.join(short_name(i, graph) for i in ids)}"
    else:
        named = title(field, len(ids), len(across), other_noun)
    lens.command = types.Command(
        title=f"{named} (+{len(possible)} possible)" if possible else named,
        command=SHOW_LOCATIONS,
        arguments=[
            uri,
            {"line": position.line, "character": position.character},
            locations,
        ],
    )
    return lens
