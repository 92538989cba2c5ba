"""The index follows the editor and the disk: unsaved buffers, closes, watched-file events.

Each test has its own server and its own copy of fixtures/example (or a generated
repository). The server keeps every file's hints once computed, and computes them ahead
of requests: what the client sees of them must follow every change, and a request made
during the first build must wait for it rather than answer empty.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from lsprotocol import types
from pytest_lsp import LanguageClient
from support.lsp import (
    Editor,
    copy_example,
    editor_capabilities,
    example_session,
    hint_on,
    label_text,
    line_of,
    lsp,
    start,
    uri,
    write_files,
)

__all__ = ["lsp"]

NEW_CALLER = "\n\ndef audit_price(sku: str) -> float:\n    return price_of(sku)\n"


def notify_disk(client: LanguageClient, changes: list[tuple[str, types.FileChangeType]]) -> None:
    client.workspace_did_change_watched_files(
        types.DidChangeWatchedFilesParams(
            changes=[types.FileEvent(uri=u, type=t) for u, t in changes]
        )
    )


async def price_of_hint(ed: Any) -> str:
    text = ed.text("pkg/pricing.py")
    hint = hint_on(await ed.hints("pkg/pricing.py"), line_of(text, "def price_of("))
    return label_text(hint) if hint is not None else ""


async def test_unsaved_edit_changes_hints_in_another_open_file(
    lsp: LanguageClient, tmp_path: Path
) -> None:
    ed = await example_session(lsp, tmp_path)
    ed.open("pkg/pricing.py")
    service = ed.open("pkg/service.py")
    on_disk = ed.path("pkg/service.py").read_bytes()
    assert "audit_price" not in await price_of_hint(ed)

    ed.change(service, ed.text("pkg/service.py") + NEW_CALLER)

    async def shows_new_caller() -> bool:
        return "audit_price" in await price_of_hint(ed)

    await ed.until(shows_new_caller, "the unsaved caller in pricing.py's hints")
    if ed.client.capabilities.workspace.inlay_hint is not None:  # type: ignore[union-attr]
        assert "inlayHint" in ed.refreshes
    else:
        assert "inlayHint" not in ed.refreshes
    assert ed.path("pkg/service.py").read_bytes() == on_disk, "the server wrote a file"

    # Closing without saving throws the buffer away: the disk is the truth again.
    ed.close("pkg/service.py")

    async def forgot_caller() -> bool:
        return "audit_price" not in await price_of_hint(ed)

    await ed.until(forgot_caller, "the caller to go when the buffer is closed unsaved")


async def test_hints_of_the_edited_file_follow_its_buffer(
    lsp: LanguageClient, tmp_path: Path
) -> None:
    ed = await example_session(lsp, tmp_path)
    uri = ed.open("pkg/service.py")
    # Two blank lines above checkout move it down; the first request after the change
    # already answers for the new text (it waits for the debounced re-index).
    ed.change(uri, "\n\n" + ed.text("pkg/service.py"))
    text = ed.text("pkg/service.py")
    hints = await ed.hints("pkg/service.py")
    hint = hint_on(hints, line_of(text, "def checkout("))
    assert hint is not None and "quick_checkout" in label_text(hint)


async def test_files_changed_and_deleted_on_disk(lsp: LanguageClient, tmp_path: Path) -> None:
    ed = await example_session(lsp, tmp_path)
    root = ed.root
    # Watchers are registered where the client can take a registration.
    caps = ed.client.capabilities.workspace.did_change_watched_files  # type: ignore[union-attr]
    watched = [r for r in ed.registrations if r.method == types.WORKSPACE_DID_CHANGE_WATCHED_FILES]
    if caps is not None and caps.dynamic_registration:
        (registration,) = watched
        options: Any = registration.register_options
        assert "**/*.py" in [w["globPattern"] for w in options["watchers"]]
    else:
        assert watched == []

    extra = ed.path("pkg/extra.py")
    extra.write_text("from .pricing import price_of\n" + NEW_CALLER, encoding="utf-8")
    notify_disk(lsp, [(ed.uri("pkg/extra.py"), types.FileChangeType.Created)])

    async def shows(name: str) -> bool:
        return name in await price_of_hint(ed)

    await ed.until(lambda: shows("audit_price"), "a caller in a file created on disk")

    extra.unlink()
    notify_disk(lsp, [(ed.uri("pkg/extra.py"), types.FileChangeType.Deleted)])

    async def gone() -> bool:
        return "audit_price" not in await price_of_hint(ed)

    await ed.until(gone, "the caller to go with its deleted file")
    assert await ed.hints("pkg/extra.py") == []
    assert (
        await ed.client.text_document_prepare_call_hierarchy_async(
            types.CallHierarchyPrepareParams(
                types.TextDocumentIdentifier(ed.uri("pkg/extra.py")), types.Position(3, 5)
            )
        )
        is None
    )

    # A deleted folder arrives as one event for the folder (a `git checkout`, `rm -r`).
    assert "größe" in await checkout_hint(ed)
    shutil.rmtree(ed.path("pkg"))
    notify_disk(lsp, [(ed.uri("pkg"), types.FileChangeType.Deleted)])

    async def folder_gone() -> bool:
        return await ed.hints("pkg/unicode.py") == []

    await ed.until(folder_gone, "files in a deleted folder to go")
    stats = await ed.command("anchor.stats")
    assert stats["folders"][0]["stats"]["files"] == len(list(root.rglob("*.py")))


async def test_many_files_changed_on_disk_at_once_are_read_together(
    lsp: LanguageClient, tmp_path: Path
) -> None:
    """A checkout writes many files at once: they are read together and every file is
    resolved once, as a build does (one update each resolved their dependents again:
    205 s for the 38 files of Django 5.1 -> 5.1.1, against 35 s), and the graph follows.
    An event told again for a file as indexed (the server's own watch and the client's
    both tell) does not count."""
    ed = await example_session(lsp, tmp_path)
    names = [f"pkg/extra_{i}.py" for i in range(6)]
    for i, rel in enumerate(names):
        text = "from .pricing import price_of\n" + NEW_CALLER.replace("audit_price", f"audit_{i}")
        ed.path(rel).write_text(text, encoding="utf-8")
    notify_disk(lsp, [(ed.uri(rel), types.FileChangeType.Created) for rel in names])

    async def indexed() -> bool:
        stats = (await ed.command("anchor.stats"))["folders"][0]["stats"]
        return stats["files"] == len(list(ed.root.rglob("*.py")))

    await ed.until(indexed, "six files created at once")
    stats = (await ed.command("anchor.stats"))["folders"][0]["stats"]
    assert stats["resolved_afresh"] == 1
    notify_disk(lsp, [(ed.uri(rel), types.FileChangeType.Changed) for rel in names])
    ed.path("pkg/extra_7.py").write_text("def seventh():\n    pass\n", encoding="utf-8")
    notify_disk(lsp, [(ed.uri("pkg/extra_7.py"), types.FileChangeType.Created)])
    await ed.until(indexed, "a file created after the events told again")  # in their order
    items = await ed.client.text_document_prepare_call_hierarchy_async(
        types.CallHierarchyPrepareParams(
            types.TextDocumentIdentifier(ed.uri("pkg/pricing.py")),
            types.Position(line_of(ed.text("pkg/pricing.py"), "def price_of("), 4),
        )
    )
    assert items
    incoming = await ed.client.call_hierarchy_incoming_calls_async(
        types.CallHierarchyIncomingCallsParams(items[0])
    )
    callers = {call.from_.name for call in incoming or []}
    assert {f"audit_{i}" for i in range(6)} <= callers
    stats = (await ed.command("anchor.stats"))["folders"][0]["stats"]
    assert stats["resolved_afresh"] == 1


async def checkout_hint(ed: Any) -> str:
    text = ed.text("pkg/service.py")
    hint = hint_on(await ed.hints("pkg/service.py"), line_of(text, "def checkout("))
    return label_text(hint) if hint is not None else ""


# A repository that takes the index a few seconds: generated modules calling each other.
MODULES, FUNCTIONS = 60, 100
SMALL = "app/small.py"
SMALL_TEXT = "def target(x):\n    return x\n\n\ndef caller():\n    return target(1)\n"


def generated() -> dict[str, str]:
    files = {"gen/__init__.py": "", "app/__init__.py": "", SMALL: SMALL_TEXT}
    for i in range(MODULES):
        lines = [f"from gen.mod_{max(i - 1, 0)} import f0 as prev\n\n"]
        for j in range(FUNCTIONS):
            lines.append(
                f"def f{j}(x):\n    y = prev(x) if x else f{(j + 1) % FUNCTIONS}(x)\n"
                f"    return helper(y)\n\n\n"
            )
        lines.append("def helper(v):\n    return v\n")
        files[f"gen/mod_{i}.py"] = "".join(lines)
    return files


async def folder_state(ed: Any) -> str:
    stats = await ed.command("anchor.stats")
    return str(stats["folders"][0]["state"])


async def test_hints_asked_during_the_first_build_wait_for_it(
    lsp: LanguageClient, tmp_path: Path
) -> None:
    """Before the build ends there is no graph to answer from: a hint request waits for
    it (commands such as anchor.stats do not) and answers with the complete hints."""
    root = tmp_path / "repo"
    write_files(root, generated())
    ed = await start(lsp, root, lsp.profile)  # type: ignore[attr-defined]
    ed.open(SMALL)
    while (state := await folder_state(ed)) == "pending":
        pass
    assert state == "indexing", "the build ended before a request could be made during it"
    hint = hint_on(await ed.hints(SMALL), line_of(SMALL_TEXT, "def target("))
    assert hint is not None and label_text(hint) == "← caller"
    assert await folder_state(ed) == "ready"


async def test_a_hint_follows_the_lines_of_the_file_it_links_to(
    lsp: LanguageClient, tmp_path: Path
) -> None:
    ed = await example_session(lsp, tmp_path)
    ed.open("pkg/pricing.py")
    line = line_of(ed.text("pkg/pricing.py"), "def price_of(")

    async def checkout_link() -> types.Location | None:
        hint = await ed.linked_hint("pkg/pricing.py", line)
        assert hint is not None and not isinstance(hint.label, str)
        (part,) = [p for p in hint.label if p.value == "checkout"]
        return part.location

    before = await checkout_link()
    assert before is not None and before.uri == ed.uri("pkg/service.py")
    assert before.range.start.line == line_of(ed.text("pkg/service.py"), "def checkout(")

    # Lines added above checkout: no call changes, but the link must move with it.
    service = ed.open("pkg/service.py")
    ed.change(service, "\n\n\n" + ed.text("pkg/service.py"))
    moved = line_of(ed.text("pkg/service.py"), "def checkout(")

    async def link_moved() -> bool:
        link = await checkout_link()
        return link is not None and link.range.start.line == moved

    await ed.until(link_moved, "the link into service.py to follow its new lines")


async def test_hierarchies_asked_right_after_an_edit_answer_for_the_buffer(
    lsp: LanguageClient, tmp_path: Path
) -> None:
    """Call and type hierarchy read the request's position in the buffer the user sees:
    asked before the debounced re-index ran, they found nothing (or the definition that
    stood on that line before the edit)."""
    ed = await example_session(lsp, tmp_path)
    uri = ed.open("pkg/pricing.py")
    ed.change(uri, "\n\n\n\n" + ed.text("pkg/pricing.py"))
    text = ed.text("pkg/pricing.py")
    at = types.Position(line_of(text, "def bulk_discount("), len("def bulk"))
    items = await lsp.text_document_prepare_call_hierarchy_async(
        types.CallHierarchyPrepareParams(types.TextDocumentIdentifier(uri), at)
    )
    assert items is not None and [i.detail for i in items] == ["pkg/pricing.py:bulk_discount"]
    assert items[0].selection_range.start.line == at.line

    models = ed.open("pkg/models.py")
    ed.change(models, "\n\n" + ed.text("pkg/models.py"))
    text = ed.text("pkg/models.py")
    at = types.Position(line_of(text, "class OrderError("), len("class Ord"))
    found = await lsp.text_document_prepare_type_hierarchy_async(
        types.TypeHierarchyPrepareParams(types.TextDocumentIdentifier(models), at)
    )
    assert found is not None and [i.detail for i in found] == ["pkg/models.py:OrderError"]
    assert found[0].selection_range.start.line == at.line

    # A related request names an item of a buffer edited since: its sites are the buffer's.
    ed.change(uri, "\n" + ed.text("pkg/pricing.py"))
    text = ed.text("pkg/pricing.py")
    (item,) = items
    outgoing = await lsp.call_hierarchy_outgoing_calls_async(
        types.CallHierarchyOutgoingCallsParams(item)
    )
    assert outgoing is not None
    (call,) = [c for c in outgoing if c.to.name == "no_discount"]
    assert [r.start.line for r in call.from_ranges] == [line_of(text, "return no_discount(")]


async def test_files_a_build_leaves_out_stay_out_when_opened_or_created(
    lsp: LanguageClient, tmp_path: Path
) -> None:
    """Go to definition into the workspace's .venv opens a library file; a venv made in
    the tree, or a folder the exclude setting names, gets files created: none of them is
    repository code, and a build lists none, so neither do edits and watched events."""
    root = copy_example(tmp_path)
    caller = "from pkg.pricing import price_of\n\n\ndef {}(sku):\n    return price_of(sku)\n"
    outside = {
        ".venv/lib/python3.12/site-packages/extlib/api.py": caller.format("in_dot_venv"),
        "env/lib/shop.py": caller.format("in_a_venv"),
        "build/lib/pkg/copy.py": caller.format("in_excluded"),
    }
    write_files(root, {".venv/pyvenv.cfg": "home = /usr/bin\n", "env/pyvenv.cfg": ""})
    ed = await start(lsp, root, lsp.profile, options={"exclude": ["build"]})  # type: ignore[attr-defined]
    stats = await ed.ready()
    files = stats["folders"][0]["stats"]["files"]
    alone = await price_of_hint(ed)

    write_files(root, outside)
    for rel in outside:
        ed.open(rel)
    notify_disk(lsp, [(ed.uri(rel), types.FileChangeType.Created) for rel in outside])
    ed.change(ed.uri("env/lib/shop.py"), ed.text("env/lib/shop.py") + "\n")
    uri = ed.open("pkg/service.py")  # a change that is indexed, after those above
    ed.change(uri, ed.text("pkg/service.py") + NEW_CALLER)
    await ed.until(lambda: shows_caller(ed, "audit_price"), "the caller typed in service.py")

    assert await price_of_hint(ed) == alone.replace("checkout", "checkout, audit_price")
    assert (await ed.command("anchor.stats"))["folders"][0]["stats"]["files"] == files
    for rel in outside:
        assert await ed.hints(rel) == []


async def shows_caller(ed: Any, name: str) -> bool:
    return name in await price_of_hint(ed)


async def test_a_folder_moved_in_the_tree_is_indexed_where_it_lands(
    lsp: LanguageClient, tmp_path: Path
) -> None:
    """A folder renamed (or copied in, or brought by a `git checkout`) arrives as one event
    for the folder: its files were indexed nowhere and their callers lost them."""
    ed = await example_session(lsp, tmp_path)
    caps = ed.client.capabilities.workspace.did_change_watched_files  # type: ignore[union-attr]
    if caps is not None and caps.dynamic_registration:
        (registration,) = [
            r for r in ed.registrations if r.method == types.WORKSPACE_DID_CHANGE_WATCHED_FILES
        ]
        options: Any = registration.register_options
        kinds = {w["globPattern"]: w.get("kind", 7) for w in options["watchers"]}
        assert kinds["**/*"] & types.WatchKind.Create and kinds["**/*"] & types.WatchKind.Delete
    files = (await ed.command("anchor.stats"))["folders"][0]["stats"]["files"]
    lib = "\n\ndef audit(sku):\n    return price_of(sku)\n"
    write_files(
        ed.root,
        {"lib/__init__.py": "", "lib/audit.py": "from pkg.pricing import price_of\n" + lib},
    )
    notify_disk(lsp, [(ed.uri("lib"), types.FileChangeType.Created)])
    await ed.until(lambda: shows_caller(ed, "audit"), "the caller in a folder created")

    opened = ed.open("lib/audit.py")  # an open buffer is what the user sees: kept
    ed.change(opened, ed.text("lib/audit.py").replace("def audit(", "def audit_open("))
    await ed.until(lambda: shows_caller(ed, "audit_open"), "the caller typed in the buffer")
    shutil.copytree(ed.path("lib"), ed.path("tools"))
    (ed.path("tools") / "audit.py").write_text(
        "from pkg.pricing import price_of\n"
        + lib.replace("audit", "tool_audit")
        + '\n\ndef run():\n    return tool_audit("apple")\n',
        encoding="utf-8",
    )
    notify_disk(lsp, [(ed.uri("tools"), types.FileChangeType.Created)])
    await ed.until(lambda: shows_caller(ed, "tool_audit"), "the caller in a folder copied in")
    assert "audit_open" in await price_of_hint(ed)

    ed.close("lib/audit.py")
    shutil.move(ed.path("tools"), ed.path("pkg/tools"))
    notify_disk(
        lsp,
        [
            (ed.uri("tools"), types.FileChangeType.Deleted),
            (ed.uri("pkg/tools"), types.FileChangeType.Created),
        ],
    )
    await ed.until(lambda: ed.hints("pkg/tools/audit.py"), "hints where the folder was moved")
    hint = await ed.linked_hint(
        "pkg/pricing.py", line_of(ed.text("pkg/pricing.py"), "def price_of(")
    )
    assert hint is not None and not isinstance(hint.label, str)
    where = [p.location.uri for p in hint.label if p.value == "tool_audit" and p.location]
    assert where == [ed.uri("pkg/tools/audit.py")]
    stats = await ed.command("anchor.stats")
    assert stats["folders"][0]["stats"]["files"] == files + 4


async def test_a_file_of_nested_workspace_folders_changes_in_both_indexes(
    lsp: LanguageClient, tmp_path: Path
) -> None:
    """A workspace of a repository and one of its projects: both index lib/core.py, and
    an edit of it (typed, thrown away, or made on disk) changed the inner index alone, so
    the outer one's hints kept the callers of before."""
    root = tmp_path / "mono"
    write_files(
        root,
        {
            "pyproject.toml": "",
            "app.py": "def total():\n    return 1\n",
            "lib/pyproject.toml": "",
            "lib/core.py": "import app\n\n\ndef one():\n    return app.total()\n",
        },
    )
    ed = Editor(lsp, root, lsp.profile)  # type: ignore[attr-defined]
    await lsp.initialize_session(
        types.InitializeParams(
            capabilities=editor_capabilities(lsp.profile),  # type: ignore[attr-defined]
            root_uri=uri(root),
            workspace_folders=[
                types.WorkspaceFolder(uri(root), "mono"),
                types.WorkspaceFolder(uri(root / "lib"), "lib"),
            ],
        )
    )
    assert len((await ed.ready())["folders"]) == 2
    ed.open("app.py")

    async def callers_of_total() -> str:
        hint = hint_on(await ed.hints("app.py"), 0)
        return label_text(hint) if hint is not None else ""

    assert await callers_of_total() == "← one"
    two = "\n\ndef two():\n    return app.total()\n"
    core = ed.open("lib/core.py")
    ed.change(core, ed.text("lib/core.py") + two)
    await ed.until(lambda: _is(callers_of_total, "← one, two"), "the caller typed in lib")
    ed.close("lib/core.py")
    await ed.until(lambda: _is(callers_of_total, "← one"), "the buffer thrown away")
    ed.path("lib/core.py").write_text(
        ed.path("lib/core.py").read_text() + two.replace("two", "three")
    )
    notify_disk(lsp, [(ed.uri("lib/core.py"), types.FileChangeType.Changed)])
    await ed.until(lambda: _is(callers_of_total, "← one, three"), "the caller saved on disk")


