"""Pure transforms on a file's bytes: strip, materialize and check CodeAnchor blocks.

materialize only inserts whole lines (at logical-line starts, in the file's own line
end and encoding) and strip only removes whole lines that form complete blocks, so
strip(materialize(x)) == x byte for byte. Every materialize result is verified by
stripping it again before it is returned; a file that would not round-trip is left as is.

A block is either format, each line at one indentation, every line a logical line
of its own (never inside a string or brackets):
- `# === CodeAnchor <id>`, field lines `# NAME: ...`, `# ===` (what `render` writes);
- `# === CodeAnchor ===`, `# <kind> <id>`, field lines, `# === CodeAnchor ===` (the
  first format: trees materialized with it still strip, and materialize replaces them).
It is a tag block only where materialize would have put it: directly above the
definition its id names (`relpath:Qualified.name`, above the decorators; blocks below
it that are tags themselves do not count), or, for the module id, where the module
block goes. Any other such lines, complete or not, are the user's text and stay.
The id's path may be a trailing part of the file's path (a snapshot stripped from
a folder below its root).
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_left
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from anchor_ls.index.model import ENTITY_KINDS
from anchor_ls.syntax.encoding import declared_encoding, is_cookie_line
from anchor_ls.tags.render import MARKER, block_header, written_id
from anchor_ls.tags.scan import (
    Layout,
    Lines,
    SourceError,
    decode_lines,
    definition_anchor,
    definitions_below,
    layout,
    module_insert_index,
    qualnames,
    split_lines,
)

MODULE = 0  # the key of the module block in a `blocks` mapping

# No id starts with "===" (a file named "=.py" is fine): prose about the first format's
# delimiter opens no block.
_OPEN = re.compile(rb"([ \t\f]*)# === CodeAnchor (?!===).+\Z")
_CLOSE = re.compile(rb"([ \t\f]*)# ===[ \t]*\Z")
_FIELD = re.compile(rb"([ \t\f]*)# [A-Z][A-Z0-9_]*: .*\Z")
# The first format: one delimiter line opens and closes, a "# <kind> <id>" line follows it.
_DELIM = re.compile(rb"([ \t\f]*)# === CodeAnchor ===[ \t]*\Z")
_HEADER = re.compile(rb"([ \t\f]*)# (?:" + "|".join(ENTITY_KINDS).encode() + rb") .+\Z")

Note = tuple[int, str]  # (1-based line, message); line 0 is the whole file


@dataclass(frozen=True, slots=True)
class Block:
    """A complete block found in a file: lines [start, end) (0-based) and its bytes."""

    start: int
    end: int
    lines: tuple[bytes, ...]  # contents, indentation included, line ends excluded

    @property
    def header(self) -> str:
        """The id the block is for (the opening line's, or the first format's header)."""
        return block_header([line.decode("utf-8", "replace") for line in self.lines[:2]])


@dataclass(slots=True)
class StripResult:
    text: bytes
    damaged: list[Note] = field(default_factory=list)
    blocks: list[Block] = field(default_factory=list)  # the blocks removed, in file order
    # why the file's strings cannot be told apart (its encoding, an f-string): no line of
    # it was read as a tag; None when it was read
    unreadable: str | None = None
    _ends: list[int] = field(default_factory=list, repr=False)
    _removed_before: list[int] = field(default_factory=list, repr=False)

    def __post_init__(self) -> None:
        self._ends = [b.end for b in self.blocks]
        total = 0
        self._removed_before = [0]
        for b in self.blocks:
            total += b.end - b.start
            self._removed_before.append(total)

    @property
    def removed(self) -> int:
        return len(self.blocks)

    def new_line(self, line: int) -> int | None:
        """Where 1-based `line` of the input is in `text` (None: it was a block line)."""
        k = bisect_left(self._ends, line)  # blocks that end before `line`
        if k < len(self.blocks) and self.blocks[k].start < line:
            return None
        return line - self._removed_before[k]


@dataclass(slots=True)
class Materialized:
    text: bytes
    inserted: int = 0
    removed: int = 0
    skipped: list[Note] = field(default_factory=list)  # definitions that cannot carry a block
    problems: list[Note] = field(default_factory=list)  # why the file was left (partly) untagged

    @property
    def changed(self) -> bool:
        return self.inserted > 0 or self.removed > 0


# ----- strip ----------------------------------------------------------------


class _Ids:
    """The ids that name one file and its definitions, as bytes a block of it would hold."""

    def __init__(self, path: str, encoding: str, lay: Layout) -> None:
        parts = path.split("/")
        self._paths = [self._bytes("/".join(parts[k:]), encoding) for k in range(len(parts))]
        self._encoding = encoding
        self._lay = lay
        self._qualnames: dict[int, str] | None = None

    @staticmethod
    def _bytes(ident: str, encoding: str) -> bytes:
        return written_id(ident).encode(encoding, "backslashreplace")

    def module(self, ident: bytes) -> bool:
        return ident in self._paths

    def of_file(self, ident: bytes) -> bool:
        """Whether the id is the module's or a definition's of this file (any definition)."""
        return self.module(ident) or any(ident.startswith(p + b":") for p in self._paths)

    def qualname(self, def_index: int) -> str | None:
        if self._qualnames is None:
            self._qualnames = qualnames(self._lay)
        return self._qualnames.get(def_index)

    def definition(self, ident: bytes, def_index: int) -> bool:
        """Whether the id names the definition on 0-based line def_index."""
        qualname = self.qualname(def_index)
        if qualname is None:
            return False
        for spelled in {qualname, unicodedata.normalize("NFKC", qualname)}:  # as Python reads it
            tail = b":" + self._bytes(spelled, self._encoding)
            if ident.endswith(tail) and self.module(ident[: -len(tail)]):
                return True
        return False

    def expected(self, def_index: int | None) -> str:
        """The id a block above def_index (None: the module block) would carry."""
        path = self._paths[0].decode(self._encoding, "replace")
        if def_index is None:
            return path
        return f"{path}:{self.qualname(def_index) or '?'}"


def _opens(line: bytes) -> re.Match[bytes] | None:
    """The match of a block's first line (either format), else None."""
    if MARKER not in line:
        return None
    return _OPEN.match(line) or _DELIM.match(line)


