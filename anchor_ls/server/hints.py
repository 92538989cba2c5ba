"""Inlay hints: the tag facts of the active policy at the end of each def/class header.

This is the hot path (every scroll asks for it), so hints are built as JSON-ready
dicts, cached per file until the index changes, and filtered by range afterwards.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from anchor_ls.index import Entity, Graph
from anchor_ls.server.fields import look, related, short_name
from anchor_ls.server.folders import Folder
from anchor_ls.server.positions import LineTable, bytes_to_units
from anchor_ls.server.protocol import JsonList
from anchor_ls.server.settings import Settings
from anchor_ls.tags.policy import ResolvedPolicy, TagField, fields_for

DEF_KINDS = frozenset({"class", "function", "method"})
TOOLTIP_ITEMS = 60
_OPEN, _CLOSE = b"([{", b")]}"


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
    """Markdown with the full lists behind a hint (the label is capped, this at TOOLTIP_ITEMS)."""
    parts = [f"**{entity.kind} `{entity.id}`**"]
    for name in fields:
        items = related(graph, policy, name, entity.id)
        if not items:
            continue
        listed = "\n".join(f"- `{item}`" for item in items[:TOOLTIP_ITEMS])
        rest = len(items) - min(len(items), TOOLTIP_ITEMS)
        tail = f"\n- … and {rest} more" if rest else ""
        parts.append(f"**{name}** ({len(items)})\n{listed}{tail}")
    return {"kind": "markdown", "value": "\n\n".join(parts)}


def _label(folder: Folder, graph: Graph, shown: list[TagField], encoding: str) -> list[dict]:
    """Label parts: a symbol per field, then names that link to their definitions."""
    parts: list[dict[str, Any]] = []
    for field in shown:
        symbol = f"{look(field.name).symbol} "
        parts.append({"value": ("  " + symbol) if parts else symbol})
        for n, entry in enumerate(field.entries):
            if n:
                parts.append({"value": ", "})
            target = graph.entity(entry)
            if target is None:  # an external name or a dense target such as env:HOME
                parts.append({"value": entry})
                continue
            part: dict[str, Any] = {"value": short_name(entry)}
            view = folder.view(target.path)
            if view is not None:
                part["location"] = view.name_location(target, encoding)
            parts.append(part)
        if field.more:
            parts.append({"value": f" [+{field.more} more]"})
    return parts


def file_hints(
    folder: Folder, relpath: str, settings: Settings, encoding: str, lazy: bool
) -> list[tuple[int, dict]]:
    """(line, hint) for every def/class header of relpath, as JSON, in line order.

    With `lazy` the tooltip is left to inlayHint/resolve and the hint carries the data
    to find it again.
    """
    graph, policy, view = folder.graph, folder.policy, folder.view(relpath)
    if graph is None or policy is None or view is None:
        return []
    table = view.table
    # The policy's fields that hints show: fields_for then computes nothing else.
    policy = replace(policy, fields=tuple(f for f in policy.fields if f in settings.hint_fields))
    hints: list[tuple[int, dict]] = []
    with graph.lock:
        for entity in graph.file_entities(relpath):
            if entity.kind not in DEF_KINDS:
                continue
            shown = fields_for(graph, entity.id, policy)
            if not shown:
                continue
            row = header_line(table, entity)
            end = table.line(row)
            hint: dict[str, Any] = {
                "position": {"line": row, "character": bytes_to_units(end, len(end), encoding)},
                "label": _label(folder, graph, shown, encoding),
                "paddingLeft": True,
            }
            if lazy:
                hint["data"] = {"uri": view.uri, "id": entity.id}
            else:
                hint["tooltip"] = tooltip(graph, policy, entity, [f.name for f in shown])
            hints.append((row, hint))
    return hints


def inlay_hints(
    folder: Folder,
    relpath: str,
    settings: Settings,
    encoding: str,
    lines: tuple[int, int],
    lazy: bool,
    compute: bool = True,
) -> JsonList | None:
    """The hints of relpath whose header ends within lines (first, last), both included.

    With compute False: only what is remembered for this file, else None.
    """
    key = ("hints", relpath, settings.hint_fields, encoding, lazy)
    if compute:
        every = folder.memo(key, lambda: file_hints(folder, relpath, settings, encoding, lazy))
    else:
        every = folder.remembered(key)
        if every is None:
            return None
    first, last = lines
    return JsonList(hint for row, hint in every if first <= row <= last)


def resolve_tooltip(folder: Folder, entity_id: str, settings: Settings) -> dict[str, str] | None:
    graph, policy = folder.graph, folder.policy
    if graph is None or policy is None:
        return None
    with graph.lock:
        entity = graph.entity(entity_id)
        if entity is None:
            return None
        shown = [
            f.name for f in fields_for(graph, entity_id, policy) if f.name in settings.hint_fields
        ]
        return tooltip(graph, policy, entity, shown)
