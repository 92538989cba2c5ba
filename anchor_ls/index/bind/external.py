"""What the binder leaves outside the repository, noted for the library-aware index.

The binder itself never looks outside the repository: the names it gives outside values
(`("x", "requests.Session().get")`) are kept here with their sites and bases, and
anchor_ls.index.externals finds what they are in the environment. So the repository's own
edges are the same with or without an environment.
"""

from __future__ import annotations

from collections.abc import Sequence

from anchor_ls.index.bind.values import in_order
from anchor_ls.index.state import Class, External, FileFacts, OutsideSite, Value, Values
from anchor_ls.syntax.summary import Span

# What an outside call gives that says nothing of the value: `getattr(obj, name)()`
# calls who knows what (a call of it is unresolved, not external).
UNKNOWN_OUTSIDE = ("builtins.getattr()",)


def outside_names(callees: Values) -> tuple[str, ...]:
    """The outside names a call site calls (none that say nothing of the value)."""
    return tuple(
        v.dotted
        for v in in_order(callees)
        if isinstance(v, External) and not v.dotted.startswith(UNKNOWN_OUTSIDE)
    )


def note_call(
    facts: FileFacts,
    idx: int,
    at: int,
    names: tuple[str, ...],
    via: int,
    span: Span,
    resolved: bool = False,
) -> None:
    """A site at this place of scope idx's calls, counted outside (or resolved in the
    repository: resolved), calling names (found as via says)."""
    facts.outside_sites.setdefault(idx, []).append(OutsideSite(at, names, via, span, resolved))


def note_bases(facts: FileFacts, idx: int, bases: Sequence[Value]) -> None:
    """A class's bases, in declared order, when one is outside the repository."""
    if any(isinstance(v, External) for v in bases):
        facts.outside_bases[idx] = tuple(v for v in bases if isinstance(v, Class | External))
