"""The binder's working types: abstract values, evaluation contexts, per-file conclusions."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from anchor_ls.syntax.summary import Span

Value = tuple
Values = frozenset
EMPTY: frozenset = frozenset()


@dataclass(slots=True)
class Ctx:
    """Where an expression is evaluated: a scope and a point in it."""

    path: str
    scope: int
    pos: int | None  # None: the scope's final state
    blocks: tuple[int, ...] = ()
    implicit: list[Value] | None = None  # property getters read while evaluating


@dataclass(slots=True)
class FileFacts:
    """Everything the binder concludes from one file's source."""

    calls: dict[tuple[int, str], set[Value]] = field(default_factory=dict)
    sites: dict[tuple[int, Value], list] = field(default_factory=lambda: defaultdict(list))
    bases: dict[int, list[Value]] = field(default_factory=dict)
    imports: set[str] = field(default_factory=set)
    # scope idx -> [resolved, external, unresolved] call sites
    counts: dict[int, list[int]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)  # internal errors, reported as problems
    # (scope idx, function or class value) -> where the scope uses it as a value
    refs: dict[tuple[int, Value], list[Span]] = field(default_factory=lambda: defaultdict(list))
    # (scope idx, edge kind, target id) -> where: env_var, io_dep, const_ref, config_usage
    dense: dict[tuple[int, str, str], list[Span]] = field(default_factory=lambda: defaultdict(list))

    @property
    def resolved(self) -> int:
        return sum(c[0] for c in self.counts.values())

    @property
    def external(self) -> int:
        return sum(c[1] for c in self.counts.values())

    @property
    def unresolved(self) -> int:
        return sum(c[2] for c in self.counts.values())

    def forget_scopes(self, scopes: set[int]) -> None:
        for key in [k for k in self.calls if k[0] in scopes]:
            del self.calls[key]
        for table in (self.sites, self.refs, self.dense):
            for key in [k for k in table if k[0] in scopes]:
                del table[key]
        for idx in scopes:
            self.counts.pop(idx, None)
