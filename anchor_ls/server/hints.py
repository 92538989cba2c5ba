"""Inlay hints: the tag facts of the active policy at the end of each def/class header.

This is the hot path (every scroll asks for it), so a file's hints are built once as
JSON text (see hintstore), kept until a change touches them, and cut to the requested
range by line.
"""

from __future__ import annotations

import json
from dataclasses import replace
from functools import lru_cache
from typing import Any, NamedTuple

from anchor_ls.index import Entity, Graph
from anchor_ls.index.model import path_of
from anchor_ls.server.fields import across_tests, look, related, short_name, shown_fields
from anchor_ls.server.folders import Folder
from anchor_ls.server.hintstore import NO_HINTS, FileHints
from anchor_ls.server.positions import LineTable, bytes_to_units
from anchor_ls.tags.policy import FIELD_SPECS, ResolvedPolicy, TagField, fields_for

DEF_KINDS = frozenset({"class", "function", "method"})
TOOLTIP_ITEMS = 60
_OPEN, _CLOSE = b"([{", b")]}"


class HintForm(NamedTuple):
    """What a file's hints depend on besides the index.

    A client that resolves tooltips or label locations gets hints without them (much
    smaller: a location names the whole URI of its file) and asks for them on hover.
    """

    fields: tuple[str, ...]
    encoding: str
    lazy_tooltips: bool
    lazy_locations: bool


def header_line(table: LineTable, entity: Entity) -> int:
    """The 0-based line holding the ':' that ends a def/class header.

    Scans from the defined name, skipping brackets, strings and comments; gives
    up after 200 lines and answers the name's line.
    """
    first = entity.name_span[0]
    line = table.line(first)
    tail = line[entity.name_span[1] :]
    if (
        tail.rstrip().endswith(b":")
        and not any(c in tail for c in b"#'\"\\")
        and all(tail.count(o) == tail.count(c) for o, c in zip(_OPEN, _CLOSE, strict=True))
    ):
        return first
    depth = 0
    quote: bytes | None = None
    for row in range(first, min(first + 200, table.line_count)):
        text = table.line(row)
        i = entity.name_span[1] if row == first else 0
        while i < len(text):
            if quote is not None:
                if text[i] == 0x5C:  # backslash
                    i += 2
                    continue
                if text.startswith(quote, i):
                    i += len(quote)
                    quote = None
                    continue
                i += 1
                continue
            ch = text[i]
            if ch == 0x23:  # '#': the rest of the line is a comment
                break
            if ch in (0x22, 0x27):
                q = text[i : i + 3]
                quote = q if q in (b'"""', b"'''") else text[i : i + 1]
                i += len(quote)
                continue
            if ch in _OPEN:
                depth += 1
            elif ch in _CLOSE:
                depth = max(0, depth - 1)
            elif ch == 0x3A and depth == 0:  # ':'
                return row
            i += 1
        if quote is not None and len(quote) == 1:
            quote = None  # an unterminated one-line string ends with its line
    return first


def tooltip(
    graph: Graph, policy: ResolvedPolicy, entity: Entity, fields: list[str]
) -> dict[str, str]:
    """Markdown with the full lists behind a hint (the label is capped, this at TOOLTIP_ITEMS),
    in rank order, and what each leaves out: `+33 test callers not shown; 4 more callers cut
    at maxItems (8)`."""
    parts = [f"**{entity.kind} `{entity.id}`**"]
    for name in fields:
        items = related(graph, policy, name, entity.id)
        if not items:
            continue
        listed = "\n".join(
            f"- `{item}`{_via_note(graph, name, entity.id, item)}" for item in items[:TOOLTIP_ITEMS]
        )
        rest = len(items) - min(len(items), TOOLTIP_ITEMS)
        tail = f"\n- … and {rest} more" if rest else ""
        across, other_noun = across_tests(graph, name, entity.id)
        other = len(across)
        count = f"{len(items)} · {other} {other_noun}" if other else f"{len(items)}"
        note = _left_out(name, len(items), other, other_noun, policy.max_items)
        parts.append(f"**{name}** ({count})\n{listed}{tail}{note}")
    missed = graph.unresolved(entity.id)
    if missed and entity.kind in DEF_KINDS:
        parts.append(f"**unresolved call sites** ({missed}): calls the index could not follow")
    return {"kind": "markdown", "value": "\n\n".join(parts)}


def _left_out(field: str, count: int, other: int, other_noun: str, max_items: int) -> str:
    """The line under a field's list that says what the hint's label does not show."""
    look_of = look(field)
    told = []
    if other:
        noun = look_of.one if other == 1 else look_of.many
        where = f"{noun} {other_noun}" if other_noun == "outside tests" else f"test {noun}"
        told.append(f"+{other} {where} not shown")
    if max_items and count > max_items:
        cut = count - max_items
        told.append(
            f"{cut} more {look_of.one if cut == 1 else look_of.many} cut at maxItems ({max_items})"
        )
    return f"\n\n_{'; '.join(told)}_" if told else ""


