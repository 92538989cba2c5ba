"""Language-server latency over stdio on a real repository (Django 5.1.4 by default).

    pip download --no-binary :all: --no-deps django==5.1.4 -d benchmarks/.data
    tar -xzf benchmarks/.data/Django-5.1.4.tar.gz -C benchmarks/.data
    python benchmarks/lsp_latency.py [--root DIR] [--files N] [--edits N] [--cold]

It starts `python -m anchor_ls.server` as an editor would (stdio, raw JSON-RPC, the
capabilities of VS Code: UTF-16 positions, inlay hint refresh and resolve), waits for
the index (its cache is benchmarks/.data/lsp-cache unless --cache says otherwise;
--cold empties it first; anchor_ls is compiled to bytecode first, as installed), then:

- first contact: from `initialize` to the first complete `callHierarchy/incomingCalls`
  answer for QuerySet.filter (django/db/models/query.py), asked right after `initialized`
  (didOpen, prepareCallHierarchy, incomingCalls) without waiting for the index, and asked
  again every second until one was asked after the build ended; complete means equal to
  that last answer (an answer from a glimpse, which the server logs as partial, is
  complete when it lists every caller the build does). With where the time goes: when
  the build began, its parse pass ended (its first "resolving" $/progress report) and it
  ended;
- hints during the first build: whole-file inlay hints asked while the index is being built
  (they wait for the build, up to the server's bound);
- hints, whole file: didOpen then textDocument/inlayHint over every line, for the N
  Python files with the most definitions (first request per file, then a repeat), at
  once after indexing; then, after --pause seconds without requests, the first request
  for each of the next N files;
- edit -> hints elsewhere: an unsaved didChange in one open file adds a caller of a
  function defined in another open file (then takes it out again); the time until that
  file's hints show it, and the same edits timed on Index.update_file alone. The caller
  goes into a body, after the other definitions, or above them in
  django/db/models/query.py (which renumbers every scope of a file much of Django calls);
- first edit after the start: after that pause (a user reading before typing), the
  first edit, which on a warm start may find the resolver state still to be loaded;
- memory: the server's resident set after indexing and its peak, and that of its child
  processes (a parse fork server after a cold start).

Targets (the issues): whole-file hints p95 under 20 ms; an edit visible in the hints of
another open file under 300 ms; first contact on a cold start under 2 s.
"""

from __future__ import annotations

import argparse
import asyncio
import compileall
import contextlib
import itertools
import json
import os
import re
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from lsprotocol import types
from lsprotocol.converters import get_converter
from pytest_lsp import client_capabilities

import anchor_ls

HERE = Path(__file__).resolve().parent
DEFAULT_ROOT = HERE / ".data" / "Django-5.1.4"
DEFAULT_CACHE = HERE / ".data" / "lsp-cache"
# An edit in a leaf module (few importers) and in a much-imported one.
TARGET = "django/utils/text.py"
EDITS = (
    ("body", "django/contrib/humanize/templatetags/humanize.py"),
    ("body", "django/utils/html.py"),
    ("new function", "django/contrib/humanize/templatetags/humanize.py"),
    # above every other definition of a large file that much of Django calls into: all
    # its scopes move down one index, and whatever other files hold of them follows
    ("new function above", "django/db/models/query.py"),
)
WAIT_LIMIT = 900.0
# The first-contact question: who calls QuerySet.filter, asked as soon as the editor opens.
FIRST_CONTACT = ("django/db/models/query.py", "QuerySet", "filter")
ASK_AGAIN = 1.0  # seconds between first-contact questions while the first build runs
DEF_LINE = re.compile(r"^\s*(?:async\s+)?(?:def|class)\s", re.M)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def row(name: str, values: list[float], unit: str = "ms") -> str:
    if not values:
        return f"| {name} | 0 | - | - | - |"
    return (
        f"| {name} | {len(values)} | {statistics.median(values):.1f} {unit} "
        f"| {percentile(values, 0.95):.1f} {unit} | {max(values):.1f} {unit} |"
    )


