"""Valid files of hostile size: the index reads all of them, in work that grows with them.

Thousands of stacked decorators, class chains thousands deep, `and`/`or` chains of any
length and expressions nested as deep as CPython compiles. The work is counted in Python
function calls (cProfile), never timed: doubling a file must about double it.
"""

from __future__ import annotations

import cProfile
import itertools
import pstats
import random
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from support.hostile import self_chain, stacked_decorators

from anchor_ls.index import CALLS, INHERITS, Index
from anchor_ls.index.mro import c3_merge
from anchor_ls.syntax.parse import summarize
from anchor_ls.syntax.reparse import Reparser
from anchor_ls.syntax.summary import scope_bodies


def chain(n: int) -> str:
    """class K1(K0), class K2(K1), ... K(n-1); the last one's instance calls K0's method."""
    out = ["class K0:\n    def m(self):\n        return 0\n\n\n"]
    out += [f"class K{i}(K{i - 1}):\n    pass\n\n\n" for i in range(1, n)]
    out.append(f"def use():\n    return K{n - 1}().m()\n")
    return "".join(out)


def build(root: Path, files: dict[str, str]) -> Index:
    for rel, text in files.items():
        (root / rel).write_text(text, encoding="utf-8")
    index = Index(root, use_cache=False, workers=1)
    index.build()
    return index


def work(tmp_path: Path, text: str) -> int:
    """Python function calls a cold build of one file makes."""
    root = tmp_path / f"w{len(list(tmp_path.iterdir()))}"
    root.mkdir()
    (root / "h.py").write_text(text, encoding="utf-8")
    index = Index(root, use_cache=False, workers=1)
    profile = cProfile.Profile()
    profile.runcall(index.build)
    return pstats.Stats(profile).total_calls  # type: ignore[attr-defined]


def calls(index: Index) -> set[tuple[str, str]]:
    return {(e.src, e.dst) for e in index.graph.edges(CALLS)}


@contextmanager
def recursion_limit(limit: int) -> Iterator[None]:
    """Python's default limit, as a spawned parse worker has it."""
    before = sys.getrecursionlimit()
    sys.setrecursionlimit(limit)
    try:
        yield
    finally:
        sys.setrecursionlimit(before)


# ----- decorators -----------------------------------------------------------------
DECORATED_CALLS = {
    ("h.py", "h.py:same"),  # applying a decorator calls it from the module
    ("h.py", "h.py:wrap"),
    ("h.py:use", "h.py:target"),
    ("h.py:use", "h.py:wrap.inner"),  # and the wrapper the decorators made
    ("h.py:wrap.inner", "h.py:target"),
    ("h.py:wrap.inner", "h.py:wrap.inner"),  # a wrapper wrapping a wrapper
}


@pytest.mark.parametrize("n", [6, 8000])
def test_stacked_decorators_give_the_same_edges_at_any_height(tmp_path: Path, n: int) -> None:
    index = build(tmp_path, {"h.py": stacked_decorators(n)})
    assert calls(index) == DECORATED_CALLS
    assert index.problems == {}


@pytest.mark.slow
def test_a_hundred_thousand_stacked_decorators_are_indexed(tmp_path: Path) -> None:
    index = build(tmp_path, {"h.py": stacked_decorators(100_000)})
    assert calls(index) == DECORATED_CALLS


def test_stacked_decorators_cost_work_in_proportion(tmp_path: Path) -> None:
    """Each decorator's call site is handed what the ones below it made: walked once for
    all of them, not once per decorator (quadratic: 8,000 took 50 s)."""
    small, large = (work(tmp_path, stacked_decorators(n)) for n in (200, 400))
    assert large < 2.5 * small, (small, large)


# ----- class chains -------------------------------------------------------------------
def test_a_class_chain_deeper_than_the_recursion_limit_keeps_its_mro_and_calls(
    tmp_path: Path,
) -> None:
    n = 5000  # the binder's MRO recursed two frames a class: past 6,000 it gave up
    index = build(tmp_path, {"h.py": chain(n)})
    assert ("h.py:use", "h.py:K0.m") in calls(index)
    inherits = {(e.src, e.dst) for e in index.graph.edges(INHERITS)}
    assert inherits == {(f"h.py:K{i}", f"h.py:K{i - 1}") for i in range(1, n)}
    binder = index.binder
    scopes = binder.summaries["h.py"].scopes
    idx = {s.name: i for i, s in enumerate(scopes) if s.kind == "class"}
    binder.forget_values()
    with recursion_limit(1000):  # a stack of its own, not Python's
        mro = list(binder.mro(("h.py", idx[f"K{n - 1}"])))
    assert [scopes[i].name for _path, i in mro] == [f"K{i}" for i in reversed(range(n))]


