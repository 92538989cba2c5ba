"""Glimpses: the index of the few files that can answer one question, while the first
build of the whole repository runs.

A cold build of a large repository takes tens of seconds before its graph exists
(Django: about 30 s on 2 cores), and a call hierarchy asked meanwhile would wait for all
of it. But a call of `QuerySet.filter` is written in a file that names `filter`, and a
subclass of `QuerySet` in a file that names `QuerySet`. A glimpse indexes those files
(for a method, those that also name its class), the entity's own file and the package
`__init__` files imports pass through, with the same binder and no environment, and
resolves of their call sites those that can reach the function (bind/sites.want): for
`QuerySet.filter`, 71 files in 1.1 s alone (2.3 s resolving every site, its summaries
pickled there and back), where the build takes half a minute.

Its answer is partial, and the server says so: a call whose receiver gets its type in a
file the scope left out is not found, and the build's answer replaces it. A smaller
program is resolved with fewer facts, so a glimpse holds no edge the build leaves out
(tests/test_glimpse.py checks this on the standard library, benchmarks/glimpse_bench.py
on Django), but for two reasons: a lookup along an MRO whose base the scope left out
(hence _with_other_bases), and the binder's cap of MAX_VALUES values an expression, which
a glimpse, knowing fewer values, reaches less often (a real call the build drops).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from anchor_ls.index.environment import NO_ENVIRONMENT
from anchor_ls.index.files import Skipped, python_files, read_file
from anchor_ls.index.model import path_of
from anchor_ls.index.repository import Index
from anchor_ls.index.roots import states_a_root
from anchor_ls.syntax.source import MAX_FILE_BYTES

# Files a glimpse reads beyond the entity's own and the packages': a function named as
# every other file names something (`get`, `run`) would otherwise make it the whole build.
GLIMPSE_FILES = 150
_FEW_NAMES = 16  # names a `defining` search looks for as substrings first
_IDENTIFIER = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")
# `class Name(bases):` up to its colon, over lines (no nested parentheses in the bases)
_CLASS_HEADER = re.compile(rb"^[ \t]*class[ \t]+(\w+)[ \t]*\(([^()]*)\)[ \t]*:", re.M)


@dataclass
class Corpus:
    """The repository's Python files as bytes, read once for every glimpse of a build."""

    root: Path
    texts: dict[str, bytes] = field(default_factory=dict)

    @classmethod
    def read(cls, root: Path, exclude: Sequence[str] = ()) -> Corpus:
        corpus = cls(root)
        for item in python_files(root, exclude):
            if isinstance(item, Skipped):
                continue
            data = read_file(root, item, MAX_FILE_BYTES)
            if isinstance(data, bytes):
                corpus.texts[item] = data
        return corpus

    def naming(self, *words: str, attribute: str | None = None) -> list[str]:
        """The files whose text has every one of `words` as a whole word, and reads
        `attribute` as one (`.name`) or names it in a string (`getattr(x, "name")`)."""
        encoded = [w.encode() for w in words]
        patterns = [re.compile(rb"\b%s\b" % re.escape(w)) for w in encoded]
        if attribute is not None:
            word = re.escape(attribute.encode())
            encoded.append(attribute.encode())
            patterns.append(re.compile(rb"\.\s*%s\b|[\"']%s[\"']" % (word, word)))
        return [
            rel
            for rel, text in self.texts.items()
            # a substring search first: a tenth of the regular expression's time
            if all(w in text for w in encoded) and all(p.search(text) for p in patterns)
        ]

    def defining(self, names: Iterable[str], statement: bytes = b"def|class") -> list[str]:
        """The files with a `def` or `class` statement (or those `statement` says) of any
        of `names`."""
        wanted = sorted({n.encode() for n in names})
        if not wanted:
            return []
        alternatives = b"|".join(re.escape(n) for n in wanted)
        line = rb"^[ \t]*(?:async[ \t]+)?(?:%s)[ \t]+(?:%s)\b" % (statement, alternatives)
        pattern = re.compile(line, re.M)
        # a few names (bases): a substring search first, a tenth of the expression's time
        few = len(wanted) <= _FEW_NAMES
        return [
            rel
            for rel, text in self.texts.items()
            if (not few or any(n in text for n in wanted)) and pattern.search(text)
        ]


def _name_parts(entity_id: str) -> tuple[str, str | None, str | None]:
    """(path, name, the name of what holds it) of an entity id; name None for a module."""
    path = path_of(entity_id)
    qualified = entity_id[len(path) + 1 :]
    if not qualified:
        return path, None, None
    parts = qualified.split(".")
    return path, parts[-1], parts[-2] if len(parts) > 1 else None


def _complete(corpus: Corpus, own: str, chosen: Iterable[str]) -> set[str]:
    """own, chosen (the first GLIMPSE_FILES of them) and the files that state source roots."""
    files = {own}
    for rel in chosen:
        if len(files) > GLIMPSE_FILES:
            break
        files.add(rel)
    files.update(rel for rel in corpus.texts if states_a_root(rel))
    return files


