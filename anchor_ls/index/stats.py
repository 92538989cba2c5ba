"""Repository-level figures the tag policy is chosen from (the CodeAnchor study's rule)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from anchor_ls.index.model import (
    CALLS,
    DENSE_KINDS,
    EXTERNAL_PREFIX,
    OVERRIDES,
    STRUCTURAL_KINDS,
    Graph,
)

HUB_DEGREE = 10


@dataclass(slots=True)
class IndexStats:
    files: int = 0
    entities: int = 0
    edges: dict[str, int] = field(default_factory=dict)
    call_sites: int = 0
    resolved_binder: int = 0
    external: int = 0
    unresolved: int = 0
    mean_out_degree: float = 0.0
    hub_share: float = 0.0
    problems: dict[str, int] = field(default_factory=dict)
    reparsed: int = 0
    from_cache: int = 0
    # edits whose rounds did not settle, so every file was resolved again (index/repository.py)
    resolved_afresh: int = 0
    # library files this build parsed itself, and those its prefetch process parsed ahead
    # (index/prefetch.py); those read from the library cache are neither
    libraries_read: int = 0
    libraries_prefetched: int = 0
    # the folders absolute imports start from ("." is the root): see anchor_ls/index/roots.py
    source_roots: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return asdict(self)


def graph_figures(graph: Graph) -> tuple[float, float]:
    """(mean call out-degree over functions and methods, share of hubs).

    A hub is a callable whose call degree (in plus out) is over HUB_DEGREE. Calls into
    libraries are left out of both: auto picks a policy by the degree (the study measured
    calls inside repositories), and what is installed must not change a repository's tags.
    """
    callables = [
        e.id
        for e in graph.entities.values()
        if e.kind in ("function", "method") and not e.id.startswith(EXTERNAL_PREFIX)
    ]
    if not callables:
        return 0.0, 0.0
    out_total = 0
    hubs = 0
    for ident in callables:
        out = sum(1 for dst in graph.out(CALLS, ident) if not dst.startswith(EXTERNAL_PREFIX))
        out_total += out
        if out + graph.in_degree(CALLS, ident) > HUB_DEGREE:
            hubs += 1
    return out_total / len(callables), hubs / len(callables)


def edge_counts(graph: Graph) -> dict[str, int]:
    kinds = (*STRUCTURAL_KINDS, OVERRIDES, *DENSE_KINDS)
    return {kind: graph.edge_count(kind) for kind in kinds}
