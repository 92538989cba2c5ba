"""workspace/executeCommand: materialize, strip, export, reindex, stats.

Materialize and strip never write a file: they send workspace/applyEdit, with
each open document's version so that the editor refuses an edit computed
against text it no longer has.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams
from pygls.uris import from_fs_path, to_fs_path

from anchor_ls.server.edits import FileEdit, text_edits, workspace_edit
from anchor_ls.server.folders import READY, Folder
from anchor_ls.server.progress import WorkProgress
from anchor_ls.server.server import AnchorServer
from anchor_ls.syntax.encoding import (
    BOM,
    buffer_bytes,
    buffer_text,
    declared_encoding,
    written_codec,
)
from anchor_ls.tags import apply as tag_apply
from anchor_ls.tags import text as tag_text
from anchor_ls.tags.policy import ResolvedPolicy

MATERIALIZE = "anchor.materialize"
STRIP = "anchor.strip"
EXPORT = "anchor.export"
REINDEX = "anchor.reindex"
STATS = "anchor.stats"
STATS_WAIT = 0.05  # seconds a stats request waits for a busy indexer
_LINE_BREAK = re.compile("\r\n|\r|\n")


def _one_object(args: tuple[Any, ...], command: str, usage: str) -> dict[str, Any]:
    """The single object argument every command takes ([] or [null] mean {})."""
    if not args or args == (None,):
        return {}
    if len(args) != 1 or not isinstance(args[0], dict):
        raise JsonRpcInvalidParams(message=f"{command} takes one object argument: {usage}")
    return args[0]


# ----- materialize / strip ---------------------------------------------
@dataclass(frozen=True, slots=True)
class Target:
    folder: Folder
    relpath: str
    uri: str
    buffer: str | None  # the open document's text, or None for a closed file
    version: int | None


def _targets(ls: AnchorServer, arg: dict[str, Any], command: str) -> list[Target]:
    uri = arg.get("uri")
    if uri is None:
        pairs = []
        for folder in ls.folders:
            graph = folder.graph
            if graph is None:
                continue
            files = graph.files()
            pairs.extend((folder, rel, from_fs_path(str(folder.root / rel)) or "") for rel in files)
    else:
        if not isinstance(uri, str):
            raise JsonRpcInvalidParams(message=f"{command}: 'uri' must be a string")
        where = ls.locate(uri)
        if where is None:
            raise JsonRpcInvalidParams(
                message=f"{command}: {uri} is not a Python file in an open workspace folder"
            )
        pairs = [(where[0], where[1], uri)]
    # The editor may spell an open document's URI differently (escapes, drive letters).
    opened_by_path = {
        Path(path).resolve(): uri
        for uri in ls.workspace.text_documents
        if (path := to_fs_path(uri)) is not None
    }
    targets = []
    for folder, relpath, file_uri in pairs:
        doc_uri = opened_by_path.get(folder.root / relpath, file_uri)
        opened = ls.open_text(doc_uri)
        text, version = opened if opened is not None else (None, None)
        targets.append(Target(folder, relpath, doc_uri, text, version))
    return targets


def _transform(
    targets: list[Target], strip: bool, encoding: str, progress: WorkProgress
) -> tuple[list[FileEdit], list[str]]:
    """Indexer thread: the edits for every target whose text would change, and skipped files."""
    edits: list[FileEdit] = []
    skipped: list[str] = []
    for done, t in enumerate(targets, 1):
        progress.report(done, len(targets), f"{done}/{len(targets)} files · {t.relpath}")
        if t.buffer is not None:
            old_text = t.buffer
            try:
                data = buffer_bytes(old_text)
            except UnicodeEncodeError as err:  # the file could not be saved as it is either
                skipped.append(f"{t.relpath}: {_unwritable(old_text, err)}")
                continue
            enc = written_codec(declared_encoding(data))
        else:
            try:
                data = (t.folder.root / t.relpath).read_bytes()
            except OSError as exc:
                skipped.append(f"{t.relpath}: {exc.strerror or exc}")
                continue
            index = t.folder.index
            if not strip and index is not None and index.source(t.relpath) != data:
                t.folder.reload(t.relpath)
            # The text an editor shows: a BOM hidden, never the first bytes of a file that
            # has none (a `coding: utf-8-sig` cookie without a BOM is plain UTF-8).
            enc = written_codec(declared_encoding(data))
            old_text = data.decode(declared_encoding(data), errors="replace")
            if data.startswith(BOM):
                data = data[len(BOM) :]
        try:
            new, problems = _apply(t.folder, t.relpath, data, strip)
        except Exception as exc:  # one bad file is reported, the rest go through
            skipped.append(f"{t.relpath}: {exc}")
            continue
        skipped.extend(problems)
        if new == data:
            continue
        if t.buffer is not None:
            new_text = buffer_text(new, encoding=enc)
        else:
            new_text = new.decode(enc, errors="replace")
        edits.append(FileEdit(t.uri, t.version, text_edits(old_text, new_text, encoding)))
    return edits, skipped


def _unwritable(text: str, err: UnicodeEncodeError) -> str:
    """Which character of an unsaved buffer its declared encoding cannot hold, and where."""
    before = text[: err.start]
    line = len(_LINE_BREAK.split(before))
    column = len(_LINE_BREAK.split(before)[-1]) + 1
    char = text[err.start]
    return (
        f"line {line}, column {column}: character {char!r} (U+{ord(char):04X}) cannot be "
        f"written in the file's encoding {err.encoding}; nothing was changed"
    )


def _apply(folder: Folder, relpath: str, data: bytes, strip: bool) -> tuple[bytes, list[str]]:
    """The new bytes of one file, and why parts of it were left alone."""
    if strip:
        result = tag_text.strip(data, relpath)
        return result.text, [f"{relpath}:{line}: {msg}" for line, msg in result.damaged]
    graph = folder.graph
    if graph is None or folder.policy is None:
        raise RuntimeError("not indexed yet")
    done = tag_apply.render_file(graph, relpath, data, folder.policy)
    return done.text, [f"{relpath}:{line}: {msg}" for line, msg in done.problems]


async def _edit_files(ls: AnchorServer, args: tuple[Any, ...], strip: bool) -> dict[str, Any]:
    command = STRIP if strip else MATERIALIZE
    arg = _one_object(args, command, '{"uri": URI, "version"?: N} for one file, {} for all')
    targets = _targets(ls, arg, command)
    if not ls.client_supports("workspace.apply_edit"):
        ls.tell_user(f"{command}: this editor cannot apply workspace edits; nothing was changed")
        return {"applied": False, "reason": "client cannot apply workspace edits"}
    wanted = arg.get("version")
    if wanted is not None and targets and targets[0].version != wanted:
        reason = f"the document is at version {targets[0].version}, not {wanted}"
        ls.tell_user(f"{command}: {reason}; nothing was changed")
        return {"applied": False, "reason": reason}
    if not strip and any(f.state != READY for f in {t.folder for t in targets}):
        ls.tell_user(f"{command}: the index is still being built; try again when it is ready")
        return {"applied": False, "reason": "indexing"}
    await ls.flush_all(t.uri for t in targets if t.buffer is not None)
    progress = WorkProgress(ls, f"anchor-ls: {'Stripping' if strip else 'Materializing'} tags")
    if len(targets) > 1:
        await progress.begin(f"{len(targets)} files")
    try:
        edits, skipped = await ls.mutate(_transform, targets, strip, ls.encoding, progress)
    finally:
        progress.end(f"{len(targets)} files read")
    for problem in skipped:
        ls.log_to_client(f"{command}: skipped {problem}", types.MessageType.Warning)
    moved = [t.uri for t in targets if t.buffer is not None and _version(ls, t.uri) != t.version]
    if moved:
        reason = f"{len(moved)} document(s) changed while the edit was computed"
        ls.tell_user(f"{command}: {reason}; nothing was changed, run it again")
        return {"applied": False, "reason": reason}
    if not edits:
        return {"applied": True, "files": 0, "skipped": skipped}
    params = types.ApplyWorkspaceEditParams(
        edit=workspace_edit(edits, ls.client_supports("workspace.workspace_edit.document_changes")),
        label="Materialize CodeAnchor tags" if not strip else "Strip CodeAnchor tags",
    )
    result = await ls.workspace_apply_edit_async(params)
    if not result.applied:
        why = result.failure_reason or "no reason given"
        ls.tell_user(f"{command}: the editor did not apply the edit: {why}")
    return {
        "applied": bool(result.applied),
        "files": len(edits) if result.applied else 0,
        "skipped": skipped,
        "reason": result.failure_reason,
    }


def _version(ls: AnchorServer, uri: str) -> int | None:
    opened = ls.open_text(uri)
    return opened[1] if opened is not None else None


# ----- export, reindex, stats ------------------------------------------
def _export(folder: Folder, out: Path, force: bool, include_git: bool) -> tag_apply.Report:
    if folder.index is None or folder.policy is None:
        raise RuntimeError("not indexed")
    return tag_apply.export_snapshot(folder.index, out, folder.policy, force, include_git)


async def _export_command(ls: AnchorServer, args: tuple[Any, ...]) -> dict[str, Any]:
    arg = _one_object(args, EXPORT, '{"out": DIR, "force"?: bool, "includeGit"?: bool}')
    out = arg.get("out")
    if not isinstance(out, str) or not out:
        raise JsonRpcInvalidParams(message=f'{EXPORT}: "out" must be a directory path')
    force, include_git = arg.get("force", False), arg.get("includeGit", False)
    if not isinstance(force, bool) or not isinstance(include_git, bool):
        raise JsonRpcInvalidParams(message=f'{EXPORT}: "force" and "includeGit" must be booleans')
    if not ls.folders:
        raise JsonRpcInvalidParams(message=f"{EXPORT}: no workspace folder is open")
    base = Path(to_fs_path(out) or out) if out.startswith("file:") else Path(out).expanduser()
    if not base.is_absolute():  # the server's working folder means nothing to its user
        raise JsonRpcInvalidParams(
            message=f'{EXPORT}: "out" must be an absolute path or a file: URI, not {out!r}'
        )
    targets = {f.root: base if len(ls.folders) == 1 else base / f.root.name for f in ls.folders}
    try:
        for target in targets.values():
            for folder in ls.folders:  # never into any open workspace folder
                tag_apply.refuse_output_in(folder.root, target)
    except tag_apply.TagError as exc:
        ls.tell_user(f"{EXPORT}: {exc}")
        return {"ok": False, "out": str(base), "reason": str(exc)}
    await ls.flush_all()  # unsaved edits still waiting for their debounce count
    results = []
    for folder in ls.folders:
        if folder.state != READY:
            raise JsonRpcInvalidParams(message=f"{EXPORT}: {folder.root} is still being indexed")
        target = targets[folder.root]
        progress = WorkProgress(ls, f"anchor-ls: Exporting {folder.root.name}")
        await progress.begin(str(target))
        try:
            summary: tag_apply.Report = await ls.mutate(_export, folder, target, force, include_git)
        except Exception as exc:
            progress.end(f"failed: {exc}")
            ls.tell_user(f"{EXPORT}: {exc}")
            return {"ok": False, "out": str(target), "reason": str(exc)}
        progress.end(f"written to {target}")
        results.append(
            {
                "root": str(folder.root),
                "out": str(target),
                "files": summary.files,
                "tagged": len(summary.changed),
                "problems": summary.problems,
            }
        )
    return {"ok": True, "exports": results}


def _policy_json(policy: ResolvedPolicy | None) -> dict[str, Any] | None:
    if policy is None:
        return None
    return {
        "name": policy.name,
        "fields": list(policy.fields),
        "maxItems": policy.max_items,
        "reason": policy.reason,
    }


async def _reindex(ls: AnchorServer, args: tuple[Any, ...]) -> dict[str, Any]:
    arg = _one_object(args, REINDEX, '{"uri"?: FOLDER_URI}')
    folders = ls.folders
    if arg.get("uri") is not None:
        folder = ls.folder_of_uri(arg["uri"]) if isinstance(arg["uri"], str) else None
        if folder is None:
            raise JsonRpcInvalidParams(
                message=f"{REINDEX}: {arg['uri']!r} is not a workspace folder"
            )
        folders = [folder]
    await ls.build(folders, title="Re-indexing")
    return await _stats(ls, ())


def _folder_stats(ls: AnchorServer, folder: Folder) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "root": str(folder.root),
        "rootFrom": folder.origin,
        "state": folder.state,
        "error": folder.error,
    }
    index = folder.index
    if index is not None:  # whose libraries the index reads (None: the server's own Python)
        entry["python"] = index.python
        entry["environmentProblem"] = folder.environment_problem
    if index is not None and folder.state == READY:
        # Figures read while the indexer thread changes the index could be torn; when it
        # is busy (loading deferred state, say), the figures of the last build answer.
        if index.lock.acquire(timeout=STATS_WAIT):
            try:
                stats = index.stats()
            finally:
                index.lock.release()
        else:
            stats = folder.stats or index.stats()
        entry["stats"] = stats.as_dict()
        entry["hintsRestored"] = folder.hints_restored  # files whose stored hints were read
    entry["policy"] = _policy_json(folder.policy)
    return entry


async def _stats(ls: AnchorServer, args: tuple[Any, ...]) -> dict[str, Any]:
    _one_object(args, STATS, "no argument")
    folders = [await ls.read(_folder_stats, ls, f) for f in ls.folders]
    return {"folders": folders, "settings": ls.settings.as_json(), "positionEncoding": ls.encoding}


HANDLERS: dict[str, Callable[..., Any]] = {
    MATERIALIZE: lambda ls, args: _edit_files(ls, args, strip=False),
    STRIP: lambda ls, args: _edit_files(ls, args, strip=True),
    EXPORT: _export_command,
    REINDEX: _reindex,
    STATS: _stats,
}


def _command(handler: Callable[..., Any]) -> Callable[..., Any]:
    """A pygls command that takes the raw argument list and validates it itself."""

    async def run(ls: AnchorServer, *args: Any) -> Any:
        return await handler(ls, args)

    return run


def register(ls: AnchorServer) -> None:
    for name, handler in HANDLERS.items():
        ls.command(name)(_command(handler))