async def _is(probe: Any, expected: str) -> bool:
    return await probe() == expected


async def test_a_client_that_cannot_watch_files_still_sees_the_disk_change(
    lsp: LanguageClient, tmp_path: Path
) -> None:
    """Neovim on Linux registers no file watchers: the server watches the tree itself, so
    a file written, changed or deleted by another program (git, a formatter, an agent), and
    a folder moved in or removed, reach the hints with no event from the client."""

    def no_watchers(caps: types.ClientCapabilities) -> None:
        assert caps.workspace is not None
        caps.workspace.did_change_watched_files = None

    ed = await start(lsp, copy_example(tmp_path), lsp.profile, drop=no_watchers)  # type: ignore[attr-defined]
    await ed.ready()
    assert not [r for r in ed.registrations if r.method == types.WORKSPACE_DID_CHANGE_WATCHED_FILES]

    async def shows(name: str) -> bool:
        return name in await price_of_hint(ed)

    async def lacks(name: str) -> bool:
        return name not in await price_of_hint(ed)

    extra = ed.path("pkg/extra.py")
    extra.write_text("from .pricing import price_of\n" + NEW_CALLER, encoding="utf-8")
    await ed.until(lambda: shows("audit_price"), "a caller in a file written on disk")
    extra.write_text(
        "from .pricing import price_of\n" + NEW_CALLER.replace("audit_price", "recheck"),
        encoding="utf-8",
    )
    await ed.until(lambda: shows("recheck"), "the caller renamed in the file on disk")
    assert await lacks("audit_price")
    extra.unlink()
    await ed.until(lambda: lacks("recheck"), "the caller to go with its deleted file")

    # A folder moved in is one event for the folder; its files are indexed where it lands.
    outside = tmp_path / "moved"
    outside.mkdir()
    (outside / "__init__.py").write_text("", encoding="utf-8")
    (outside / "audit.py").write_text(
        "from pkg.pricing import price_of\n\n\ndef yearly(sku):\n    return price_of(sku)\n",
        encoding="utf-8",
    )
    outside.rename(ed.path("reports"))
    await ed.until(lambda: shows("yearly"), "a caller in a folder moved into the tree")
    (ed.path("reports") / "audit.py").write_text(
        "from pkg.pricing import price_of\n\n\ndef monthly(sku):\n    return price_of(sku)\n",
        encoding="utf-8",
    )
    await ed.until(lambda: shows("monthly"), "a file changed in the folder moved in")
    shutil.rmtree(ed.path("reports"))
    await ed.until(lambda: lacks("monthly"), "the caller to go with its deleted folder")

    # An open buffer stays what the user sees, whatever the disk says.
    service = ed.open("pkg/service.py")
    ed.change(service, ed.text("pkg/service.py") + NEW_CALLER)
    await ed.until(lambda: shows("audit_price"), "the unsaved caller")
    ed.path("pkg/service.py").write_text("", encoding="utf-8")
    later = NEW_CALLER.replace("audit_price", "touched")
    ed.path("pkg/touch.py").write_text("from .pricing import price_of\n" + later, "utf-8")
    await ed.until(lambda: shows("touched"), "a file written after the open one's disk change")
    assert await shows("audit_price"), "the disk overrode the open buffer"


