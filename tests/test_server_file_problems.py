"""An open file the index cannot read, or reads with replacements, is explained to the
user: once, not at every keystroke, and never by silence."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.lsp import Editor, copy_example, hint_on, label_text, shared_session

from anchor_ls.syntax.source import MAX_FILE_BYTES

pytestmark = pytest.mark.asyncio(loop_scope="module")

COOKIE = (
    b"# -*- coding: no-such-codec -*-\n"
    b"def odd():\n    return 1\n\n\ndef even():\n    return odd()\n"
)
UNDECODABLE = b'def bad():\n    return "\xff"\n'


def problem_repo(base: Path) -> Path:
    root = copy_example(base)
    (root / "pkg" / "cookie.py").write_bytes(COOKIE)
    (root / "pkg" / "undecodable.py").write_bytes(UNDECODABLE)
    (root / "pkg" / "big.py").write_text("def big():\n    return 1\n", encoding="utf-8")
    return root


session, ed = shared_session(problem_repo)


def shown(ed: Editor, needle: str) -> list[str]:
    return [m.message for m in ed.client.messages if needle in m.message]  # type: ignore[attr-defined]


def logged(ed: Editor, needle: str) -> list[str]:
    return [m.message for m in ed.client.log_messages if needle in m.message]  # type: ignore[attr-defined]


async def test_a_bogus_coding_cookie_is_a_decode_problem_like_undecodable_bytes(
    ed: Editor,
) -> None:
    stats = await ed.command("anchor.stats")
    assert stats["folders"][0]["stats"]["problems"] == {"decode": 2}, stats
    ed.open("pkg/cookie.py")

    async def told() -> list[str]:
        await ed.hints("pkg/cookie.py")
        return logged(ed, "anchor-ls: pkg/cookie.py: unknown encoding 'no-such-codec'")

    assert await ed.until(told, "a log message about pkg/cookie.py")
    ed.change(ed.uri("pkg/cookie.py"), COOKIE.decode() + "x = 1\n")
    await ed.hints("pkg/cookie.py")
    assert len(logged(ed, "pkg/cookie.py")) == 1
    # The file is still indexed, read as UTF-8.
    hint = hint_on(await ed.hints("pkg/cookie.py"), 1)
    assert hint is not None and "even" in label_text(hint)
    assert not shown(ed, "cookie.py")


async def test_a_buffer_over_the_size_limit_says_why_it_has_no_hints_once(ed: Editor) -> None:
    doc = ed.open("pkg/big.py")
    filler = "# " + "x" * 98 + "\n"
    text = ed.text("pkg/big.py") + filler * (MAX_FILE_BYTES // len(filler) + 1)
    ed.change(doc, text)
    assert await ed.hints("pkg/big.py") == []
    ed.change(doc, text + "x = 1\n")
    assert await ed.hints("pkg/big.py") == []
    told = shown(ed, "no hints for pkg/big.py")
    assert len(told) == 1, ed.client.messages  # type: ignore[attr-defined]
    assert f"over the {MAX_FILE_BYTES}-byte limit" in told[0]
    # Back under the limit: hints again, and going over again is told again.
    ed.change(doc, "def big():\n    return 1\n")
    await ed.hints("pkg/big.py")
    ed.change(doc, text)
    assert await ed.hints("pkg/big.py") == []
    assert len(shown(ed, "no hints for pkg/big.py")) == 2