def _complete_from(lines: list[bytes], lay: Layout, i: int) -> int | None:
    """If line i opens a complete block, the index of its closing line."""
    n = len(lines)
    m = _opens(lines[i])
    if m is None or not lay.starts_logical_line(i):
        return None
    indent = m.group(1)
    legacy = m.re is _DELIM
    j = i + 1
    if legacy:
        h = _HEADER.match(lines[j]) if j < n and lay.starts_logical_line(j) else None
        if h is None or h.group(1) != indent:
            return None
        j += 1
    while j < n and lay.starts_logical_line(j):
        f = _FIELD.match(lines[j])
        if f is None or f.group(1) != indent:
            break
        j += 1
    if j < n and lay.starts_logical_line(j):
        d = (_DELIM if legacy else _CLOSE).match(lines[j])
        if d is not None and d.group(1) == indent:
            return j
    return None


def _claimed_id(lines: list[bytes], lay: Layout, i: int) -> bytes | None:
    """The id an opening line (or a first-format delimiter and its header) claims, if any."""
    m = _opens(lines[i])
    if m is None:
        return None
    if m.re is not _DELIM:
        return _id_bytes([lines[i]])
    j = i + 1
    if j < len(lines) and lay.starts_logical_line(j) and _HEADER.match(lines[j]):
        return _id_bytes([lines[i], lines[j]])
    return None


def find_blocks(src: Lines, lay: Layout, path: str) -> tuple[list[Block], list[Note]]:
    """The tag blocks of the file at `path`, and notes for damaged ones (left alone).

    A damaged block is an opening line that names this file but does not start a
    complete block; lines that name something else are the user's and draw no note.
    """
    lines = src.lines
    ids = _Ids(path, src.encoding, lay)
    candidates: list[Block] = []
    damaged: list[Note] = []
    i = 0
    n = len(lines)
    while i < n:
        if MARKER not in lines[i] or not lay.starts_logical_line(i) or not _opens(lines[i]):
            i += 1
            continue
        end = _complete_from(lines, lay, i)
        if end is None:
            claimed = _claimed_id(lines, lay, i)
            if claimed is not None and ids.of_file(claimed):
                damaged.append((i + 1, _why_damaged(lines[i])))
            i += 1
            continue
        candidates.append(Block(i, end + 1, tuple(lines[i : end + 1])))
        i = end + 1
    if lay.open_string is not None:
        for j in range(lay.open_string, n):
            claimed = _claimed_id(lines, lay, j) if _opens(lines[j]) else None
            if claimed is not None and ids.of_file(claimed):
                damaged.append(
                    (j + 1, "CodeAnchor block opened inside a string left open at the end of file")
                )
                break
    return _placed(candidates, lay, ids), damaged


