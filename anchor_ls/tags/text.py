"""Pure transforms on a file's bytes: strip, materialize and check CodeAnchor blocks.

materialize only inserts whole lines (at logical-line starts, in the file's own line
end and encoding) and strip only removes whole lines that form complete blocks, so
strip(materialize(x)) == x byte for byte. Every materialize result is verified by
stripping it again before it is returned; a file that would not round-trip is left as is.

A complete block is either format, each line at one indentation, outside any string:
- `# === CodeAnchor <id>`, field lines `# NAME: ...`, `# ===` (what `render` writes);
- `# === CodeAnchor ===`, `# <kind> <id>`, field lines, `# === CodeAnchor ===` (the
  first format: trees materialized with it still strip, and materialize replaces them).
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from anchor_ls.index.model import ENTITY_KINDS
from anchor_ls.syntax.source import declared_encoding
from anchor_ls.tags.render import MARKER, block_header
from anchor_ls.tags.scan import (
    COOKIE,
    Layout,
    Lines,
    SourceError,
    decode_lines,
    definition_anchor,
    layout,
    module_insert_index,
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


def _in_string(lay: Layout | None, i: int) -> bool:
    return lay is not None and bool(lay.in_string[i])


def _opens(line: bytes) -> re.Match[bytes] | None:
    """The match of a block's first line (either format), else None."""
    if MARKER not in line:
        return None
    return _OPEN.match(line) or _DELIM.match(line)


def _complete_from(lines: list[bytes], lay: Layout | None, i: int) -> int | None:
    """If line i opens a complete block, the index of its closing line."""
    n = len(lines)
    m = _opens(lines[i])
    if m is None or _in_string(lay, i):
        return None
    indent = m.group(1)
    legacy = m.re is _DELIM
    j = i + 1
    if legacy:
        h = _HEADER.match(lines[j]) if j < n and not _in_string(lay, j) else None
        if h is None or h.group(1) != indent:
            return None
        j += 1
    while j < n and not _in_string(lay, j):
        f = _FIELD.match(lines[j])
        if f is None or f.group(1) != indent:
            break
        j += 1
    if j < n and not _in_string(lay, j):
        d = (_DELIM if legacy else _CLOSE).match(lines[j])
        if d is not None and d.group(1) == indent:
            return j
    return None


def find_blocks(src: Lines, lay: Layout | None) -> tuple[list[Block], list[Note]]:
    """Complete blocks, and notes for damaged ones (left alone, never guessed at).

    Lines inside string literals are never block lines (a docstring may show the format).
    """
    lines = src.lines
    blocks: list[Block] = []
    damaged: list[Note] = []
    i = 0
    n = len(lines)
    while i < n:
        if MARKER not in lines[i] or _in_string(lay, i) or not _opens(lines[i]):
            i += 1
            continue
        end = _complete_from(lines, lay, i)
        if end is None:
            damaged.append((i + 1, _why_damaged(lines, lay, i)))
            i += 1
            continue
        blocks.append(Block(i, end + 1, tuple(lines[i : end + 1])))
        i = end + 1
    if lay is not None and lay.open_string is not None:
        for j in range(lay.open_string, n):
            if _opens(lines[j]):
                damaged.append(
                    (j + 1, "CodeAnchor block opened inside a string left open at the end of file")
                )
                break
    return blocks, damaged


def _why_damaged(lines: list[bytes], lay: Layout | None, i: int) -> str:
    m = _opens(lines[i])
    assert m is not None
    indent = m.group(1)
    nxt = lines[i + 1] if i + 1 < len(lines) else None
    if m.re is not _DELIM:
        return "CodeAnchor block is not closed by a '# ===' line at its indentation"
    if nxt is None:
        return "CodeAnchor delimiter on the last line, without a block"
    h = _HEADER.match(nxt)
    if h is None or h.group(1) != indent or _in_string(lay, i + 1):
        return "CodeAnchor delimiter not followed by a '# <kind> <id>' line at its indentation"
    return "CodeAnchor block is not closed by a delimiter at its indentation"


def _layout_or_none(src: Lines) -> Layout | None:
    try:
        return layout(src)
    except SourceError:
        return None


