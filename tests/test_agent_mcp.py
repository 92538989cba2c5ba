"""`anchor-ls mcp` end to end: a real server process driven by the MCP SDK's stdio client.

The answers about fixtures/agent_shop are written by hand from reading its source (see
its README). The server runs as `python -P -m anchor_ls mcp REPO` from a folder outside
the repository, so nothing of the repository is on its sys.path.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from anchor_ls.agent.queries import MAX_OUTLINE

SHOP = Path(__file__).resolve().parent.parent / "fixtures" / "agent_shop"
EXAMPLE = Path(__file__).resolve().parent.parent / "fixtures" / "example"
TOOLS = {
    "find_symbol",
    "callers",
    "callees",
    "impact",
    "hierarchy",
    "outline",
    "tags",
    "related_tests",
    "stats",
}
H = "shop/handlers.py"
P = "shop/payments.py"
T = "tests/test_handlers.py"
TOTAL_TEST = f"{T}:test_charge_total"


def copy_of(fixture: Path, tmp_path: Path) -> Path:
    root = tmp_path / fixture.name
    shutil.copytree(fixture, root, ignore=shutil.ignore_patterns(".anchor-ls", "__pycache__"))
    return root


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    return copy_of(SHOP, tmp_path)


class Agent:
    """One client session: `ask` returns a tool's JSON object and checks that its text
    is the same object."""

    def __init__(self, session: ClientSession) -> None:
        self.session = session

    async def call(self, tool: str, **args: Any) -> tuple[bool, dict[str, Any] | str]:
        result = await self.session.call_tool(tool, args)
        text = result.content[0].text  # type: ignore[union-attr]
        if result.structured_content is None:
            return result.is_error, text
        assert json.loads(text) == result.structured_content
        return result.is_error, result.structured_content

    async def ask(self, tool: str, **args: Any) -> dict[str, Any]:
        error, answer = await self.call(tool, **args)
        assert not error, answer
        assert isinstance(answer, dict)
        return answer

    async def refused(self, tool: str, **args: Any) -> dict[str, Any] | str:
        error, answer = await self.call(tool, **args)
        assert error, answer
        return answer


@asynccontextmanager
async def agent(root: Path, tmp_path: Path) -> AsyncIterator[Agent]:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(exist_ok=True)
    params = StdioServerParameters(  # the whole environment: the SDK passes on only a few
        command=sys.executable,  # variables, and the suite's user cache (conftest) is one
        args=["-P", "-m", "anchor_ls", "mcp", str(root)],
        cwd=elsewhere,
        env=dict(os.environ),
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield Agent(session)


def ids(items: list[dict[str, Any]]) -> list[str]:
    return [item["id"] for item in items]


def level_ids(answer: dict[str, Any]) -> list[list[str]]:
    return [ids(level["items"]) for level in answer["levels"]]


async def test_the_server_lists_every_tool_with_its_parameters(shop: Path, tmp_path: Path) -> None:
    async with agent(shop, tmp_path) as client:
        listed = (await client.session.list_tools()).tools
        assert {tool.name for tool in listed} == TOOLS
        params = {tool.name: set(tool.input_schema["properties"]) for tool in listed}
        assert params == {
            "find_symbol": {"query", "kind", "limit"},
            "callers": {"symbol", "depth", "limit", "maybe"},
            "callees": {"symbol", "depth", "limit"},
            "impact": {"symbol", "depth", "limit"},
            "hierarchy": {"symbol"},
            "outline": {"path"},
            "tags": {"target", "policy"},
            "related_tests": {"symbol"},
            "stats": set(),
        }


async def test_find_symbol_ranks_exact_then_suffix_then_substring(
    shop: Path, tmp_path: Path
) -> None:
    async with agent(shop, tmp_path) as client:
        found = await client.ask("find_symbol", query="Charge")
        assert [(m["id"], m["match"]) for m in found["matches"]] == [
            (f"{P}:Charge", "exact"),
            (f"{P}:Charge.total", "substring"),  # the shorter qualified name first
            (f"{P}:Charge.__init__", "substring"),
            (f"{T}:test_charge_total", "substring (any case)"),
        ]
        assert found["matches"][0] == {
            "id": f"{P}:Charge",
            "kind": "class",
            "path": P,
            "line": 6,
            "match": "exact",
            "signature": "class Charge",
        }
        methods = await client.ask("find_symbol", query="handle", kind="method", limit=2)
        assert ids(methods["matches"]) == [f"{H}:Audited.handle", f"{H}:Handler.handle"]
        assert (methods["total"], methods["omitted"]) == (5, 3)  # + Handler.save: "handlers.py"
        init = await client.ask("find_symbol", query="Charge.__init__")
        assert init["matches"][0]["signature"] == (
            'def __init__(self, amount: int, currency: str = "EUR") -> None'
        )
        assert (await client.ask("find_symbol", query="FEE"))["matches"][0]["signature"] == (
            "FEE = 30"
        )


async def test_callers_level_by_level_with_call_sites(shop: Path, tmp_path: Path) -> None:
    async with agent(shop, tmp_path) as client:
        one = await client.ask("callers", symbol="Charge")
        assert level_ids(one) == [
            [f"{H}:CardHandler.handle", f"{H}:RefundHandler.handle", f"{P}:refund", TOTAL_TEST]
        ]
        items = {i["id"]: i for i in one["levels"][0]["items"]}
        assert items[f"{H}:CardHandler.handle"]["sites"] == [
            {"path": H, "line": 20, "text": "charge = Charge(amount)"}
        ]
        assert items[f"{P}:refund"]["sites"] == [
            {"path": P, "line": 16, "text": "return Charge(-charge.amount, charge.currency)"}
        ]
        assert items[TOTAL_TEST]["test"] is True and "test" not in items[f"{P}:refund"]
        assert items[TOTAL_TEST]["sites"] == [
            {"path": T, "line": 14, "text": "assert Charge(1).total() == 31"}
        ]
        assert (one["total"], one["in_tests"]) == (4, 1)
        three = await client.ask("callers", symbol=f"{P}:Charge", depth=3)
        assert level_ids(three) == [
            [f"{H}:CardHandler.handle", f"{H}:RefundHandler.handle", f"{P}:refund", TOTAL_TEST],
            [f"{H}:dispatch"],
            [f"{H}:register", "tests/helpers.py:pay"],
        ]
        register, pay = three["levels"][2]["items"]
        assert register["relation"] == "reference" and register["via"] == f"{H}:dispatch"
        assert register["sites"] == [{"path": H, "line": 36, "text": "callbacks.append(dispatch)"}]
        assert pay["relation"] == "call" and pay["test"] is True
        assert (three["total"], three["in_tests"], three["omitted"]) == (7, 2, 0)
        # limit cuts test code first: it comes last in each level
        cut = await client.ask("callers", symbol="Charge", limit=3)
        assert level_ids(cut) == [
            [f"{H}:CardHandler.handle", f"{H}:RefundHandler.handle", f"{P}:refund"]
        ]
        assert cut["omitted"] == 1


async def test_callees_and_truncation_with_a_count(shop: Path, tmp_path: Path) -> None:
    async with agent(shop, tmp_path) as client:
        full = await client.ask("callees", symbol="dispatch")
        expected = [
            f"{H}:CardHandler",
            f"{H}:CardHandler.handle",
            f"{H}:RefundHandler",
            f"{H}:RefundHandler.handle",
        ]
        assert level_ids(full) == [expected]
        assert full["levels"][0]["items"][1]["sites"] == [
            {"path": H, "line": 32, "text": "return handler.handle(amount)"}
        ]
        cut = await client.ask("callees", symbol="dispatch", limit=2)
        assert level_ids(cut) == [expected[:2]]
        assert (cut["total"], cut["omitted"]) == (4, 2)
        deeper = await client.ask("callees", symbol="RefundHandler.handle", depth=2)
        assert (
            level_ids(deeper)
            == [
                [f"{P}:Charge", f"{P}:Charge.__init__", f"{P}:Charge.total", f"{P}:refund"],
                [],
            ][: len(deeper["levels"])]
        )


async def test_impact_follows_calls_overrides_and_reaches_the_tests(
    shop: Path, tmp_path: Path
) -> None:
    async with agent(shop, tmp_path) as client:
        answer = await client.ask("impact", symbol="Handler.handle")
        assert [(i["id"], i["distance"], i["relation"], i["via"]) for i in answer["affected"]] == [
            (f"{H}:CardHandler.handle", 1, "override", f"{H}:Handler.handle"),
            (f"{H}:RefundHandler.handle", 1, "override", f"{H}:Handler.handle"),
            (f"{H}:dispatch", 2, "calls", f"{H}:CardHandler.handle"),
            (f"{H}:register", 3, "references", f"{H}:dispatch"),
        ]
        assert ids(answer["tests"]) == [
            "tests/helpers.py:pay",
            f"{T}:test_card_pays_the_fee",
        ]
        module = await client.ask("impact", symbol="shop/store.py", limit=0)
        assert module["affected"] == [] and module["omitted"] == module["total"] == 1
        full = await client.ask("impact", symbol="shop/store.py")
        assert [(i["id"], i["relation"]) for i in full["affected"]] == [(H, "imports")]


async def test_hierarchy_of_classes_in_mro_order_and_of_methods(shop: Path, tmp_path: Path) -> None:
    async with agent(shop, tmp_path) as client:
        refund = await client.ask("hierarchy", symbol="RefundHandler")
        # declared (CardHandler, Audited): C3 puts CardHandler's base before Audited
        assert ids(refund["mro"]) == [f"{H}:CardHandler", f"{H}:Handler", f"{H}:Audited"]
        assert refund["subclasses"] == []
        base = await client.ask("hierarchy", symbol="Handler")
        assert [(s["id"], s["distance"]) for s in base["subclasses"]] == [
            (f"{H}:CardHandler", 1),
            (f"{H}:RefundHandler", 2),
        ]
        method = await client.ask("hierarchy", symbol="RefundHandler.handle")
        assert ids(method["overridden"]) == [
            f"{H}:CardHandler.handle",
            f"{H}:Handler.handle",
            f"{H}:Audited.handle",
        ]
        assert method["overrides"] == []
        top = await client.ask("hierarchy", symbol="Handler.handle")
        assert ids(top["overrides"]) == [f"{H}:CardHandler.handle", f"{H}:RefundHandler.handle"]
        refused = await client.refused("hierarchy", symbol="dispatch")
        assert "hierarchy takes a class or a method" in refused["error"]  # type: ignore[index]


async def test_outline_gives_signatures_lines_and_short_tag_fields(
    shop: Path, tmp_path: Path
) -> None:
    async with agent(shop, tmp_path) as client:
        answer = await client.ask("outline", path=P)
        assert answer["path"] == P and answer["test_code"] is False
        assert answer["definitions"] == [
            {
                "name": P,
                "kind": "module",
                "line": 1,
                "end_line": 16,
                "fields": {"IMPORTED_BY": H},
            },
            {"name": "FEE", "kind": "constant", "line": 3, "end_line": 3, "signature": "FEE = 30"},
            {
                "name": "Charge",
                "kind": "class",
                "line": 6,
                "end_line": 12,
                "signature": "class Charge",
                "fields": {
                    "CALLED_BY": f"{H}:CardHandler.handle, {H}:RefundHandler.handle, :refund"
                },
                "tests": 1,
            },
            {
                "name": "Charge.__init__",
                "kind": "method",
                "line": 7,
                "end_line": 9,
                "signature": 'def __init__(self, amount: int, currency: str = "EUR") -> None',
                "tests": 1,
            },
            {
                "name": "Charge.total",
                "kind": "method",
                "line": 11,
                "end_line": 12,
                "signature": "def total(self) -> int",
                "fields": {"CALLED_BY": f"{H}:CardHandler.handle, {H}:RefundHandler.handle"},
                "tests": 1,
            },
            {
                "name": "refund",
                "kind": "function",
                "line": 15,
                "end_line": 16,
                "signature": "def refund(charge: Charge) -> Charge",
                "fields": {"CALLS": ":Charge", "CALLED_BY": f"{H}:RefundHandler.handle"},
            },
        ]


async def test_a_file_is_found_in_every_form_an_agent_writes_it(shop: Path, tmp_path: Path) -> None:
    # grep, tracebacks and compilers print `path:line` or `path:line:column`
    forms = [P, f"./{P}", str(shop / P), f"{P}:11", f"{P}:11:5", f"shop/../{P}"]
    async with agent(shop, tmp_path) as client:
        for form in forms:
            assert (await client.ask("outline", path=form))["path"] == P, form
            assert (await client.ask("tags", target=form))["path"] == P, form
        # a folder: the files in it to choose from, not the nearest names of the whole tree
        for folder in ("shop", "shop/", "./shop"):
            refused = await client.refused("outline", path=folder)
            assert refused == {
                "error": "shop is a folder, not a file: ask again with one of its Python files",
                "candidates": ["shop/__init__.py", H, P, "shop/store.py"],
                "more": 0,
            }, folder
        root = await client.refused("outline", path=".")  # was "outside the repository"
        assert root["candidates"][:2] == ["shop/__init__.py", H]  # type: ignore[index]
    text = cli(shop, "outline", "shop")
    assert text.returncode == 1
    assert text.stderr.splitlines()[1:] == [
        "candidates:",
        "  shop/__init__.py",
        f"  {H}",
        f"  {P}",
        "  shop/store.py",
    ]


async def test_the_outline_of_a_large_file_is_capped_with_a_count(
    shop: Path, tmp_path: Path
) -> None:
    big = "shop/big.py"
    (shop / big).write_text("".join(f"def f{i}():\n    return {i}\n\n\n" for i in range(600)))
    async with agent(shop, tmp_path) as client:
        answer = await client.ask("outline", path=big)
    shown = [big] + [f"f{i}" for i in range(MAX_OUTLINE - 1)]  # the module, then f0, f1, ...
    assert [d["name"] for d in answer["definitions"]] == shown
    assert answer["more"] == 601 - MAX_OUTLINE > 0
    first_left_out = 4 * (MAX_OUTLINE - 1) + 1  # f{MAX_OUTLINE - 1}: 4 lines a function
    assert f"from line {first_left_out} on" in answer["note"]
    done = cli(shop, "outline", big, "--json")
    assert done.returncode == 0 and json.loads(done.stdout) == answer
    text = cli(shop, "outline", big).stdout.splitlines()
    assert text[-2].split() == [str(first_left_out - 4), "def", f"f{MAX_OUTLINE - 2}()"]
    assert text[-1] == f"[{answer['note']}]"


async def test_tags_are_the_materialized_block_text(shop: Path, tmp_path: Path) -> None:
    async with agent(shop, tmp_path) as client:
        one = await client.ask("tags", target="Charge.total")
        assert one["text"] == (
            f"# === CodeAnchor {P}:Charge.total\n"
            f"# CALLED_BY: {H}:CardHandler.handle, {H}:RefundHandler.handle\n"
            "# ==="
        )
        assert one["line"] == 11 and one["policy"]["name"] == "topo"
        store = await client.ask("tags", target="shop/store.py")
        assert store["blocks"] == [
            {"line": 1, "text": f"# === CodeAnchor shop/store.py\n# IMPORTED_BY: {H}\n# ==="},
            {
                "line": 5,
                "text": f"# === CodeAnchor shop/store.py:Store.save\n"
                f"# CALLED_BY: {H}:Handler.save\n# ===",
            },
        ]
        assert (await client.ask("tags", target="store.py"))["blocks"] == store["blocks"]
        dense = await client.ask("tags", target="Charge.total", policy="dense")
        assert f"# TEST_REF: {T}:test_charge_total" in dense["text"].splitlines()
        refused = await client.refused("tags", target="Charge.total", policy="loud")
        assert "unknown tag policy" in refused["error"]  # type: ignore[index]


async def test_related_tests_go_through_test_helpers(shop: Path, tmp_path: Path) -> None:
    async with agent(shop, tmp_path) as client:
        answer = await client.ask("related_tests", symbol="dispatch")
        assert answer["tests"] == [
            {"id": "tests/helpers.py:pay", "path": "tests/helpers.py", "line": 4, "role": "helper"},
            {
                "id": "tests/helpers.py:pay_twice",
                "path": "tests/helpers.py",
                "line": 8,
                "role": "helper",
                "via": "tests/helpers.py:pay",
            },
            {"id": f"{T}:test_card_pays_the_fee", "path": T, "line": 5, "role": "test"},
            {
                "id": f"{T}:test_paying_twice",
                "path": T,
                "line": 9,
                "role": "test",
                "via": "tests/helpers.py:pay_twice",
            },
        ]
        total = await client.ask("related_tests", symbol="Charge.total")
        assert ids(total["tests"]) == [f"{T}:test_charge_total"]


async def test_stats_counts_the_index(shop: Path, tmp_path: Path) -> None:
    async with agent(shop, tmp_path) as client:
        stats = await client.ask("stats")
        assert (stats["files"], stats["entities"]) == (7, 31)
        assert stats["edges"]["inherits"] == 3 and stats["edges"]["references"] == 1
        assert stats["policy"]["name"] == "topo"
        assert stats["root"] == str(shop.resolve())
        assert stats["updated"].endswith("Z")


async def test_ambiguous_unknown_and_outside_requests_are_errors_and_serving_goes_on(
    shop: Path, tmp_path: Path
) -> None:
    async with agent(shop, tmp_path) as client:
        ambiguous = await client.refused("callers", symbol="save")
        assert isinstance(ambiguous, dict)
        assert ambiguous["candidates"] == [f"{H}:Handler.save", "shop/store.py:Store.save"]
        assert "ambiguous" in ambiguous["error"]
        short = await client.refused("callers", symbol=".save")  # a link as tags write it
        assert short["candidates"] == ambiguous["candidates"]  # type: ignore[index]
        assert (await client.ask("callers", symbol=":Charge"))["symbol"] == f"{P}:Charge"
        unknown = await client.refused("impact", symbol="Chrage")
        assert isinstance(unknown, dict)
        assert f"{P}:Charge" in unknown["nearest"]
        for path in ("../outside.py", "/etc/passwd", str(tmp_path / "elsewhere" / "x.py")):
            outside = await client.refused("outline", path=path)
            assert "outside the repository" in outside["error"]  # type: ignore[index]
        for tool, args in [
            ("callers", {"symbol": 3}),
            ("callers", {}),
            ("impact", {"symbol": "dispatch", "depth": "deep"}),
            ("callees", {"symbol": "dispatch", "depth": 0}),
            ("find_symbol", {"query": "x", "kind": "lambda"}),
            ("find_symbol", {"query": "x", "limit": -1}),
        ]:
            await client.refused(tool, **args)
        assert level_ids(await client.ask("callers", symbol="Store.save")) == [
            [f"{H}:Handler.save"]
        ]


async def test_an_edit_on_disk_is_in_the_next_answer(shop: Path, tmp_path: Path) -> None:
    async with agent(shop, tmp_path) as client:
        assert level_ids(await client.ask("callees", symbol="Store.save")) == []
        store = shop / "shop" / "store.py"
        store.write_text(
            store.read_text(encoding="utf-8").replace(
                "        self.rows.append(row)\n",
                "        self.rows.append(row)\n        audit(row)\n\n\n"
                "def audit(row: object) -> None:\n    print(row)\n",
            ),
            encoding="utf-8",
        )
        after = await client.ask("callees", symbol="Store.save")
        assert level_ids(after) == [["shop/store.py:audit"]]
        assert after["levels"][0]["items"][0]["sites"][0]["text"] == "audit(row)"
        # a new file appears
        (shop / "shop" / "fees.py").write_text(
            "from shop.payments import Charge\n\n\n"
            "def fee() -> int:\n    return Charge(1).total()\n",
            encoding="utf-8",
        )
        callers = await client.ask("callers", symbol="Charge.total")
        assert "shop/fees.py:fee" in ids(callers["levels"][0]["items"])
        # and one in a new folder, then in a folder the server has listed without Python
        (shop / "tools").mkdir()
        (shop / "tools" / "run.py").write_text(
            "from shop.handlers import dispatch\n\n\ndef main() -> None:\n    dispatch('x', 1)\n"
        )
        callers = await client.ask("callers", symbol="dispatch")
        assert "tools/run.py:main" in ids(callers["levels"][0]["items"])
        (shop / "tools" / "docs").mkdir()
        (shop / "tools" / "docs" / "notes.txt").write_text("nothing to index\n")
        await client.ask("stats")
        (shop / "tools" / "docs" / "conf.py").write_text("from tools.run import main\n\nmain()\n")
        callers = await client.ask("callers", symbol="tools/run.py:main")
        assert ids(callers["levels"][0]["items"]) == ["tools/docs/conf.py"]


async def test_a_deleted_file_disappears(shop: Path, tmp_path: Path) -> None:
    async with agent(shop, tmp_path) as client:
        assert ids((await client.ask("find_symbol", query="Store"))["matches"])
        (shop / "shop" / "store.py").unlink()
        assert (await client.ask("find_symbol", query="Store"))["matches"] == []
        gone = await client.refused("callers", symbol="Store.save")
        assert "no definition matches" in gone["error"]  # type: ignore[index]
        assert level_ids(await client.ask("callees", symbol="Handler.save")) == []
        assert (await client.ask("stats"))["files"] == 6


async def test_a_file_with_syntax_errors_is_reported_and_the_rest_answers(
    shop: Path, tmp_path: Path
) -> None:
    (shop / "shop" / "broken.py").write_text("def broken(:\n    pass\n", encoding="utf-8")
    async with agent(shop, tmp_path) as client:
        assert (await client.ask("stats"))["problems"] == {"syntax": 1}
        handlers = shop / "shop" / "handlers.py"
        handlers.write_text(handlers.read_text(encoding="utf-8") + "\ndef half(:\n", "utf-8")
        stats = await client.ask("stats")
        assert stats["problems"] == {"syntax": 2}
        assert level_ids(await client.ask("callers", symbol="Charge.total")) == [
            [f"{H}:CardHandler.handle", f"{H}:RefundHandler.handle", TOTAL_TEST]
        ]
        outline = await client.ask("outline", path="shop/handlers.py")
        assert outline["problem"].startswith("syntax:")


async def test_stats_counts_what_anchor_ls_index_counts(tmp_path: Path) -> None:
    # fixtures/example reaches definitions outside the repository (ext: entities) and has
    # overriding methods: the tool's figures are the command line's, not the graph's size.
    repo = copy_of(EXAMPLE, tmp_path)
    done = cli(repo, "index", "--json")
    assert done.returncode == 0, done.stderr
    printed = json.loads(done.stdout)
    assert printed["external_entities"] > 0 and printed["edges"]["overrides"] > 0
    async with agent(repo, tmp_path) as client:
        stats = await client.ask("stats")
    assert stats["files"] == printed["files"]
    assert stats["entities"] == printed["entities"]
    assert stats["external_entities"] == printed["external_entities"]
    assert stats["edges"] == printed["edges"]
    assert stats["problems"] == printed["problems"]


async def test_the_server_writes_nothing_into_the_repository_but_its_cache(
    shop: Path, tmp_path: Path
) -> None:
    before = sorted(p.relative_to(shop) for p in shop.rglob("*"))
    async with agent(shop, tmp_path) as client:
        for tool in ("stats", "outline", "tags"):
            args = {} if tool == "stats" else {"path": P} if tool == "outline" else {"target": P}
            await client.ask(tool, **args)
    after = sorted(p.relative_to(shop) for p in shop.rglob("*"))
    assert [p for p in after if p not in before and p.parts[0] != ".anchor-ls"] == []
    assert (shop / ".anchor-ls" / "index.sqlite3").is_file()
    assert list((tmp_path / "elsewhere").iterdir()) == []
    # closed at the end of the session: no -wal or -shm beside the cache
    assert sorted(p.name for p in (shop / ".anchor-ls").iterdir()) == [
        ".gitignore",
        "index.sqlite3",
    ]


# The CLI prints the tool's object with --json: (CLI arguments, tool, tool arguments).
CLI_TOOL = [
    (["find", "handle", "--kind", "method", "--limit", "2"], "find_symbol",
     {"query": "handle", "kind": "method", "limit": 2}),
    (["callers", "Charge", "--depth", "3"], "callers", {"symbol": "Charge", "depth": 3}),
    (["callees", "dispatch", "--limit", "2"], "callees", {"symbol": "dispatch", "limit": 2}),
    (["impact", "Handler.handle"], "impact", {"symbol": "Handler.handle"}),
    (["hierarchy", "RefundHandler"], "hierarchy", {"symbol": "RefundHandler"}),
    (["outline", P], "outline", {"path": P}),
    (["related-tests", "dispatch"], "related_tests", {"symbol": "dispatch"}),
    (["callers", "save"], "callers", {"symbol": "save"}),
]  # fmt: skip


def cli(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-P", "-m", "anchor_ls", *args[:2], str(root), *args[2:]],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=root.parent,
    )


async def test_the_cli_json_is_the_tools_object(shop: Path, tmp_path: Path) -> None:
    async with agent(shop, tmp_path) as client:
        for command, tool, args in CLI_TOOL:
            done = cli(shop, *command, "--json")
            error, answer = await client.call(tool, **args)
            assert done.returncode == (1 if error else 0), done.stderr
            assert json.loads(done.stdout) == answer, command


def test_the_cli_prints_readable_text_by_default(shop: Path) -> None:
    done = cli(shop, "callers", "Charge", "--depth", "2")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        f"{H}:CardHandler.handle [constructor]\t{H}:20: charge = Charge(amount)",
        f"{H}:RefundHandler.handle [constructor]\t{H}:26: charge = refund(Charge(amount))",
        f"{P}:refund [constructor]\t{P}:16: return Charge(-charge.amount, charge.currency)",
        f"{TOTAL_TEST} [constructor] (test)\t{T}:14: assert Charge(1).total() == 31",
        f"  {H}:dispatch [attribute]\t{H}:32: return handler.handle(amount)"
        f"\t(via {H}:CardHandler.handle)",
    ]
    impact = cli(shop, "impact", "shop/store.py")
    assert impact.stdout.splitlines()[:2] == [
        "shop/store.py: 1 affected within depth 3",
        f"  1  imports    {H}  ({H}:1)  via shop/store.py",
    ]
    ambiguous = cli(shop, "hierarchy", "handle")
    assert ambiguous.returncode == 1 and ambiguous.stdout == ""
    assert f"  {H}:Audited.handle" in ambiguous.stderr.splitlines()


def test_a_limit_of_0_gives_the_counts_without_saying_there_are_none(shop: Path) -> None:
    # "no callers of shop/payments.py:Charge" followed by "[+4 more left out...]"
    callers = cli(shop, "callers", "Charge", "--limit", "0")
    assert callers.returncode == 0, callers.stderr
    assert callers.stdout.splitlines() == ["[+4 more left out; raise --limit] 3 callers · 1 test"]
    found = cli(shop, "find", "handle", "--limit", "0")
    assert found.stdout.splitlines() == ["[+16 more left out; raise --limit]"]
    assert cli(shop, "callers", "refund").stdout.splitlines()[0] == (
        f"{H}:RefundHandler.handle [import]\t{H}:26: charge = refund(Charge(amount))"
    )
    assert cli(shop, "callers", "dispatch", "--limit", "0").stdout.splitlines()[0] == (
        "[+2 more left out; raise --limit] 1 caller · 1 test"
    )


async def test_callers_and_callees_on_the_example_are_its_hand_written_calls(
    tmp_path: Path,
) -> None:
    """Every definition of fixtures/example: the depth-1 callers (outside test code) and
    callees the server answers are expected.json's calls, up to its allowed extras."""
    repo = copy_of(EXAMPLE, tmp_path)
    expected = json.loads((EXAMPLE / "expected.json").read_text(encoding="utf-8"))
    calls = {tuple(c) for c in expected["calls"]}
    allowed = {(src, dst) for kind, src, dst in expected["allowed"] if kind == "calls"}
    targets = sorted({end for edge in calls for end in edge})

    async def called(tool: str, target: str) -> set[str]:
        """The repository's callers or callees (calls into libraries are `external`)."""
        answer = await client.ask(tool, symbol=target)
        (level,) = answer["levels"] or [{"items": []}]
        items = [item for item in level["items"] if item["relation"] == "call"]
        assert all(bool(item.get("external")) == item["id"].startswith("ext:") for item in items)
        return {item["id"] for item in items if not item.get("external")}

    async with agent(repo, tmp_path) as client:
        for target in targets:
            got_in = await called("callers", target)
            want_in = {s for s, d in calls if d == target}
            extra_in = {s for s, d in allowed if d == target}
            assert want_in <= got_in <= want_in | extra_in, target
            got_out = await called("callees", target)
            want_out = {d for s, d in calls if s == target}
            extra_out = {d for s, d in allowed if s == target}
            assert want_out <= got_out <= want_out | extra_out, target


async def test_a_folder_without_python_files_gets_a_warning_and_no_cache_folder(
    tmp_path: Path,
) -> None:
    # the server made .anchor-ls (and a cache key in the user cache) where the CLI warns
    # and writes nothing
    root = tmp_path / "notes"
    root.mkdir()
    (root / "README.txt").write_text("no code here\n")
    user_cache = tmp_path / "user-cache"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    params = StdioServerParameters(
        command=sys.executable,
        args=["-P", "-m", "anchor_ls", "mcp", str(root)],
        cwd=elsewhere,
        env={**os.environ, "XDG_CACHE_HOME": str(user_cache)},
    )
    with open(tmp_path / "stderr.txt", "w") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            client = Agent(session)
            assert (await client.ask("stats"))["files"] == 0
            # a file an agent writes later is still found (indexed, not cached)
            (root / "first.py").write_text("def first():\n    pass\n")
            found = await client.ask("find_symbol", query="first")
            assert "first.py:first" in ids(found["matches"])
    said = (tmp_path / "stderr.txt").read_text()
    assert f"anchor-ls: warning: {root}: no Python files here" in said
    assert sorted(p.name for p in root.iterdir()) == ["README.txt", "first.py"]
    assert not user_cache.exists()