def _placed(candidates: list[Block], lay: Layout, ids: _Ids) -> list[Block]:
    """The candidates that sit where materialize puts blocks, once the tags below are gone.

    Near-linear in the number of candidates: a stack of thousands of blocks (a hostile
    file) took quadratic time, each block walking the stack below or above it again.
    """
    n = len(lay.text)
    at = {c.start: k for k, c in enumerate(candidates)}
    real: set[int] = set()
    jump: dict[int, int] = {}  # a real block's start -> a line at or before next_kept of it
    definition_at = definitions_below(lay)

    def next_kept(line: int) -> int:
        # Blocks only ever become real, so a jump stays valid: follow it, then go on.
        passed = []
        while line in at and at[line] in real:
            passed.append(line)
            line = jump.get(line, candidates[at[line]].end)
        for start in passed:
            jump[start] = line
        return line

    def is_tag(k: int) -> bool:
        block = candidates[k]
        ident = _id_bytes(block.lines)
        below = next_kept(block.end)
        if ids.module(ident):
            kept: list[int] = []
            j = next_kept(0)
            while j < block.start and len(kept) <= 2:
                kept.append(j)
                j = next_kept(j + 1)
            view = [*kept, below, next_kept(below + 1)]
            first_two = [lay.text[v] for v in view[:2] if v < n]
            return len(kept) <= 2 and module_insert_index(first_two) == len(kept)
        if below >= n:
            return False
        def_index = definition_at(below)
        return def_index is not None and ids.definition(ident, def_index)

    # Upward sweeps settle stacks above a definition, downward ones stacks at the top.
    order = list(reversed(range(len(candidates))))
    changed = True
    while changed:
        changed = False
        for k in order:
            if k not in real and is_tag(k):
                real.add(k)
                changed = True
        order.reverse()
    return [candidates[k] for k in sorted(real)]


def _why_damaged(line: bytes) -> str:
    m = _opens(line)
    assert m is not None
    if m.re is not _DELIM:
        return "CodeAnchor block is not closed by a '# ===' line at its indentation"
    return "CodeAnchor block is not closed by a delimiter at its indentation"


def strip(source: bytes, path: str) -> StripResult:
    """Remove every tag block of the file at `path` (its id path) and nothing else.

    Damaged blocks are reported and left. A file whose strings cannot be told apart
    for certain (its encoding, an f-string that would not close) is left as is, with
    a note on line 0.
    """
    if MARKER not in source:
        return StripResult(source)
    src = split_lines(source)
    try:
        lay = layout(src)
    except SourceError as err:
        note = (0, f"left as is: cannot tell where its strings are ({err})")
        return StripResult(source, [note], unreadable=str(err))
    blocks, damaged = find_blocks(src, lay, path)
    if not blocks:
        return StripResult(source, damaged)
    return StripResult(_without(src, blocks), damaged, blocks)


def _without(src: Lines, blocks: list[Block]) -> bytes:
    drop = bytearray(len(src.lines))
    for b in blocks:
        drop[b.start : b.end] = b"\x01" * (b.end - b.start)
    kept = (c + e for c, e, d in zip(src.lines, src.ends, drop, strict=True) if not d)
    return src.bom + b"".join(kept)


# ----- placement ------------------------------------------------------------


@dataclass(slots=True)
class _Plan:
    src: Lines
    lay: Layout
    at: dict[int, list[list[bytes]]]  # insertion line -> encoded block lines (no line ends)
    ids: dict[int, list[str]]  # insertion line -> block headers, for messages
    skipped: list[Note]
    problems: list[Note]


def _translate(keys: Sequence[int], stripped: StripResult) -> dict[int, int | None]:
    return {k: (MODULE if k == MODULE else stripped.new_line(k)) for k in keys}


def _encode(lines: Sequence[str], indent: bytes, encoding: str) -> list[bytes]:
    return [indent + s.encode(encoding, "backslashreplace") for s in lines]


