"""The codecs a Python file may declare, and the ones the project lays tags into."""

from __future__ import annotations

import codecs
import encodings.aliases
import warnings

from anchor_ls.tags.scan import ascii_compatible


def _accepted(codec: str) -> bool:
    """Whether CPython compiles a file that declares `codec`."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            source = f"# coding: {codec}\nx = 1\n".encode("ascii")
            compile(source, "<codec>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError, UnicodeError, LookupError):
        return False
    return True


def _codecs() -> list[str]:
    names = set(encodings.aliases.aliases.values()) | {"raw_unicode_escape", "unicode_escape"}
    found = set()
    for name in names:
        try:
            found.add(codecs.lookup(name).name)
        except LookupError:
            continue
    return sorted(c for c in found if _accepted(c))


ACCEPTED = _codecs()  # every codec of encodings.aliases that CPython takes for source
# The codecs whose files the project edits (the tags layer refuses the others): ASCII
# text is the same bytes in them. Escape codecs (raw-unicode-escape) read a backslash
# sequence as another character, so their text does not come back exactly.
SUPPORTED = [c for c in ACCEPTED if ascii_compatible(c) and not c.endswith("escape")]