def children(pid: int) -> list[int]:
    """Child processes of pid (Linux)."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found.extend(int(c) for c in (task / "children").read_text().split())
        except OSError:
            continue
    return found


def child_memory(pid: int) -> float:
    """Resident MiB of pid's children and their children."""
    todo, total = children(pid), 0.0
    while todo:
        child = todo.pop()
        total += memory(child).get("VmRSS", 0.0)
        todo.extend(children(child))
    return total


def memory(pid: int) -> dict[str, float]:
    """VmRSS and VmHWM (peak) of a process, in MiB, from /proc."""
    found: dict[str, float] = {}
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                found[key] = int(value.split()[0]) / 1024
    except OSError:
        pass
    return found


class Bench:
    """A minimal editor over raw JSON-RPC: timings include the server and the pipe, not a
    client library turning answers into objects."""

    def __init__(self, root: Path, cache: Path) -> None:
        self.root = root
        self.cache = cache
        self.process: asyncio.subprocess.Process | None = None
        self.refreshed = asyncio.Event()
        self.progress_end = asyncio.Event()
        self.progress_message = ""  # the end report: "N files, ... (M from cache)"
        self.versions: dict[str, int] = {}
        self.texts: dict[str, str] = {}
        self._ids = itertools.count(1)
        self._waiting: dict[int, asyncio.Future[Any]] = {}
        self._reader: asyncio.Task[None] | None = None
        self.sent_edits: dict[tuple[str, str], list[str]] = {}
        self.started = 0.0  # perf_counter() when initialize was sent
        self.marks: dict[str, float] = {}  # seconds after initialize: build phases, answers
        self.partial: list[str] = []  # log messages of answers from a partial index

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def uri(self, rel: str) -> str:
        return (self.root / rel).as_uri()

    # ----- JSON-RPC ------------------------------------------------------
    def _write(self, message: dict[str, Any]) -> None:
        assert self.process is not None and self.process.stdin is not None
        body = json.dumps(message).encode()
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def notify(self, method: str, params: Any) -> None:
        self._write({"jsonrpc": "2.0", "method": method, "params": params})

    async def request(self, method: str, params: Any) -> Any:
        msg_id = next(self._ids)
        future = asyncio.get_running_loop().create_future()
        self._waiting[msg_id] = future
        self._write({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        return await future

    async def _read(self) -> None:
        assert self.process is not None and self.process.stdout is not None
        out = self.process.stdout
        while True:
            length = 0
            while (line := await out.readline()) not in (b"\r\n", b""):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            if not line:
                return
            message = json.loads(await out.readexactly(length))
            if "method" in message:
                self._server_message(message)
            elif "error" in message:
                self._waiting.pop(message["id"]).set_exception(RuntimeError(message["error"]))
            else:
                self._waiting.pop(message["id"]).set_result(message.get("result"))

    def _server_message(self, message: dict[str, Any]) -> None:
        method, params = message["method"], message.get("params")
        result: Any = None
        if method == "workspace/inlayHint/refresh":
            self.refreshed.set()
        elif method == "$/progress":
            value = params["value"]
            if value.get("kind") == "begin":
                self.mark("build began")
            elif str(value.get("message", "")).startswith("resolving"):
                self.mark("parse pass ended")
            elif value.get("kind") == "end":
                self.mark("build ended")
                self.progress_message = value.get("message", "")
                self.progress_end.set()
        elif method == "window/logMessage" and "partial" in params["message"]:
            self.partial.append(params["message"])
        elif method == "workspace/configuration":
            result = [{"cacheDir": str(self.cache)} for _ in params["items"]]
        elif method == "window/showMessage":
            print("server says:", params["message"], file=sys.stderr)
        if "id" in message:
            self._write({"jsonrpc": "2.0", "id": message["id"], "result": result})

    def mark(self, what: str) -> None:
        """Note the first time `what` happened, in seconds after initialize."""
        self.marks.setdefault(what, time.perf_counter() - self.started)

    # ----- an editor session -------------------------------------------
    async def start(self) -> None:
        self.started = time.perf_counter()
        self.process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "anchor_ls.server",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            limit=1 << 26,
        )
        self._reader = asyncio.create_task(self._read())
        caps = client_capabilities("visual-studio-code")
        assert caps.workspace is not None and caps.text_document is not None
        # The 1.65 profile predates inlay hints; VS Code since 1.67 declares these.
        caps.workspace.inlay_hint = types.InlayHintWorkspaceClientCapabilities(refresh_support=True)
        caps.text_document.inlay_hint = types.InlayHintClientCapabilities(
            dynamic_registration=True,
            resolve_support=types.ClientInlayHintResolveOptions(
                properties=["tooltip", "textEdits", "label.tooltip", "label.location"]
            ),
        )
        uri = self.root.as_uri()
        await self.request(
            "initialize",
            {
                "processId": os.getpid(),
                "rootUri": uri,
                "capabilities": get_converter().unstructure(caps),
                "workspaceFolders": [{"uri": uri, "name": self.root.name}],
                "initializationOptions": {"anchorLs": {"cacheDir": str(self.cache)}},
            },
        )
        self.mark("initialize answered")
        self.notify("initialized", {})

    async def hints(self, rel: str, lines: int) -> list[dict[str, Any]]:
        params = {
            "textDocument": {"uri": self.uri(rel)},
            "range": {"start": {"line": 0, "character": 0}, "end": {"line": lines, "character": 0}},
        }
        return await self.request("textDocument/inlayHint", params) or []

    async def timed_hints(self, rel: str, lines: int) -> float:
        started = time.perf_counter()
        await self.hints(rel, lines)
        return (time.perf_counter() - started) * 1000

    def open(self, rel: str) -> str:
        text = (self.root / rel).read_text(encoding="utf-8")
        self.texts[rel], self.versions[rel] = text, 1
        item = {"uri": self.uri(rel), "languageId": "python", "version": 1, "text": text}
        self.notify("textDocument/didOpen", {"textDocument": item})
        return text

    def change(self, rel: str, text: str) -> None:
        self.versions[rel] += 1
        self.texts[rel] = text
        self.notify(
            "textDocument/didChange",
            {
                "textDocument": {"uri": self.uri(rel), "version": self.versions[rel]},
                "contentChanges": [{"text": text}],
            },
        )

    async def stop(self) -> None:
        assert self.process is not None
        await self.request("shutdown", None)
        self.notify("exit", None)
        await self.process.wait()
        if self._reader is not None:
            self._reader.cancel()


def method_position(text: str, cls: str, name: str) -> dict[str, int]:
    """The LSP position of `def name` in `class cls` (ASCII source: columns are the same
    in UTF-16)."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"class {cls}("))
    for number in range(start + 1, len(lines)):
        match = re.match(rf"\s+def ({name})\(", lines[number])
        if match:
            return {"line": number, "character": match.start(1)}
    raise SystemExit(f"no def {name} in class {cls}")


async def incoming_calls(bench: Bench, rel: str, at: dict[str, int]) -> list[str] | None:
    """Callers (their ids) of the definition at `at`, or None when prepare finds none."""
    params = {"textDocument": {"uri": bench.uri(rel)}, "position": at}
    items = await bench.request("textDocument/prepareCallHierarchy", params)
    if not items:
        return None
    calls = await bench.request("callHierarchy/incomingCalls", {"item": items[0]})
    return sorted(c["from"].get("detail") or c["from"]["name"] for c in calls or [])


async def first_contact(bench: Bench) -> list[tuple[float, list[str] | None]]:
    """The incomingCalls answers for FIRST_CONTACT, asked at once and again until one was
    asked after the build ended (that one is complete), each with its seconds after
    initialize."""
    rel, cls, name = FIRST_CONTACT
    at = method_position(bench.open(rel), cls, name)
    answers = []
    while True:
        built = bench.progress_end.is_set()
        callers = await incoming_calls(bench, rel, at)
        answers.append((time.perf_counter() - bench.started, callers))
        if built:
            return answers
        # asked again a second later (an answer from a glimpse comes back at once)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(bench.progress_end.wait(), ASK_AGAIN)


def biggest_files(root: Path, count: int) -> list[tuple[str, int]]:
    """The `count` files under root/django with the most def/class lines, and their line counts."""
    scored = []
    for path in (root / "django").rglob("*.py"):
        text = path.read_text(encoding="utf-8", errors="replace")
        scored.append(
            (len(DEF_LINE.findall(text)), path.relative_to(root).as_posix(), text.count("\n") + 1)
        )
    scored.sort(reverse=True)
    return [(rel, lines) for _n, rel, lines in scored[:count]]


async def hint_texts(bench: Bench, rel: str) -> dict[int, str]:
    """Line -> label and tooltip of every hint in rel."""
    found = {}
    for hint in await bench.hints(rel, 1_000_000):
        label = hint["label"]
        text = label if isinstance(label, str) else "".join(p["value"] for p in label)
        tooltip = hint.get("tooltip") or ""
        text += " " + (tooltip if isinstance(tooltip, str) else tooltip.get("value", ""))
        found[hint["position"]["line"]] = text
    return found


async def target_function(bench: Bench, rel: str) -> tuple[str, int]:
    """A public top-level function of rel whose hint label can name one more caller
    (labels are capped at maxItems; tooltips may be left to inlayHint/resolve)."""
    hints = await hint_texts(bench, rel)
    for number, line in enumerate(bench.texts[rel].splitlines()):
        match = re.match(r"def ([a-z]\w*)\(.*\):\s*$", line)
        label = hints.get(number, "")
        if match and "[+" not in label and label.count(", ") < 6:
            return match.group(1), number
    raise SystemExit(f"no suitable function in {rel}")


def body_edit(text: str, module: str, name: str) -> tuple[str, str]:
    """Text with a call of module.name added inside the first top-level function, and
    that function's name (a local import keeps the module's interface as it was)."""
    lines = text.splitlines(keepends=True)
    for i, line in enumerate(lines):
        match = re.match(r"def (\w+)\(.*\):\s*$", line)
        if match:
            call = [f"    from {module} import {name} as _bench_target\n", "    _bench_target()\n"]
            return "".join(lines[: i + 1] + call + lines[i + 1 :]), match.group(1)
    raise SystemExit("no top-level function to edit")


def new_function(
    text: str, module: str, name: str, round_: int, above: bool = False
) -> tuple[str, str]:
    """Text with a new top-level function calling module.name (a new interface) appended,
    or inserted above the first top-level definition (every later scope moves)."""
    caller = f"bench_caller_{round_}"
    added = (
        f"from {module} import {name} as _bench_target\n\n\n"
        f"def {caller}():\n    return _bench_target()\n\n\n"
    )
    if not above:
        return text + "\n\n" + added.rstrip("\n") + "\n", caller
    first = re.search(r"^(?:async\s+def|def|class)\s", text, re.M)
    if first is None:
        raise SystemExit("no top-level definition to insert above")
    return text[: first.start()] + added + text[first.start() :], caller


async def wait_hint(bench: Bench, target: str, line: int, caller: str, present: bool) -> None:
    deadline = time.perf_counter() + WAIT_LIMIT
    while True:
        remaining = deadline - time.perf_counter()
        if remaining <= 0:
            raise SystemExit(f"hints of {target} did not change within {WAIT_LIMIT:.0f} s")
        try:
            await asyncio.wait_for(bench.refreshed.wait(), remaining)
        except TimeoutError:
            continue
        bench.refreshed.clear()
        shown = await hint_texts(bench, target)
        if (caller in shown.get(line, "")) == present:
            return


async def edit_latency(
    bench: Bench, source: str, target: str, rounds: int, kind: str
) -> list[float]:
    """Unsaved edits of `source` that add (then remove) a caller of a function of `target`;
    the time from didChange until `target`'s hints show the change."""
    name, line = await target_function(bench, target)
    module = target[:-3].replace("/", ".")
    original = bench.texts[source]
    times = []
    sent = bench.sent_edits.setdefault((kind, source), [])
    for i in range(rounds):
        if kind == "body":
            edited, caller = body_edit(original, module, name)
        else:
            edited, caller = new_function(original, module, name, i, kind.endswith("above"))
        for text, present in ((edited, True), (original, False)):
            bench.refreshed.clear()
            started = time.perf_counter()
            bench.change(source, text)
            sent.append(text)
            await wait_hint(bench, target, line, caller, present)
            times.append((time.perf_counter() - started) * 1000)
            await asyncio.sleep(0.2)
    return times