def _packaged(corpus: Corpus, files: set[str]) -> frozenset[str]:
    """files and the `__init__.py` of every package they are in: what imports pass through."""
    found = set(files)
    for rel in files:
        parts = rel.split("/")[:-1]
        while parts:
            found.add("/".join(parts) + "/__init__.py")
            parts.pop()
    return frozenset(rel for rel in found if rel in corpus.texts)


def _with_other_bases(corpus: Corpus, files: set[str], holder: str) -> set[str] | None:
    """files and those that define the other bases of the classes in them that derive from
    `holder`, and those bases' own bases, by name; None when they are more than twice
    GLIMPSE_FILES (a glimpse without all of them could list a call the build does not).

    A method is looked up along the MRO: a class derived from holder whose other base the
    glimpse did not read would find the name in holder, where the build may find it in
    that base first (`class A(B, Holder)`: `self.run()` is B.run). Classes not derived
    from holder never reach its methods, so their bases are not needed."""
    headers = [header for rel in files for header in _classes(corpus.texts.get(rel, b""))]
    derived = {holder.encode()}
    grown = True
    while grown:
        grown = False
        for name, bases in headers:
            if name not in derived and derived.intersection(bases):
                derived.add(name)
                grown = True
    wanted = {b for name, bases in headers if name in derived for b in bases} - derived
    found, seen = set(files), set()
    while wanted:
        if len(found) > 2 * GLIMPSE_FILES:
            return None
        seen |= wanted
        added = set(corpus.defining((w.decode() for w in wanted), statement=b"class")) - found
        found |= added
        wanted = {b for rel in added for _n, bases in _classes(corpus.texts[rel]) for b in bases}
        wanted -= seen
    return found


def _classes(text: bytes) -> Iterator[tuple[bytes, list[bytes]]]:
    """(name, base names) of every class statement of text."""
    for match in _CLASS_HEADER.finditer(text):
        yield match.group(1), list(_base_names(match.group(2)))


def _base_names(bases: bytes) -> Iterator[bytes]:
    """The last names of a class statement's bases (`Model` of `models.Model`), keyword
    arguments (`metaclass=`) and subscripts left out."""
    for base in bases.split(b","):
        base = base.split(b"[")[0].strip()
        if base and b"=" not in base:
            name = base.rsplit(b".", 1)[-1].strip()
            if _IDENTIFIER.fullmatch(name):
                yield name


def users_scope(corpus: Corpus, entity_id: str) -> frozenset[str] | None:
    """The files a glimpse reads for what calls, references or subclasses an entity: those
    that name it (a method: its class, and it as an attribute; a constructor: its class), with
    the bases a method's lookups pass (_with_other_bases); None: too many of those."""
    path, name, holder = _name_parts(entity_id)
    if name is None:
        return _packaged(corpus, _complete(corpus, path, ()))
    if name == "__init__" and holder is not None:  # called as its class
        name, holder = holder, None
    if holder is None:
        return _packaged(corpus, _complete(corpus, path, corpus.naming(name)))
    if name.startswith("__"):  # `for`, `with` and operators call them by no name
        named = corpus.naming(name, holder)
    else:  # a method is called as an attribute, or got by its name as a string
        named = corpus.naming(holder, attribute=name)
    files = _with_other_bases(corpus, _complete(corpus, path, named), holder)
    return _packaged(corpus, files) if files is not None else None


def users_wanted(entity_id: str, kind: str) -> frozenset[str] | None:
    """The names whose sites a glimpse of who calls entity_id (of kind) resolves: a
    function's or method's own (Index(wanted=...)); None, every site, for a class (made
    as `cls()` too), a module, and a special method (called by `for`, `with`, operators)."""
    _path, name, _holder = _name_parts(entity_id)
    if name is None or kind not in ("function", "method") or name.startswith("__"):
        return None
    return frozenset({name})


def used_scope(corpus: Corpus, entity_id: str, text: bytes) -> frozenset[str]:
    """The files a glimpse reads for what a class derives from: those that define a name
    its text (`text`: its source) uses. Not for what a function calls: a receiver's class
    may be anywhere, and one whose base the glimpse did not read finds a method in its
    next base, where the build may find it in the one left out."""
    path = path_of(entity_id)
    names = {m.group().decode() for m in _IDENTIFIER.finditer(text)}
    return _packaged(corpus, _complete(corpus, path, corpus.defining(names)))


def glimpse(
    corpus: Corpus,
    scope: frozenset[str],
    *,
    exclude: Sequence[str],
    source_roots: Sequence[str],
    wanted: frozenset[str] | None = None,
) -> Index:
    """The index of the files of `scope` alone: no cache, no environment, no process;
    wanted: resolve only the sites that mention these names (see Index)."""
    index = Index(
        corpus.root,
        exclude=exclude,
        use_cache=False,
        workers=1,
        source_roots=source_roots,
        python=NO_ENVIRONMENT,
        only=scope,
        wanted=wanted,
        listed=list(corpus.texts),
    )
    index.build()
    return index
