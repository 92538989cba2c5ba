"""The text of one CodeAnchor block (DESIGN.md, "Tag blocks"), before indentation and line ends.

    # === CodeAnchor pkg/service.py:CheckoutService.run
    # CALLS: pkg/models.py:Order, .validate, :checkout
    # CALLED_BY: pkg/api.py:submit
    # ===

The opening line names the definition below by its full id (what `grep` finds from a
link in another file); the closing line is a bare `# ===`. Links to the same file are
written short, and stay unambiguous because the opening line says which file and class
they are in: `:checkout` is `pkg/service.py:checkout`, and in a method's block `.validate`
is a method of the same class (`pkg/service.py:CheckoutService.validate`).

Blocks written before this format (a `# === CodeAnchor ===` line, `# <kind> <id>`,
fields, `# === CodeAnchor ===`) are still found and stripped by `text`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from anchor_ls.index.model import Entity, path_of
from anchor_ls.tags.policy import TagField

OPEN = "# === CodeAnchor"  # the opening line: OPEN, a space, the entity id
CLOSE = "# ==="
LEGACY_DELIMITER = "# === CodeAnchor ==="  # opened and closed the blocks of the first format
MARKER = b"=== CodeAnchor"  # cheap test for "may hold a block" (either format) on raw bytes

# Characters that would end a comment line or make the source invalid (NUL) are escaped,
# so an odd file name can never break a block apart.
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def _safe(text: str) -> str:
    return _UNSAFE.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


def written_id(ident: str) -> str:
    """An id as a block's opening line writes it (characters that would break a line escaped)."""
    return _safe(ident)


def short_id(entry: str, entity: Entity) -> str:
    """How a block for `entity` writes the link `entry`: same-file links without the path.

    A method's siblings (`pkg/m.py:A.g` from `pkg/m.py:A.f`) are `.g`; anything else in
    the same file is `:qualname`; other files, and modules, keep the full id.
    """
    path, sep, qualname = entry.partition(":")
    if not sep or not qualname or path != entity.path:
        return entry
    if entity.kind == "method":
        owner = entity.qualname.rpartition(".")[0]
        head, dot, name = qualname.rpartition(".")
        if dot and head == owner:
            return "." + name
    return ":" + qualname


def field_line(tag: TagField, entity: Entity | None = None) -> str:
    """`# NAME: a, b, [+N more]`; with `entity`, same-file links are written short."""
    if entity is None:
        items = [_safe(e) for e in tag.entries]
    else:
        items = [_safe(short_id(e, entity)) for e in tag.entries]
    if tag.more:
        items.append(f"[+{tag.more} more]")
    return f"# {tag.name}: {', '.join(items)}"


def block_lines(entity: Entity, fields: Sequence[TagField]) -> list[str]:
    """`# === CodeAnchor <id>`, one line per non-empty field, `# ===`."""
    lines = [f"{OPEN} {_safe(entity.id)}"]
    lines.extend(field_line(f, entity) for f in fields if f.entries or f.more)
    lines.append(CLOSE)
    return lines


def block_header(lines: Sequence[str]) -> str:
    """The id a block's lines (either format, without indentation) say it is for."""
    if not lines:
        return "?"
    first = lines[0].strip()
    if first == LEGACY_DELIMITER:  # then "# <kind> <id>"
        return lines[1].strip()[2:].partition(" ")[2] if len(lines) > 1 else "?"
    return first[len(OPEN) + 1 :] if first.startswith(OPEN + " ") else "?"


def expand_id(short: str, header_id: str) -> str:
    """The full id of a link written in the block of `header_id` (inverse of short_id).

    For readers of materialized text (tests, tools): `.g` needs the header's entity to
    be a method, which `short_id` guarantees when it writes one.
    """
    path = path_of(header_id)
    if short.startswith(":"):
        return path + short
    if short.startswith("."):
        owner = header_id.partition(":")[2].rpartition(".")[0]
        return f"{path}:{owner}{short}"
    return short