def replay(root: Path, cache: Path, sent: dict[tuple[str, str], list[str]]) -> dict:
    """The same edits through Index.update_file in this process: the index's share."""
    import gc

    from anchor_ls.index import Index

    index = Index(root, cache_dir=cache)
    gc.disable()  # as the server does during a build
    index.build()
    gc.freeze()
    gc.enable()
    times: dict[tuple[str, str], list[float]] = {}
    for _kind, source in sent:  # the first change loads the resolver state: not timed here
        index.reload_file(source)
        break
    for key, texts in sent.items():
        for text in texts:
            started = time.perf_counter()
            index.update_file(key[1], text)
            times.setdefault(key, []).append((time.perf_counter() - started) * 1000)
        index.reload_file(key[1])
    return times


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--root", type=Path, default=DEFAULT_ROOT)
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--files", type=int, default=40, help="files to ask whole-file hints for")
    parser.add_argument("--edits", type=int, default=5, help="edit+undo rounds per scenario")
    parser.add_argument("--cold", action="store_true", help="empty the cache first")
    parser.add_argument(
        "--pause", type=float, default=3.0, help="seconds without requests before the first edit"
    )
    parser.add_argument(
        "--no-replay", action="store_true", help="skip timing the edits on Index alone"
    )
    args = parser.parse_args()
    root = args.root.resolve()
    # the server takes a relative cacheDir from the folder's root, not from here
    args.cache = args.cache.resolve()
    if not (root / "django").is_dir():
        raise SystemExit(f"{root} is not an unpacked Django sdist; see the module docstring")
    if args.cold:
        shutil.rmtree(args.cache, ignore_errors=True)
    # An installed anchor-ls starts from bytecode (pip compiles a wheel's modules; an
    # editable install writes it at its first start). With PYTHONDONTWRITEBYTECODE set,
    # as on our CI machines, each start compiled anchor_ls again: 0.5 s of initialize.
    compileall.compile_dir(Path(anchor_ls.__file__).parent, quiet=1)
    ranked = biggest_files(root, 2 * args.files)
    files, later_files = ranked[: args.files], ranked[args.files :]

    bench = Bench(root, args.cache)
    await bench.start()
    contact = asyncio.ensure_future(first_contact(bench))
    during: list[float] = []
    probe, probe_lines = files[0]
    bench.open(probe)
    while not bench.progress_end.is_set():
        during.append(await bench.timed_hints(probe, probe_lines))
        await asyncio.sleep(0.2)
    await bench.progress_end.wait()
    indexed = time.perf_counter() - bench.started
    answers = await contact
    settled = answers[-1][1]
    first_seconds, first_callers = answers[0]
    complete_seconds = next(t for t, callers in answers if callers == settled)
    mem_indexed = memory(bench.pid)
    # warm: every file came from the cache (a cache of older engine code is rebuilt)
    counts = re.match(r"(\d+) files.*\((\d+) from cache\)", bench.progress_message)
    warm = counts is not None and counts.group(1) == counts.group(2)

    first, again = [], []
    for rel, lines in files:
        bench.open(rel)
        first.append(await bench.timed_hints(rel, lines))
        again.append(await bench.timed_hints(rel, lines))

    edits = {}
    if TARGET not in bench.texts:
        bench.open(TARGET)
    # After a warm start the index loads its resolver state on the first edit: timed apart.
    first_kind, first_source = EDITS[0]
    if first_source not in bench.texts:
        bench.open(first_source)
    await asyncio.sleep(args.pause)
    later = []
    for rel, lines in later_files:
        bench.open(rel)
        later.append(await bench.timed_hints(rel, lines))
    print("first edit...", file=sys.stderr)
    first_edit = await edit_latency(bench, first_source, TARGET, 1, first_kind)
    bench.sent_edits.clear()
    for kind, source in EDITS:
        if source not in bench.texts:
            bench.open(source)
        print(f"editing {source} ({kind})...", file=sys.stderr)
        edits[(kind, source)] = await edit_latency(bench, source, TARGET, args.edits, kind)
    mem_end = memory(bench.pid)
    mem_children = child_memory(bench.pid)
    await bench.stop()
    alone = {} if args.no_replay else replay(root, args.cache, bench.sent_edits)

    python_files = sum(1 for _ in root.rglob("*.py"))
    print(
        f"\nanchor-ls over stdio on {root.name} ({python_files} Python files), "
        f"{'warm' if warm else 'cold'} start: indexed in {indexed:.1f} s\n"
    )
    rel, cls, name = FIRST_CONTACT
    print("| measurement | n | p50 | p95 | max |")
    print("|---|---|---|---|---|")
    print(
        row(
            f"first contact: initialize -> first complete incomingCalls of {cls}.{name} "
            "(target < 2 s)",
            [complete_seconds],
            "s",
        )
    )
    print(row("hints asked during the first build, whole file (they wait for it)", during))
    print(row(f"hints, whole file, first request ({len(files)} largest files)", first))
    print(row("hints, whole file, repeated", again))
    print(
        row(
            f"hints, whole file, first request after {args.pause:g} s without requests "
            f"(the next {len(later)} largest files)",
            later,
        )
    )
    print(
        row(
            f"first edit after the start and {args.pause:g} s without requests, and its undo",
            first_edit,
        )
    )
    for (kind, source), times in edits.items():
        print(row(f"edit ({kind}) in {source} -> hints of {TARGET}", times))
        if (kind, source) in alone:
            print(
                row(
                    "  of which Index.update_file alone (same edits, in process)",
                    alone[(kind, source)],
                )
            )
    phases = ", ".join(f"{what} {at:.2f} s" for what, at in bench.marks.items())
    first = "null" if first_callers is None else f"{len(first_callers)} callers"
    print(
        f"\nfirst contact: {rel}:{cls}.{name} has {len(settled or [])} callers; "
        f"the first answer ({first}) came at {first_seconds:.2f} s, the first complete one at "
        f"{complete_seconds:.2f} s ({'PASS' if complete_seconds < 2 else 'MISS'} < 2 s) "
        f"after {len(answers)} asks; after initialize: {phases}; "
        f"answers logged as partial (all requests): {len(bench.partial)}"
    )
    print(
        f"\nmemory: {mem_indexed.get('VmRSS', 0):.0f} MiB resident after indexing, "
        f"{mem_end.get('VmRSS', 0):.0f} MiB at the end, peak {mem_end.get('VmHWM', 0):.0f} MiB; "
        f"child processes {mem_children:.0f} MiB at the end"
    )


if __name__ == "__main__":
    asyncio.run(main())
