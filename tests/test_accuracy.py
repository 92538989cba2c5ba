"""The call-graph engine against hand-written expectations (fixtures/accuracy, fixtures/example).

Every case must be exactly right; the totals must reach the project's precision/recall bar; and
the expected files must name definitions that really exist (checked with `ast`, not the engine).
"""

from __future__ import annotations

import functools
from pathlib import Path

import pytest
from support import accuracy as acc

CASES = acc.case_dirs()

# The semantics the engine must handle; a case folder going missing fails loudly.
REQUIRED_CASES = [
    "direct_calls",
    "import_absolute",
    "import_relative",
    "import_alias",
    "import_star",
    "reexport_init",
    "import_in_function",
    "try_except_import",
    "submodule_attribute",
    "constructor_init",
    "init_via_mro",
    "self_methods",
    "cls_methods",
    "staticmethods",
    "super_calls",
    "mro_multiple",
    "attr_from_constructor",
    "properties",
    "property_accessors",
    "dataclasses",
    "local_alias",
    "param_annotation",
    "return_annotation",
    "return_value",
    "dict_list_storage",
    "args_kwargs_passing",
    "lambdas",
    "generators",
    "exceptions",
    "decorators",
    "decorator_factory",
    "nested_functions",
    "callable_instance",
    "shadowing_local",
    "shadowing_module",
    "same_method_name",
    "no_guess",
    "self_dispatch",
    "conditional_defs",
    "class_attributes",
    "chained_calls",
    "namespace_package",
    "src_layout",
    "global_instance",
    "walrus_with",
    "example",
    # the dense facts and references (issue 6), written blind against the conventions
    "dense_config_django",
    "dense_config_flask",
    "dense_config_object",
    "dense_const",
    "dense_env",
    "dense_io",
    "dense_mixed",
    "dense_tests_pytest",
    "dense_tests_unittest",
    "refs_callbacks",
    "refs_decorators",
    "refs_negatives",
    "refs_registries",
]


@functools.cache
def engine_score(name: str) -> dict[str, acc.CaseScore]:
    """Index one case once per session, however many tests look at it."""
    return acc.score(CASES[name])


def describe(name: str, scores: dict[str, acc.CaseScore]) -> str:
    lines = [f"{name}: engine and expected.json disagree"]
    for kind, s in scores.items():
        lines += [f"  missing {kind}: {src} -> {dst}" for src, dst in s.missing]
        lines += [f"  extra   {kind}: {src} -> {dst}" for src, dst in s.extra]
    return "\n".join(lines)


def test_every_required_case_exists() -> None:
    assert sorted(set(REQUIRED_CASES) - set(CASES)) == []


@pytest.mark.parametrize("name", sorted(CASES))
def test_expected_is_well_formed(name: str) -> None:
    problems = acc.check_expected(CASES[name])
    assert problems == [], f"{name}/expected.json:\n" + "\n".join(problems)


@pytest.mark.parametrize("name", sorted(CASES))
def test_case_is_exactly_right(name: str) -> None:
    scores = engine_score(name)
    assert all(s.perfect for s in scores.values()), describe(name, scores)


def test_totals_reach_the_bar() -> None:
    total = acc.totals({name: engine_score(name) for name in CASES})
    calls, inherits = total["calls"], total["inherits"]
    summary = ", ".join(
        f"{k} P={t.precision:.3f} R={t.recall:.3f} (tp={t.tp} fp={t.fp} fn={t.fn})"
        for k, t in total.items()
    )
    assert calls.precision >= 0.98 and calls.recall >= 0.95, summary
    assert inherits.precision == 1.0 and inherits.recall == 1.0, summary
    for kind in acc.DENSE_KINDS:  # precise before complete
        assert total[kind].tp >= 10, f"too few {kind} facts scored: {summary}"
        assert total[kind].precision >= 0.98 and total[kind].recall >= 0.9, summary


# ----- the scorer and the checker themselves, on synthetic input -------------


def test_scorer_counts_allowed_edges_as_neither_hit_nor_miss(tmp_path: Path) -> None:
    (tmp_path / "expected.json").write_text(
        '{"description": "d", "calls": [["m.py:a", "m.py:b"], ["m.py:a", "m.py:c"]],'
        ' "inherits": [], "allowed": [["calls", "m.py:a", "m.py:d"]]}',
        encoding="utf-8",
    )
    expected = acc.load_case(tmp_path)
    edges = {
        ("calls", "m.py:a", "m.py:b"),  # hit
        ("calls", "m.py:a", "m.py:d"),  # allowed: ignored
        ("calls", "m.py:a", "m.py:e"),  # false positive
        ("imports", "m.py", "n.py"),  # imports not listed: not scored
        ("contains", "m.py", "m.py:a"),  # never scored
    }
    scores = acc.score_edges(expected, edges)
    assert set(scores) == {"calls", "inherits"}
    calls = scores["calls"]
    assert (calls.tp, calls.fp, calls.fn) == (1, 1, 1)
    assert calls.missing == [("m.py:a", "m.py:c")]
    assert calls.extra == [("m.py:a", "m.py:e")]
    assert calls.precision == 0.5 and calls.recall == 0.5
    assert scores["inherits"].perfect and scores["inherits"].precision == 1.0


def test_checker_reports_unknown_ids_and_wrong_kinds(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(
        "class A:\n    def f(self):\n        pass\n\nsq = lambda x: x\n", encoding="utf-8"
    )
    (tmp_path / "expected.json").write_text(
        '{"description": "d", "calls": [["m.py:A.f", "m.py:sq"], ["m.py:A.f", "m.py:A.g"]],'
        ' "inherits": [["m.py:A", "m.py:A.f"]], "imports": [],'
        ' "allowed": [["calls", "m.py:A.f", "m.py:sq"]]}',
        encoding="utf-8",
    )
    problems = acc.check_expected(tmp_path)
    assert any("m.py:A.g is not defined" in p for p in problems)
    assert any("m.py:A.f is a function" in p for p in problems)
    assert any("is also required" in p for p in problems)
    assert len(problems) == 3


def test_load_case_rejects_malformed_files(tmp_path: Path) -> None:
    (tmp_path / "expected.json").write_text(
        '{"description": "d", "calls": [["only-one"]], "inherits": []}', encoding="utf-8"
    )
    with pytest.raises(ValueError, match="not a \\[src, dst\\] pair"):
        acc.load_case(tmp_path)