def test_class_chains_cost_work_in_proportion(tmp_path: Path) -> None:
    """A class with one base shares its base's MRO, no merge walks the chain again."""
    small, large = (work(tmp_path, chain(n) + chain(n).replace("K", "J")) for n in (200, 400))
    assert large < 2.5 * small, (small, large)


def constructed_chain(n: int) -> str:
    """A chain whose every class is instantiated; the constructor is the root's."""
    out = ["class K0:\n    def __init__(self):\n        self.x = 1\n\n\n"]
    for i in range(1, n):
        out.append(f"class K{i}(K{i - 1}):\n    pass\n\n\ndef make{i}():\n    return K{i}()\n\n\n")
    return "".join(out)


def test_a_chain_whose_every_class_is_constructed_costs_work_in_proportion(
    tmp_path: Path,
) -> None:
    """Where a name is found along an MRO is remembered for the MROs that end with it:
    each class's `__init__` is not looked for down the whole chain again."""
    small, large = (work(tmp_path, constructed_chain(n)) for n in (200, 400))
    assert large < 2.5 * small, (small, large)
    (tmp_path / "built").mkdir()
    index = build(tmp_path / "built", {"h.py": constructed_chain(400)})
    found = calls(index)
    assert all((f"h.py:make{i}", "h.py:K0.__init__") in found for i in range(1, 400))


def self_chain_calls(n: int, shape: str) -> set[tuple[str, str]]:
    """The call edges self_chain(n, shape) has (n >= 3)."""
    use = {("h.py:use", f"h.py:K{n - 1}"), ("h.py:use", f"h.py:K{n - 1}.m{n - 1}")}
    if shape == "calls":
        return {(f"h.py:K{i}.m{i}", "h.py:K0.m") for i in range(1, n)} | use
    if shape == "steps":
        chain = {(f"h.py:K{i}.m{i}", f"h.py:K{i - 1}.m{i - 1}") for i in range(2, n)}
        return chain | {("h.py:K1.m1", "h.py:K0.m")} | use
    return (
        {(f"h.py:K{i}.m{i}", "h.py:K0.m") for i in range(1, n)}
        | {(f"h.py:K{i}.__init__", "h.py:K0") for i in range(1, n)}
        | {("h.py:use", f"h.py:K{n - 1}.__init__")}
        | use
    )


@pytest.mark.parametrize("shape", ["calls", "steps", "stores"])
@pytest.mark.parametrize("n", [6, 2000])
def test_a_chain_of_methods_on_self_gives_the_same_edges_at_any_length(
    tmp_path: Path, shape: str, n: int
) -> None:
    index = build(tmp_path, {"h.py": self_chain(n, shape)})
    assert calls(index) == self_chain_calls(n, shape)
    assert index.problems == {}


@pytest.mark.parametrize("shape", ["calls", "steps", "stores"])
def test_a_chain_of_methods_on_self_costs_work_in_proportion(tmp_path: Path, shape: str) -> None:
    """`self.name` in each class neither walks the whole MRO for the classes storing
    self.name (a table says which do) nor builds the set of all the classes below it
    to find overrides (no more subclasses are counted than there are definers):
    2,500 classes took 9.5 s and 200 MB."""
    small, large = (work(tmp_path, self_chain(n, shape)) for n in (300, 600))
    assert large < 2.5 * small, (small, large)


def override_chain(n: int) -> str:
    """A chain whose every class overrides m and calls it on self (each call can reach
    every override below); the last class's instance calls m."""
    out = ["class K0:\n    def m(self):\n        return 1\n\n\n"]
    out += [
        f"class K{i}(K{i - 1}):\n    def m(self):\n        return self.m()\n\n"
        f"    def __init__(self):\n        self.x = {i}\n\n\n"
        for i in range(1, n)
    ]
    out.append(f"def use():\n    return K{n - 1}().m()\n")
    return "".join(out)


