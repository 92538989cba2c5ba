"""The readable form of each answer, for the CLI's default output (`--json` prints the
object itself). One line per item, `path:line` first so editors and terminals link it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def _where(item: dict[str, Any]) -> str:
    return f"{item['path']}:{item['line']}"


def _omitted(answer: dict[str, Any], key: str = "omitted", noun: str = "more") -> list[str]:
    more = answer.get(key) or 0
    return [f"[+{more} {noun} left out; raise --limit]"] if more else []


def _find(answer: dict[str, Any]) -> list[str]:
    out = [f"{_where(m)}\t{m['kind']}\t{m['id']}\t{m['signature']}" for m in answer["matches"]]
    if not answer["total"]:  # not when a limit of 0 left every match out
        out.append(f"no definition matches {answer['query']!r}")
    return out + _omitted(answer)


def _neighbours(answer: dict[str, Any], noun: str) -> list[str]:
    """One line per caller or callee, its id first (indented two spaces a level deeper),
    then every line it calls on and the source of the first:
    `id<TAB>path:line, line, line: source`."""
    out = []
    for level in answer["levels"]:
        pad = "  " * (level["depth"] - 1)
        for item in level["items"]:
            marks = "" if item["relation"] == "call" else f" ({item['relation']})"
            marks += f" [{item['call_via']}]" if "call_via" in item else ""
            marks += " (test)" if item.get("test") else ""
            marks += " (demo)" if item.get("demo") else ""
            line = f"{pad}{item['id']}{marks}"
            if item["sites"]:
                first = item["sites"][0]
                lines = [site["line"] for site in item["sites"]] + item.get("more_lines", [])
                line += f"\t{first['path']}:{', '.join(map(str, lines))}: {first['text']}"
            if "via" in item:
                line += f"\t(via {item['via']})"
            out.append(line)
    if not answer["total"]:
        out.append(f"no {noun} of {answer['symbol']}")
    # a cut list says how many there are, by role; a whole one lists each, marked
    out += [f"{line} {_counts(answer, noun)}" for line in _omitted(answer)]
    return out + _possible(answer) if "possible" in answer else out


def _counts(answer: dict[str, Any], noun: str) -> str:
    """`4 callers · 1 test (1 of them demo code)`: the whole answer, by role."""
    tests, demo = answer.get("in_tests", 0), answer.get("in_demo", 0)
    others = answer["total"] - tests
    line = f"{others} {noun.removesuffix('s') if others == 1 else noun}"
    line += f" · {tests} test{'s' if tests != 1 else ''}" if tests else ""
    return line + (f" ({demo} of them demo code)" if demo else "")


def _possible(answer: dict[str, Any]) -> list[str]:
    """After the callers: the unresolved sites that may call."""
    out: list[str] = []
    possible = answer["possible"]
    if "maybe" in answer:
        if answer["maybe"]:
            out.append(f"possible callers ({possible}): unresolved sites calling this name")
        for site in answer["maybe"]:
            out.append(f"  {site['id']}\t{_where(site)}: {site['text']}")
        out += _omitted(answer, "maybe_omitted", "more possible callers")
    elif possible:
        out.append(f"{possible} unresolved call sites call this name (--maybe lists them)")
    return out


def _impact(answer: dict[str, Any]) -> list[str]:
    out = [f"{answer['symbol']}: {answer['total']} affected within depth {answer['depth']}"]
    for item in answer["affected"]:
        out.append(
            f"  {item['distance']}  {item['relation']:<10} {item['id']}  ({_where(item)})"
            f"  via {item['via']}"
        )
    out += _omitted(answer)
    out.append(f"tests ({answer['tests_total']}):")
    out += [f"  {t['id']}  ({_where(t)})" for t in answer["tests"]]
    return out + _omitted(answer, "tests_omitted", "more tests")


def _role(item: dict[str, Any]) -> str:
    return " (test)" if item.get("test") else " (demo)" if item.get("demo") else ""


def _hierarchy(answer: dict[str, Any]) -> list[str]:
    out = [answer["symbol"]]
    if answer["kind"] == "class":
        out.append("mro:")
        out += [f"  {b['id']}  ({_where(b)})" for b in answer["mro"]]
        out.append(f"subclasses ({answer['subclasses_total']}):")
        out += [
            f"  {s['distance']}  {s['id']}{_role(s)}  ({_where(s)})" for s in answer["subclasses"]
        ]
    else:
        out.append("overrides (nearest first):")
        out += [f"  {b['id']}  ({_where(b)})" for b in answer["overridden"]]
        out.append(f"overridden by ({answer['overrides_total']}):")
        out += [f"  {s['id']}{_role(s)}  ({_where(s)})" for s in answer["overrides"]]
    return out + _omitted(answer)


def _outline(answer: dict[str, Any]) -> list[str]:
    out = [answer["path"] + ("  (test code)" if answer["test_code"] else "")]
    if "problem" in answer:
        out.append(f"problem: {answer['problem']}")
    for item in answer["definitions"]:
        depth = item["name"].count(".") if item["kind"] != "module" else -1
        pad = "  " * (depth + 1)
        head = item.get("signature") or f"module {item['name']}"
        out.append(f"{item['line']:>5} {pad}{head}")
        for name, value in item.get("fields", {}).items():
            out.append(f"      {pad}  {name}: {value}")
        if item.get("tests"):
            out.append(f"      {pad}  tests: {item['tests']}")
    if answer.get("more"):
        out.append(f"[{answer['note']}]")
    return out


def _tags(answer: dict[str, Any]) -> list[str]:
    out: list[str] = []
    if "blocks" in answer:
        for block in answer["blocks"]:
            out.append(f"{answer['path']}:{block['line']}:")
            out.append(block["text"])
    elif answer["text"]:
        out.append(answer["text"])
    if answer.get("note"):
        out.append(f"({answer['note']})")
    return out


def _tests(answer: dict[str, Any]) -> list[str]:
    out = []
    for test in answer["tests"]:
        via = f"  via {test['via']}" if "via" in test else ""
        out.append(f"{_where(test)}\t{test['role']}\t{test['id']}{via}")
    if not answer["total"]:
        out.append(f"no tests reach {answer['symbol']}")
    return out + _omitted(answer)


def _stats(answer: dict[str, Any]) -> list[str]:
    edges = ", ".join(f"{n} {k}" for k, n in answer["edges"].items())
    return [
        f"root: {answer['root']}",
        f"files: {answer['files']}; entities: {answer['entities']}",
        f"edges: {edges}",
        f"tag policy (auto): {answer['policy']['reason']}",
        f"updated: {answer['updated']}",
    ]


_RENDERERS: dict[str, Callable[[dict[str, Any]], list[str]]] = {
    "find_symbol": _find,
    "callers": lambda answer: _neighbours(answer, "callers"),
    "callees": lambda answer: _neighbours(answer, "callees"),
    "impact": _impact,
    "hierarchy": _hierarchy,
    "outline": _outline,
    "tags": _tags,
    "related_tests": _tests,
    "stats": _stats,
}


def as_text(tool: str, answer: dict[str, Any]) -> str:
    """The answer of `tool` as lines of text."""
    return "\n".join(_RENDERERS[tool](answer))


def error_text(error: dict[str, Any]) -> str:
    """An error answer: its message, then the ids to try instead."""
    lines = [error["error"]]
    for key in ("candidates", "nearest"):
        if error.get(key):
            lines.append(f"{key}:")
            lines += [f"  {ident}" for ident in error[key]]
    if error.get("more"):
        lines.append(f"  [+{error['more']} more]")
    return "\n".join(lines)
