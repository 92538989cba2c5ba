"""The real server over stdio ranks capped hints and lenses as tags do, and its counts add
up: `7 callers · 3 tests`, and the tooltip says what the label leaves out."""

from __future__ import annotations

from pathlib import Path

from lsprotocol import types
from pytest_lsp import LanguageClient
from support.lsp import hint_on, label_text, lsp, start
from support.ranked_repo import DEMO, MAX_ITEMS, PRODUCTION, TESTS, write_repo

__all__ = ["lsp"]

OPTIONS = {"anchorLs": {"maxItems": MAX_ITEMS, "policy": "topo"}}
CALLERS = len(PRODUCTION) + len(DEMO)


async def test_hints_and_lenses_rank_and_count_test_callers_apart(
    lsp: LanguageClient, tmp_path: Path
) -> None:
    root = write_repo(tmp_path / "repo")
    ed = await start(lsp, root, lsp.profile, options=OPTIONS)  # type: ignore[attr-defined]
    await ed.ready()
    ed.open("lib/core.py")

    hint = hint_on(await ed.hints("lib/core.py"), 0)
    assert hint is not None
    kept = ", ".join(i.rpartition(":")[2] for i in PRODUCTION[:MAX_ITEMS])
    more = CALLERS - MAX_ITEMS
    assert label_text(hint) == f"← {kept} [+{more} more · {len(TESTS)} tests]"
    if hint.tooltip is None:
        hint = await lsp.inlay_hint_resolve_async(hint)
    tooltip = hint.tooltip if isinstance(hint.tooltip, str) else hint.tooltip.value  # type: ignore[union-attr]
    # each item: "- `id` (via how)"; the via is the provenance tests' business
    listed = [line[3:].split("`")[0] for line in tooltip.splitlines() if line.startswith("- `")]
    assert listed == PRODUCTION + DEMO
    assert f"**CALLED_BY** ({CALLERS} · {len(TESTS)} tests)" in tooltip
    assert (
        f"_+{len(TESTS)} test callers not shown; {more} more callers cut at maxItems "
        f"({MAX_ITEMS})_" in tooltip
    )

    lenses = await lsp.text_document_code_lens_async(
        types.CodeLensParams(types.TextDocumentIdentifier(ed.uri("lib/core.py")))
    )
    titles = []
    for lens in lenses or []:
        if lens.range.start.line == 0:
            resolved = await lsp.code_lens_resolve_async(lens)
            assert resolved.command is not None
            titles.append(resolved.command.title)
            if resolved.command.title.endswith("tests"):
                _uri, _position, locations = resolved.command.arguments  # type: ignore[misc]
                # what the title counts, tests last: the click adds up as the title does
                assert len(locations) == CALLERS + len(TESTS)
                assert {loc["uri"] for loc in locations[CALLERS:]} == {ed.uri("tests/test_core.py")}
    assert titles == [f"{CALLERS} callers · {len(TESTS)} tests"]


async def test_a_change_to_a_cut_callers_file_reranks_the_kept_hint(
    lsp: LanguageClient, tmp_path: Path
) -> None:
    """Dropping lib/aaa_demo.py's `__main__` guard makes its code production: `inner` (one
    caller) now ranks before `omega` (one caller, a later id) though neither file the label
    showed changed."""
    root = write_repo(tmp_path / "repo")
    ed = await start(lsp, root, lsp.profile, options=OPTIONS)  # type: ignore[attr-defined]
    await ed.ready()
    ed.open("lib/core.py")
    before = hint_on(await ed.hints("lib/core.py"), 0)
    assert before is not None and label_text(before).startswith("← zeta, omega, alpha [")
    demo = ed.open("lib/aaa_demo.py")
    text = ed.text("lib/aaa_demo.py")
    ed.change(demo, text.replace('if __name__ == "__main__":\n', "if True:\n"))

    async def reranked() -> bool:
        hint = hint_on(await ed.hints("lib/core.py"), 0)
        return hint is not None and label_text(hint).startswith("← zeta, inner, omega [")

    await ed.until(reranked, "the hint ranks inner, now production, before omega")
