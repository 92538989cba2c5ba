"""Smoke test on real code: a slice of this interpreter's standard library, indexed in place.

The cache goes to tmp_path (the index never writes into the standard library). Facts checked
here were read by hand in the stdlib source; definitions are cross-checked with `ast`.
"""

from __future__ import annotations

import ast
import os
import sysconfig
from pathlib import Path

import pytest

from anchor_ls.index import CALLS, CONTAINS, IMPORTS, INHERITS, Index

pytestmark = pytest.mark.slow

STDLIB = Path(sysconfig.get_paths()["stdlib"])
PACKAGES = {
    "collections",
    "concurrent",
    "dbm",
    "email",
    "http",
    "importlib",
    "json",
    "logging",
    "re",
    "tomllib",
    "unittest",
    "urllib",
    "wsgiref",
    "xml",
    "zoneinfo",
}
EXCLUDE = sorted(
    [name for name in os.listdir(STDLIB) if name not in PACKAGES] + ["*/test/*", "*/tests/*"]
)


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("stdlib-cache")


@pytest.fixture(scope="module")
def stdlib(cache: Path) -> Index:
    index = Index(STDLIB, cache_dir=cache, exclude=EXCLUDE)
    index.build()
    index.close()
    assert not (STDLIB / ".anchor-ls").exists()
    return index


def test_no_problems_and_sane_sizes(stdlib: Index) -> None:
    assert stdlib.problems == {}, sorted(stdlib.problems.values(), key=lambda p: p.path)
    stats = stdlib.stats()
    assert stats.files >= 120
    assert {path.split("/")[0] for path in stdlib.graph.files()} == PACKAGES
    assert stats.entities >= 3500
    assert stats.edges[CALLS] >= 3500
    assert stats.edges[INHERITS] >= 250
    assert stats.edges[IMPORTS] >= 200
    constants = sum(e.kind == "constant" for e in stdlib.graph.entities.values())
    assert constants >= 250
    # every definition but modules and constants has a container
    assert stats.edges[CONTAINS] >= stats.entities - stats.files - constants
    assert stats.resolved_binder >= stats.call_sites // 3


def test_every_edge_joins_two_entities(stdlib: Index) -> None:
    """Or an entity and one of DESIGN.md's named targets (env:, io:, setting:)."""
    entities = stdlib.graph.entities
    named = {"env_var": "env:", "io_dep": "io:", "config_usage": "setting:"}
    for edge in stdlib.graph.edges():
        assert edge.src in entities, edge
        assert edge.dst in entities or edge.dst.startswith(named.get(edge.kind, "\0")), edge


def test_hand_checked_calls(stdlib: Index) -> None:
    g = stdlib.graph
    # json/__init__.py: `return _default_encoder.encode(obj)` and `cls(...).encode(obj)`
    assert "json/encoder.py:JSONEncoder.encode" in g.out(CALLS, "json/__init__.py:dumps")
    # `return _default_decoder.decode(s)` / `cls(**kw).decode(s)`
    assert "json/decoder.py:JSONDecoder.decode" in g.out(CALLS, "json/__init__.py:loads")
    # JSONDecoder.decode: `obj, end = self.raw_decode(s, idx=_w(s, 0).end())`
    assert "json/decoder.py:JSONDecoder.raw_decode" in g.out(
        CALLS, "json/decoder.py:JSONDecoder.decode"
    )
    # Logger.info: `if self.isEnabledFor(INFO): self._log(INFO, msg, args, **kwargs)`
    assert {"logging/__init__.py:Logger.isEnabledFor", "logging/__init__.py:Logger._log"} <= set(
        g.out(CALLS, "logging/__init__.py:Logger.info")
    )
    # HTTPConnection.request: `self._send_request(method, url, body, headers, encode_chunked)`
    assert "http/client.py:HTTPConnection._send_request" in g.out(
        CALLS, "http/client.py:HTTPConnection.request"
    )


def test_hand_checked_bases_imports_and_containment(stdlib: Index) -> None:
    g = stdlib.graph
    assert g.out(INHERITS, "email/mime/text.py:MIMEText") == [
        "email/mime/nonmultipart.py:MIMENonMultipart"
    ]
    assert g.out(INHERITS, "logging/handlers.py:RotatingFileHandler") == [
        "logging/handlers.py:BaseRotatingHandler"
    ]
    # `class BaseRotatingHandler(logging.FileHandler):` reaches into the package __init__.
    assert g.out(INHERITS, "logging/handlers.py:BaseRotatingHandler") == [
        "logging/__init__.py:FileHandler"
    ]
    # `from .decoder import JSONDecoder, JSONDecodeError` / `from .encoder import JSONEncoder`
    assert {"json/decoder.py", "json/encoder.py"} <= set(g.out(IMPORTS, "json/__init__.py"))
    assert "json/decoder.py:JSONDecoder.decode" in g.out(CONTAINS, "json/decoder.py:JSONDecoder")
    decode = g.entity("json/decoder.py:JSONDecoder.decode")
    assert decode.kind == "method"
    source = (STDLIB / "json/decoder.py").read_text(encoding="utf-8").splitlines()
    assert source[decode.line - 1].strip().startswith("def decode(self, s")


def _ast_definitions(tree: ast.Module) -> dict[str, int]:
    """qualname -> line of the last `def`/`class` with that name, in source order."""
    found: dict[str, int] = {}
    kinds = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)

    def visit(body: list[ast.stmt], prefix: str) -> None:
        for stmt in body:
            if isinstance(stmt, kinds):
                name = f"{prefix}{stmt.name}"
                found[name] = stmt.lineno
                visit(stmt.body, name + ".")
                continue
            for field in ("body", "orelse", "finalbody", "handlers", "cases"):
                for inner in getattr(stmt, field, ()) or ():
                    if isinstance(inner, ast.stmt):
                        visit([inner], prefix)
                    else:  # except handlers and match cases hold statements
                        visit(getattr(inner, "body", []), prefix)

    visit(tree.body, "")
    return found


def test_definitions_agree_with_ast(stdlib: Index) -> None:
    checked = 0
    for rel in stdlib.graph.files():
        tree = ast.parse((STDLIB / rel).read_bytes())
        expected = {f"{rel}:{name}": line for name, line in _ast_definitions(tree).items()}
        got = {
            e.id: e.line
            for e in stdlib.graph.file_entities(rel)
            if e.kind in ("class", "function", "method")
        }
        missing = sorted(set(expected) - set(got))
        assert not missing, missing[:10]
        wrong = sorted(i for i in expected if got[i] != expected[i])
        assert not wrong, [(i, got[i], expected[i]) for i in wrong[:10]]
        checked += len(expected)
    assert checked >= 3500


def test_warm_start_on_the_stdlib_parses_nothing(stdlib: Index, cache: Path) -> None:
    warm = Index(STDLIB, cache_dir=cache, exclude=EXCLUDE)
    warm.build()
    warm.close()
    assert warm.stats().reparsed == 0
    assert warm.graph.to_json() == stdlib.graph.to_json()