def _via_note(graph: Graph, field: str, entity_id: str, item: str) -> str:
    """` (via import)`: how the binder found the call a CALLS or CALLED_BY item stands for."""
    if field == "CALLED_BY":
        how = graph.via(item, entity_id)
    elif field == "CALLS":
        how = graph.via(entity_id, item)
    else:
        return ""
    return f" (via {how})" if how else ""


_COMMA = json.dumps({"value": ", "})


@lru_cache(maxsize=256)
def _symbol(field: str, first: bool) -> str:
    symbol = f"{look(field).symbol} "
    return json.dumps({"value": symbol if first else "  " + symbol})


def _label(
    folder: Folder,
    graph: Graph,
    shown: list[TagField],
    encoding: str | None,
    names: dict[str, str],
    entity_id: str,
) -> str:
    """Label parts as JSON: a symbol per field, then names that link to their definitions
    (no links when encoding is None: the client resolves them). A cut field ends with its
    count, and what it leaves across the test boundary: `[+4 more · 33 tests]`.

    `names` keeps the JSON of each id's part already made for this file (ids repeat).
    """
    parts: list[str] = []
    for field in shown:
        parts.append(_symbol(field.name, not parts))
        for n, entry in enumerate(field.entries):
            if n:
                parts.append(_COMMA)
            part = names.get(entry)
            if part is None:
                part = names[entry] = _name_part(folder, graph, entry, encoding)
            parts.append(part)
        if field.more:
            across, other_noun = across_tests(graph, field.name, entity_id)
            also = f" · {len(across)} {other_noun}" if across else ""
            parts.append(json.dumps({"value": f" [+{field.more} more{also}]"}))
    return "[" + ", ".join(parts) + "]"


def _name_part(folder: Folder, graph: Graph, entry: str, encoding: str | None) -> str:
    target = graph.entity(entry)
    if target is None:  # a dense target such as env:HOME
        return json.dumps({"value": entry})
    name = short_name(entry, graph)
    if encoding is None:  # the client asks for the link when it needs it
        return json.dumps({"value": name})
    view = folder.view(target.path)  # a library's file for a definition outside
    if view is None:
        return json.dumps({"value": name})
    return view.name_json(target, name, encoding)


def file_hints(folder: Folder, relpath: str, form: HintForm) -> FileHints:
    """Every def/class header hint of relpath, showing the form's fields of the policy.

    What the form leaves to inlayHint/resolve, the hint carries the data to find again.
    """
    graph, policy, view = folder.graph, folder.policy, folder.view(relpath)
    if graph is None or policy is None or view is None:
        return NO_HINTS
    headers = view.headers
    encoding = form.encoding
    links = None if form.lazy_locations else encoding
    # Only the fields that hints show: fields_for then computes nothing else.
    policy = replace(policy, fields=shown_fields(policy, form.fields))
    if not policy.fields:
        return NO_HINTS
    hints: list[tuple[int, str]] = []
    deps = {relpath}
    names: dict[str, str] = {}
    for entity in graph.file_entities(relpath):
        if entity.kind not in DEF_KINDS:
            continue
        shown = fields_for(graph, entity.id, policy)
        if not shown:
            continue
        at = headers.get((entity.name_span, encoding))
        if at is None:
            row = header_line(view.table, entity)
            end = view.table.line(row)
            at = headers[(entity.name_span, encoding)] = (
                row,
                bytes_to_units(end, len(end), encoding),
            )
        row, character = at
        extra = []
        if not form.lazy_tooltips:
            told = tooltip(graph, policy, entity, [f.name for f in shown])
            extra.append(f'"tooltip": {json.dumps(told)}')
        if form.lazy_tooltips or form.lazy_locations:
            extra.append(f'"data": {{"uri": {view.uri_json}, "id": {json.dumps(entity.id)}}}')
        hints.append(
            (
                row,
                f'{{"position": {{"line": {row}, "character": {character}}}, '
                f'"label": {_label(folder, graph, shown, links, names, entity.id)}, '
                f'"paddingLeft": true, {", ".join(extra)}}}',
            )
        )
        deps.update(path_of(e) for f in shown for e in f.entries)
        for field in shown:  # what a cut field keeps turns on the rank of every entry
            if field.more:
                spec = FIELD_SPECS[field.name]
                step = graph.out if spec.forward else graph.into
                deps.update(path_of(e) for e in step(spec.kind, entity.id))
    hints.sort(key=lambda h: h[0])  # stable: hints on one line keep their source order
    return FileHints(tuple(r for r, _ in hints), tuple(h for _, h in hints), frozenset(deps))


def resolve_hint(folder: Folder, entity_id: str, form: HintForm) -> dict[str, Any] | None:
    """What inlayHint/resolve fills in: the tooltip, and the label with every name linked."""
    graph, policy = folder.graph, folder.policy
    if graph is None or policy is None:
        return None
    entity = graph.entity(entity_id)
    if entity is None:
        return None
    policy = replace(policy, fields=shown_fields(policy, form.fields))
    shown = fields_for(graph, entity_id, policy)
    found: dict[str, Any] = {"tooltip": tooltip(graph, policy, entity, [f.name for f in shown])}
    if form.lazy_locations and shown:
        found["label"] = json.loads(_label(folder, graph, shown, form.encoding, {}, entity_id))
    return found
