"""The text of one CodeAnchor block (DESIGN.md, "Tag blocks"), before indentation and line ends."""

from __future__ import annotations

import re
from collections.abc import Sequence

from anchor_ls.index.model import Entity
from anchor_ls.tags.policy import TagField

DELIMITER = "# === CodeAnchor ==="
MARKER = b"CodeAnchor ==="  # cheap test for "may hold a block" on raw bytes

# Characters that would end a comment line or make the source invalid (NUL) are escaped,
# so an odd file name can never break a block apart.
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def _safe(text: str) -> str:
    return _UNSAFE.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


def field_line(tag: TagField) -> str:
    items = [_safe(e) for e in tag.entries]
    if tag.more:
        items.append(f"[+{tag.more} more]")
    return f"# {tag.name}: {', '.join(items)}"


def block_lines(entity: Entity, fields: Sequence[TagField]) -> list[str]:
    """Delimiter, "# <kind> <id>", one line per non-empty field, delimiter."""
    lines = [DELIMITER, f"# {entity.kind} {_safe(entity.id)}"]
    lines.extend(field_line(f) for f in fields if f.entries or f.more)
    lines.append(DELIMITER)
    return lines
