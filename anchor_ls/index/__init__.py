"""Layer 2: the repository graph built from syntax summaries."""

from anchor_ls.index.model import (
    CALLS,
    CONTAINS,
    IMPORTS,
    INHERITS,
    Edge,
    Entity,
    Graph,
    Span,
)
from anchor_ls.index.repository import Index, Problem
from anchor_ls.index.stats import IndexStats

__all__ = [
    "CALLS",
    "CONTAINS",
    "IMPORTS",
    "INHERITS",
    "Edge",
    "Entity",
    "Graph",
    "Index",
    "IndexStats",
    "Problem",
    "Span",
]
