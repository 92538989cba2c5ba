"""Text edits that turn one version of a file into another, line by line.

Materialize and strip add or remove whole comment lines, so a line diff gives
small edits that keep the editor's cursor and folds where they were.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from lsprotocol import types

from anchor_ls.server.positions import bytes_to_units

_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")  # ends as positions.LINE_ENDING


def split_lines(text: str) -> list[str]:
    """Lines with their endings, split exactly where LSP counts a new line."""
    return _LINE.findall(text)


def _end_of(lines: list[str], index: int, encoding: str) -> types.Position:
    """Position of the start of line `index`, or of the end of the text when past it."""
    if index < len(lines):
        return types.Position(index, 0)
    if not lines:
        return types.Position(0, 0)
    last = lines[-1]
    if last.endswith(("\n", "\r")):
        return types.Position(len(lines), 0)
    raw = last.encode("utf-8", errors="surrogatepass")
    return types.Position(len(lines) - 1, bytes_to_units(raw, len(raw), encoding))


def text_edits(old: str, new: str, encoding: str) -> list[types.TextEdit]:
    """Non-overlapping edits, in document order, against `old`."""
    a, b = split_lines(old), split_lines(new)
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    edits = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        edits.append(
            types.TextEdit(
                range=types.Range(_end_of(a, i1, encoding), _end_of(a, i2, encoding)),
                new_text="".join(b[j1:j2]),
            )
        )
    return edits


@dataclass(frozen=True, slots=True)
class FileEdit:
    uri: str
    version: int | None  # the open document's version; None for a file on disk
    edits: list[types.TextEdit]


def workspace_edit(files: list[FileEdit], document_changes: bool) -> types.WorkspaceEdit:
    """Versioned document changes when the client takes them, else a plain changes map."""
    if document_changes:
        return types.WorkspaceEdit(
            document_changes=[
                types.TextDocumentEdit(
                    text_document=types.OptionalVersionedTextDocumentIdentifier(
                        uri=f.uri, version=f.version
                    ),
                    edits=f.edits,
                )
                for f in files
            ]
        )
    return types.WorkspaceEdit(changes={f.uri: f.edits for f in files})
