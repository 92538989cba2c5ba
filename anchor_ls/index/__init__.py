"""Layer 2: the repository graph built from syntax summaries."""

from anchor_ls.index.environment import Environment, EnvironmentProblem
from anchor_ls.index.files import Problem
from anchor_ls.index.model import (
    CALLS,
    CONFIG_USAGE,
    CONST_REF,
    CONTAINS,
    DENSE_KINDS,
    ENV_VAR,
    EXTERNAL_PREFIX,
    IMPORTS,
    INHERITS,
    IO_DEP,
    OVERRIDES,
    REFERENCES,
    STRUCTURAL_KINDS,
    TEST_REF,
    Edge,
    Entity,
    Graph,
    Span,
)
from anchor_ls.index.repository import Index
from anchor_ls.index.stats import IndexStats

__all__ = [
    "CALLS",
    "CONFIG_USAGE",
    "CONST_REF",
    "CONTAINS",
    "DENSE_KINDS",
    "ENV_VAR",
    "EXTERNAL_PREFIX",
    "IMPORTS",
    "INHERITS",
    "IO_DEP",
    "OVERRIDES",
    "REFERENCES",
    "STRUCTURAL_KINDS",
    "TEST_REF",
    "Edge",
    "Entity",
    "Environment",
    "EnvironmentProblem",
    "Graph",
    "Index",
    "IndexStats",
    "Problem",
    "Span",
]
