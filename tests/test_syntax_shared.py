"""A packed summary holds each repeated expression of its file once (half the tuples of
Django's summaries were repeats), through the cache's pickle too, and never merges two
that only compare equal (True == 1 == 1.0) or two bindings (the binder keeps their values
by id)."""

from __future__ import annotations

import pickle

from anchor_ls.syntax.parse import summarize
from anchor_ls.syntax.summary import Constant, FileSummary, Scope, pack_bodies

SOURCE = b"""\
class Order:
    def total(self, rate: float = 1) -> float:
        return self.amount

    def tax(self, rate: float = 2) -> float:
        return self.amount

    def net(self, rate: float = 3) -> float:
        return self.amount
"""


def _methods(summary: FileSummary) -> dict[str, Scope]:
    return {s.name: s for s in summary.scopes if s.kind == "function"}


def test_repeated_expressions_are_one_object_after_packing_and_pickling() -> None:
    summary = pickle.loads(pickle.dumps(pack_bodies(summarize("m.py", SOURCE)), 5))
    m = _methods(summary)
    assert m["total"].return_values[0] == m["tax"].return_values[0]  # `self.amount`
    assert m["total"].return_values[0] is m["tax"].return_values[0]
    assert m["total"].returns is m["net"].returns  # `float`
    assert m["total"].params[0] is m["tax"].params[0]  # `self`


def test_equal_but_different_constants_stay_apart() -> None:
    """Were the parser to keep `True` and `1.0` as constants, they would stay themselves."""
    summary = summarize("m.py", SOURCE)
    m = _methods(summary)
    for name, value in (("total", 1), ("tax", True), ("net", 1.0)):
        rate = m[name].params[1]
        m[name].params[1] = rate._replace(default=Constant("k", value))
    m = _methods(pack_bodies(summary))
    total, tax, net = (m[name].params[1].default for name in ("total", "tax", "net"))
    assert total == tax == net  # 1 == True == 1.0
    assert [type(d[1]) for d in (total, tax, net)] == [int, bool, float]


def test_bindings_stay_objects_of_their_own() -> None:
    source = b"def f():\n    x = 1\n\ndef g():\n    x = 1\n"
    summary = pack_bodies(summarize("m.py", source))
    f, g = (s for s in summary.scopes if s.kind == "function")
    assert f.bindings[0].value is g.bindings[0].value
    assert f.bindings[0] is not g.bindings[0]