def test_a_chain_of_overrides_called_on_self_reaches_every_override_below(
    tmp_path: Path,
) -> None:
    """self.m() in K{i} can run the m of K{i} or of any class below it."""
    n = 6
    index = build(tmp_path, {"h.py": override_chain(n)})
    overrides = {(f"h.py:K{i}.m", f"h.py:K{j}.m") for i in range(1, n) for j in range(i, n)}
    last = f"h.py:K{n - 1}"
    use = {("h.py:use", last), ("h.py:use", f"{last}.__init__"), ("h.py:use", f"{last}.m")}
    assert calls(index) == overrides | use
    assert index.problems == {}


def test_a_chain_of_overrides_called_on_self_costs_work_in_proportion(tmp_path: Path) -> None:
    """The overrides of each class are put from its subclass's, already capped: each
    class looked at every class below it (1,000 classes took 4.7 s and 139 MB, 4,000
    took 51 s and 900 MB)."""
    small, large = (work(tmp_path, override_chain(n)) for n in (300, 600))
    assert large < 2.5 * small, (small, large)


def textbook_merge(first: object, seqs: list[list]) -> list:
    """The C3 merge as the binder had it (quadratic per class), the reference."""
    seqs = [list(s) for s in seqs]
    result = [first]
    while True:
        seqs = [s for s in seqs if s]
        if not seqs:
            return result
        for seq in seqs:
            head = seq[0]
            if not any(head in s[1:] for s in seqs):
                break
        else:
            for seq in seqs:
                for c in seq:
                    if c not in result:
                        result.append(c)
            return result
        result.append(head)
        for s in seqs:
            if s and s[0] == head:
                del s[0]


@pytest.mark.parametrize("seed", range(300))
def test_the_merge_is_the_textbook_c3_merge(seed: int) -> None:
    """On lists as MROs give them, inconsistent ones and repeats (cut cycles) included."""
    rnd = random.Random(seed)
    classes = list(range(rnd.randint(2, 14)))
    seqs = []
    for _ in range(rnd.randint(1, 4)):
        picked = rnd.sample(classes, rnd.randint(1, len(classes)))
        if rnd.random() < 0.3:
            picked.sort()  # consistent orders are the usual case
        if rnd.random() < 0.15:
            picked.insert(rnd.randint(0, len(picked)), rnd.choice(picked))  # a repeat
        seqs.append(picked)
    seqs.append([s[0] for s in seqs])  # the bases, in order
    assert c3_merge(-1, seqs) == textbook_merge(-1, seqs)


def test_the_mro_is_pythons_on_random_hierarchies(tmp_path: Path) -> None:
    rnd = random.Random(18)
    made: dict[str, type] = {}
    lines = []
    for i in range(80):
        name = f"X{i}"
        for _attempt in range(5):
            bases = rnd.sample(sorted(made), min(len(made), rnd.randint(0, 3)))
            try:
                made[name] = type(name, tuple(made[b] for b in bases), {})
                break
            except TypeError:  # no consistent MRO: Python refuses the class
                continue
        else:
            bases = []
            made[name] = type(name, (), {})
        lines.append(f"class {name}({', '.join(bases)}):\n    pass\n")
    index = build(tmp_path, {"h.py": "\n".join(lines)})
    scopes = index.binder.summaries["h.py"].scopes
    for i, scope in enumerate(scopes):
        if scope.kind == "class":
            mro = [scopes[j].name for _path, j in index.binder.mro(("h.py", i))]
            assert mro == [c.__name__ for c in made[scope.name].__mro__[:-1]]


# ----- deep expressions ----------------------------------------------------------------
AROUND = (
    "def before():\n    return 1\n\n\n"
    "def deep(a, b):\n    before()\n    x = {expr}\n    before(x)\n    return x\n\n\n"
    "def after():\n    return deep(1, 2)\n"
)


def read_around(tmp_path: Path, expr: str) -> Index:
    index = build(tmp_path, {"h.py": AROUND.format(expr=expr)})
    assert {"h.py:before", "h.py:deep", "h.py:after"} <= set(index.graph.entities)
    assert {("h.py:deep", "h.py:before"), ("h.py:after", "h.py:deep")} <= calls(index)
    assert len(index.graph.sites("h.py:deep", "h.py:before")) >= 2
    return index


@pytest.mark.parametrize("op", [" and ", " or ", " + ", " | "])
def test_a_chain_of_thousands_of_operators_is_read_whole(tmp_path: Path, op: str) -> None:
    terms = [f"before({i})" if i % 500 == 0 else f"a{i}" for i in range(2000)]
    index = read_around(tmp_path, op.join(terms))
    # the calls inside the chain, the first as well as the last
    assert len(index.graph.sites("h.py:deep", "h.py:before")) == 2 + 4
    assert index.problems == {}