def _plan(
    clean: bytes,
    blocks: Mapping[int, Sequence[str]],
    names: Mapping[int, str] | None,
    lines_of: Mapping[int, int | None],
    path: str,
) -> _Plan:
    """Where each requested block goes in `clean` (a source without blocks).

    A block whose id does not name the definition (or module) it would sit above is
    not placed: strip would take it for the user's text.
    """
    src = split_lines(clean)
    lay = layout(src)  # SourceError propagates: nothing can be placed
    ids = _Ids(path, src.encoding, lay)
    plan = _Plan(src, lay, {}, {}, [], [])
    n = len(src.lines)
    for key in sorted(blocks, key=lambda k: (k != MODULE, k)):
        block = blocks[key]
        header = block_header(block)
        line = lines_of.get(key, key)
        if key == MODULE:
            at = module_insert_index(lay.text)
            if at == n and n and not src.ends[-1]:
                plan.skipped.append((at, f"no line after line {at} for the {header} block"))
                continue
            indent = b""
            def_index: int | None = None
        else:
            if line is None:
                plan.problems.append((key, f"line {key} is inside a tag block; {header} skipped"))
                continue
            name = names.get(key) if names else None
            anchor = definition_anchor(lay, line - 1, name)
            if anchor is None:
                plan.skipped.append((line, f"no definition starts line {line}; {header} skipped"))
                continue
            at = anchor
            indent = src.indent(anchor)
            def_index = line - 1
        encoded = _encode(block, indent, src.encoding)
        ident = _id_bytes(encoded)
        if not (ids.module(ident) if def_index is None else ids.definition(ident, def_index)):
            where = f"line {line}" if def_index is not None else "the module"
            plan.problems.append(
                (line or 0, f"{header} does not name {where} ({ids.expected(def_index)}); skipped")
            )
            continue
        already = sum(len(b) for b in plan.at.get(at, ()))
        if at + already < 2 and any(
            is_cookie_line(s) for s in block[: 2 - at - already]
        ):  # would read as a PEP 263 coding line
            plan.problems.append((line or 1, f"{header} would read as a coding line; skipped"))
            continue
        plan.at.setdefault(at, []).append(encoded)
        plan.ids.setdefault(at, []).append(header)
    return plan


def _insert(plan: _Plan) -> tuple[bytes, Layout]:
    """The new bytes, and their layout.

    Inserted lines are comments at logical-line starts, so every original line keeps its
    string and bracket state and the new ones start a logical line of their own.
    """
    src = plan.src
    eol = src.eol
    out = [src.bom]
    text: list[str] = []
    flags = bytearray()
    continued = bytearray()
    old = plan.lay

    def add(block: list[bytes]) -> None:
        out.extend(line + eol for line in block)
        text.extend(line.decode(src.encoding, "replace") for line in block)
        flags.extend(bytes(len(block)))
        continued.extend(bytes(len(block)))

    for i, (content, end) in enumerate(zip(src.lines, src.ends, strict=True)):
        for block in plan.at.get(i, ()):
            add(block)
        out.append(content + end)
        text.append(old.text[i])
        flags.append(old.in_string[i])
        continued.append(old.continued[i])
    for block in plan.at.get(len(src.lines), ()):
        add(block)
    open_string = old.open_string
    if open_string is not None:
        open_string += sum(len(b) for at, bs in plan.at.items() if at <= open_string for b in bs)
    return b"".join(out), Layout(text, flags, continued, open_string)


# ----- materialize ----------------------------------------------------------


def materialize(
    source: bytes,
    blocks: Mapping[int, Sequence[str]],
    names: Mapping[int, str] | None = None,
    *,
    path: str,
) -> Materialized:
    """Replace the tag blocks of the file at `path` (its id path) with `blocks`.

    `blocks` maps a definition's 1-based `def`/`class` line in `source` (MODULE, 0, for
    the module block) to the lines of `render.block_lines`. `names` (same keys) guards
    against stale line numbers: a block is placed only where that name is defined.
    A file with damaged blocks, or one that would not strip back exactly, is returned as is.
    """
    stripped = strip(source, path)
    if stripped.damaged:
        return Materialized(source, problems=list(stripped.damaged))
    try:
        plan = _plan(stripped.text, blocks, names, _translate(list(blocks), stripped), path)
    except SourceError as err:
        return Materialized(source, problems=[(0, f"not tagged: {err}")])
    text, new_layout = _insert(plan)
    inserted = sum(len(v) for v in plan.at.values())
    if inserted and not _round_trips(text, new_layout, stripped.text, inserted, path):
        return Materialized(
            source,
            skipped=plan.skipped,
            problems=[*plan.problems, (0, "tags would not strip back exactly; file left as is")],
        )
    return Materialized(text, inserted, stripped.removed, plan.skipped, plan.problems)