async def test_a_pyproject_that_states_a_new_root_moves_the_imports(
    lsp: LanguageClient, tmp_path: Path
) -> None:
    """pytest's pythonpath written into pyproject.toml makes lib/ a source root: the server
    took events of Python files alone, and `from helpers import h` stayed unresolved until
    a reindex. The client's event and, where it cannot watch files, the server's own watch
    both bring it."""
    root = tmp_path / "proj"
    write_files(
        root,
        {
            "pyproject.toml": '[project]\nname = "proj"\n',
            "lib/helpers.py": "def h():\n    return 1\n",
            "app.py": "from helpers import h\n\n\ndef run():\n    return h()\n",
        },
    )
    ed = await start(lsp, root, lsp.profile)  # type: ignore[attr-defined]
    await ed.ready()

    async def h_hint() -> str:
        text = ed.text("lib/helpers.py")
        hint = hint_on(await ed.hints("lib/helpers.py"), line_of(text, "def h("))
        return label_text(hint) if hint is not None else ""

    assert "run" not in await h_hint()
    ed.path("pyproject.toml").write_text(
        '[project]\nname = "proj"\n\n[tool.pytest.ini_options]\npythonpath = ["lib"]\n',
        encoding="utf-8",
    )
    notify_disk(lsp, [(ed.uri("pyproject.toml"), types.FileChangeType.Changed)])

    async def linked() -> bool:
        return "run" in await h_hint()

    await ed.until(linked, "the caller through the root pyproject.toml states")