def test_a_call_of_a_long_or_chain_flows_every_operand(tmp_path: Path) -> None:
    ors = " or ".join(["b"] * 1999 + ["before"])
    text = AROUND.format(expr="1") + (
        f"\n\ndef run(f):\n    return f()\n\n\ndef call(b):\n    return run({ors})\n"
    )
    index = build(tmp_path, {"h.py": text})
    assert {("h.py:call", "h.py:run"), ("h.py:run", "h.py:before")} <= calls(index)
    assert index.problems == {}


@pytest.mark.parametrize(
    "expr",
    [
        "a" + ".b" * 1999,  # CPython compiles each of these
        "a" + "()" * 1999,
        "a" + "[0]" * 1999,
        "not " * 1999 + "a",
        "-" * 1999 + "a",
        "a if b else " * 1999 + "a",
    ],
    ids=["attributes", "calls", "subscripts", "nots", "negations", "conditionals"],
)
def test_an_expression_nested_as_deep_as_cpython_compiles_costs_only_itself(
    tmp_path: Path, expr: str
) -> None:
    compile(AROUND.format(expr=expr), "h.py", "exec")
    index = read_around(tmp_path, expr)
    problem = index.problems["h.py"]
    assert problem.kind == "too-deep" and "line 7" in problem.message


@pytest.mark.parametrize("depth", [199, 1000, 20_000])
def test_nested_lists_and_parentheses_are_read_around(tmp_path: Path, depth: int) -> None:
    """CPython takes 199 nested brackets and refuses 200; tree-sitter reads more."""
    nested = "[" * depth + "1" + "]" * depth + " + (" * depth + "before()" + ")" * depth
    index = read_around(tmp_path, nested)
    assert index.problems["h.py"].kind == "too-deep"


@pytest.mark.parametrize(
    "expr",
    ["a" + ".b" * 1999, " and ".join(["a"] * 20_000), "[" * 190 + "]" * 190, "-" * 3000 + "1"],
    ids=["attributes", "and-chain", "lists", "negative-number"],
)
def test_a_deep_file_is_summarized_under_the_default_recursion_limit(expr: str) -> None:
    """A spawned parse worker runs with Python's default limit."""
    text = AROUND.format(expr=expr).encode()
    with recursion_limit(1000):
        summary = summarize("h.py", text)
        bodies = scope_bodies(summary)
    assert [s.qualname for s in summary.scopes] == ["", "before", "deep", "after"]
    deep_calls = bodies[2][0]
    assert [c.func for c in deep_calls if c.func[0] == "n"][:1] == [("n", "before")]
    assert [c.func for c in deep_calls][-1] == ("n", "before")


def test_a_deep_negative_number_is_a_number() -> None:
    text = b"x = [1, 2, 3][" + b"-" * 3001 + b"1]\n"
    with recursion_limit(1000):
        summary = summarize("h.py", text)
    binding = summary.scopes[0].bindings[0]
    assert binding.value == ("s", ("l", (("k", 1), ("k", 2), ("k", 3))), ("k", -1))


def test_chains_and_nesting_together_stay_in_order(tmp_path: Path) -> None:
    """Calls inside an operator chain keep the order of the source (an edit's walk and the
    whole file's walk must agree on every site)."""
    parts = [f"g{i}(before())" for i in range(5)]
    text = AROUND.format(expr=" or ".join(parts))
    summary = summarize("h.py", text.encode())
    names = [c.func[1] for c in scope_bodies(summary)[2][0] if c.func[0] == "n"]
    expected = ["before", *itertools.chain.from_iterable(("before", f"g{i}") for i in range(5))]
    assert names == [*expected, "before"]


def test_an_edit_that_nests_too_deep_inside_a_function_is_reported_as_a_whole_walk_would() -> None:
    reparser = Reparser()
    first = reparser.summarize("h.py", AROUND.format(expr="a").encode(), None).summary
    text = AROUND.format(expr="a" + ".b" * 1999).encode()
    edited = reparser.summarize("h.py", text, first)
    assert edited.summary.problems == summarize("h.py", text).problems
    assert [kind for kind, _message in edited.summary.problems] == ["too-deep"]