def _round_trips(text: bytes, lay: Layout, clean: bytes, inserted: int, path: str) -> bool:
    """Whether stripping `text` gives back exactly `clean`, removing only the new blocks."""
    src = split_lines(text)
    if len(src.lines) != len(lay.in_string):
        return False
    if declared_encoding(text) != declared_encoding(clean):
        return False
    blocks, damaged = find_blocks(src, lay, path)
    if damaged or len(blocks) != inserted or _without(src, blocks) != clean:
        return False
    if src.encoding in ("utf-8", "ascii"):
        return True
    # Stateful codecs could read an inserted ASCII line differently: decode and compare.
    old = split_lines(clean)
    new_text = decode_lines(src)
    old_text = iter(decode_lines(old))
    inside = {i for b in blocks for i in range(b.start, b.end)}
    for i, line in enumerate(new_text):
        alone = src.lines[i].decode(src.encoding, "replace") if i in inside else next(old_text)
        if line != alone:
            return False
    return True


# ----- check ----------------------------------------------------------------


def check(
    source: bytes,
    blocks: Mapping[int, Sequence[str]],
    names: Mapping[int, str] | None = None,
    require: bool = False,
    *,
    path: str,
) -> list[Note]:
    """Findings for blocks that differ from what materialize would write now.

    Damaged blocks are malformed; a present block that differs (or where none is due) is
    stale; with `require`, a definition due a block that has none is missing. An empty
    list means the file is up to date. Raises SourceError for a file that holds tag lines
    but whose strings cannot be told apart (its encoding, an f-string that would not
    close): its blocks cannot be read at all, which says nothing of whether they are stale.
    """
    stripped = strip(source, path)
    if stripped.unreadable is not None:
        raise SourceError(stripped.unreadable)
    findings: list[Note] = list(stripped.damaged)
    try:
        plan = _plan(stripped.text, blocks, names, _translate(list(blocks), stripped), path)
    except SourceError:
        if stripped.blocks:
            raise
        return findings
    # plan.problems (a block that can never be written) are not staleness: materialize reports them.
    src = split_lines(source)
    eol = plan.src.eol
    present: dict[int, list[tuple[Block, tuple[bytes, ...]]]] = {}
    removed_before = 0
    for b in stripped.blocks:
        anchor = b.start - removed_before
        removed_before += b.end - b.start
        ends = tuple(src.ends[b.start : b.end])
        present.setdefault(anchor, []).append((b, ends))
    for anchor, found in present.items():
        expected = plan.at.get(anchor, [])
        for b, ends in found:
            ok = list(b.lines) in expected and all(e == eol for e in ends)
            if not ok:
                what = "stale" if expected else "stale (no block is due here)"
                findings.append((b.start + 1, f"{what}: {b.header}"))
    if require:
        for anchor, expected in sorted(plan.at.items()):
            have = {_id_bytes(b.lines) for b, _ in present.get(anchor, [])}
            for lines, header in zip(expected, plan.ids[anchor], strict=True):
                if _id_bytes(lines) not in have:
                    findings.append((_source_line(stripped, anchor), f"missing: {header}"))
    findings.sort()
    return findings


def _id_bytes(lines: Sequence[bytes]) -> bytes:
    """The id a block's lines name, as bytes in the file's encoding (either format)."""
    first = lines[0].lstrip(b" \t\f")
    if _DELIM.match(first):
        return lines[1].lstrip(b" \t\f").partition(b" ")[2].partition(b" ")[2]
    return first[len(b"# === CodeAnchor ") :]


def _source_line(stripped: StripResult, anchor: int) -> int:
    """1-based line in the original source of 0-based line `anchor` of the stripped text."""
    line = anchor
    for b in stripped.blocks:
        if b.start <= line:
            line += b.end - b.start
    return line + 1


__all__ = [
    "MODULE",
    "Block",
    "Materialized",
    "StripResult",
    "check",
    "find_blocks",
    "materialize",
    "strip",
]