def strip(source: bytes) -> StripResult:
    """Remove every complete CodeAnchor block and nothing else; report damaged ones."""
    if MARKER not in source:
        return StripResult(source)
    src = split_lines(source)
    blocks, damaged = find_blocks(src, _layout_or_none(src))
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
) -> _Plan:
    """Where each requested block goes in `clean` (a source without blocks)."""
    src = split_lines(clean)
    lay = layout(src)  # SourceError propagates: nothing can be placed
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
        already = sum(len(b) for b in plan.at.get(at, ()))
        if at + already < 2 and any(
            COOKIE.match(s) for s in block[: 2 - at - already]
        ):  # would read as a PEP 263 coding line
            plan.problems.append((line or 1, f"{header} would read as a coding line; skipped"))
            continue
        plan.at.setdefault(at, []).append(_encode(block, indent, src.encoding))
        plan.ids.setdefault(at, []).append(header)
    return plan


def _insert(plan: _Plan) -> tuple[bytes, Layout]:
    """The new bytes, and the layout of their lines as far as strip needs it.

    Inserted lines are comments at logical-line starts, so every original line keeps its
    string state and the new ones start outside any string.
    """
    src = plan.src
    eol = src.eol
    out = [src.bom]
    flags = bytearray()
    old_flags = plan.lay.in_string
    for i, (content, end) in enumerate(zip(src.lines, src.ends, strict=True)):
        for block in plan.at.get(i, ()):
            out.extend(line + eol for line in block)
            flags.extend(bytes(len(block)))
        out.append(content + end)
        flags.append(old_flags[i])
    for block in plan.at.get(len(src.lines), ()):
        out.extend(line + eol for line in block)
        flags.extend(bytes(len(block)))
    open_string = plan.lay.open_string
    if open_string is not None:
        open_string += sum(len(b) for at, bs in plan.at.items() if at <= open_string for b in bs)
    return b"".join(out), Layout([], flags, bytearray(), open_string)


# ----- materialize ----------------------------------------------------------


def materialize(
    source: bytes,
    blocks: Mapping[int, Sequence[str]],
    names: Mapping[int, str] | None = None,
) -> Materialized:
    """Replace the file's blocks with `blocks`.

    `blocks` maps a definition's 1-based `def`/`class` line in `source` (MODULE, 0, for
    the module block) to the lines of `render.block_lines`. `names` (same keys) guards
    against stale line numbers: a block is placed only where that name is defined.
    A file with damaged blocks, or one that would not strip back exactly, is returned as is.
    """
    stripped = strip(source)
    if stripped.damaged:
        return Materialized(source, problems=list(stripped.damaged))
    try:
        plan = _plan(stripped.text, blocks, names, _translate(list(blocks), stripped))
    except SourceError as err:
        return Materialized(source, problems=[(0, f"not tagged: {err}")])
    text, new_layout = _insert(plan)
    inserted = sum(len(v) for v in plan.at.values())
    if inserted and not _round_trips(text, new_layout, stripped.text, inserted):
        return Materialized(
            source,
            skipped=plan.skipped,
            problems=[*plan.problems, (0, "tags would not strip back exactly; file left as is")],
        )
    return Materialized(text, inserted, stripped.removed, plan.skipped, plan.problems)


def _round_trips(text: bytes, lay: Layout, clean: bytes, inserted: int) -> bool:
    """Whether stripping `text` gives back exactly `clean`, removing only the new blocks."""
    src = split_lines(text)
    if len(src.lines) != len(lay.in_string):
        return False
    if declared_encoding(text) != declared_encoding(clean):
        return False
    blocks, damaged = find_blocks(src, lay)
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
) -> list[Note]:
    """Findings for blocks that differ from what materialize would write now.

    Damaged blocks are malformed; a present block that differs (or where none is due) is
    stale; with `require`, a definition due a block that has none is missing. An empty
    list means the file is up to date.
    """
    stripped = strip(source)
    findings: list[Note] = list(stripped.damaged)
    try:
        plan = _plan(stripped.text, blocks, names, _translate(list(blocks), stripped))
    except SourceError as err:
        if stripped.blocks:
            findings.append((0, f"cannot check tags: {err}"))
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
    first = lines[0].strip()
    if _DELIM.match(first):
        return lines[1].strip().partition(b" ")[2].partition(b" ")[2]
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
