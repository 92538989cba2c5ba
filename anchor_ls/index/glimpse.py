"""Glimpses: the index of the few files that can answer one question, while the first
build of the whole repository runs.

A cold build of a large repository takes tens of seconds before its graph exists
(Django: about 30 s on 2 cores), and a call hierarchy asked meanwhile would wait for all
of it. But a call of `QuerySet.filter` is written in a file that names `filter`, and a
subclass of `QuerySet` in a file that names `QuerySet`. A glimpse indexes those files
(for a method, those that also name its class), the entity's own file and the package
`__init__` files imports pass through, with the same binder and no environment: for
`QuerySet.filter`, 72 files in 2 s alone and 4 s beside the build, where the build takes
half a minute.

Its answer is partial, and the server says so: a call whose receiver gets its type in a
file the scope left out is not found, and the build's answer replaces it. A smaller
program is resolved with fewer facts, so a glimpse holds no edge the build leaves out
(tests/test_glimpse.py checks this on the standard library).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
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
GLIMPSE_FILES = 300
_IDENTIFIER = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")


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

    def naming(self, *words: str) -> list[str]:
        """The files whose text has every one of `words` as a whole word."""
        patterns = [re.compile(rb"\b%s\b" % re.escape(w.encode())) for w in words]
        return [rel for rel, text in self.texts.items() if all(p.search(text) for p in patterns)]

    def defining(self, names: Iterable[str]) -> list[str]:
        """The files with a `def` or `class` statement of any of `names`."""
        wanted = sorted(set(names))
        if not wanted:
            return []
        alternatives = b"|".join(re.escape(n.encode()) for n in wanted)
        statement = rb"^[ \t]*(?:async[ \t]+)?(?:def|class)[ \t]+(?:%s)\b" % alternatives
        pattern = re.compile(statement, re.M)
        return [rel for rel, text in self.texts.items() if pattern.search(text)]


def _name_parts(entity_id: str) -> tuple[str, str | None, str | None]:
    """(path, name, the name of what holds it) of an entity id; name None for a module."""
    path = path_of(entity_id)
    qualified = entity_id[len(path) + 1 :]
    if not qualified:
        return path, None, None
    parts = qualified.split(".")
    return path, parts[-1], parts[-2] if len(parts) > 1 else None


def _complete(corpus: Corpus, own: str, chosen: Iterable[str]) -> frozenset[str]:
    """own, chosen (the first GLIMPSE_FILES of them), the `__init__.py` of every package
    they are in (what imports pass through) and the files that state source roots."""
    files = {own}
    for rel in chosen:
        if len(files) > GLIMPSE_FILES:
            break
        files.add(rel)
    files.update(rel for rel in corpus.texts if states_a_root(rel))
    for rel in list(files):
        parts = rel.split("/")[:-1]
        while parts:
            package = "/".join(parts) + "/__init__.py"
            if package in corpus.texts:
                files.add(package)
            parts.pop()
    return frozenset(rel for rel in files if rel in corpus.texts)


def users_scope(corpus: Corpus, entity_id: str) -> frozenset[str]:
    """The files a glimpse reads for what calls, references or subclasses an entity: those
    that name it (a method: its name and its class's; a constructor: its class's)."""
    path, name, holder = _name_parts(entity_id)
    if name is None:
        return _complete(corpus, path, ())
    if name == "__init__" and holder is not None:  # called as its class
        name, holder = holder, None
    if holder is None:
        return _complete(corpus, path, corpus.naming(name))
    return _complete(corpus, path, corpus.naming(name, holder))


def used_scope(corpus: Corpus, entity_id: str, text: bytes) -> frozenset[str]:
    """The files a glimpse reads for what an entity calls or derives from: those that
    define a name its text (`text`: its source) uses."""
    path = path_of(entity_id)
    names = {m.group().decode() for m in _IDENTIFIER.finditer(text)}
    return _complete(corpus, path, corpus.defining(names))


def glimpse(
    root: Path, scope: frozenset[str], *, exclude: Sequence[str], source_roots: Sequence[str]
) -> Index:
    """The index of the files of `scope` alone: no cache, no environment, no process."""
    index = Index(
        root,
        exclude=exclude,
        use_cache=False,
        workers=1,
        source_roots=source_roots,
        python=NO_ENVIRONMENT,
        only=scope,
    )
    index.build()
    return index
