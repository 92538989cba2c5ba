"""The Neovim client, in a real headless Neovim 0.11 against the real server.

editors/nvim/test/init.lua loads the plugin, opens pkg/service.py of a copy of
fixtures/example, waits for what Neovim itself holds (inlay hints, code lenses),
runs a lens, :AnchorStats, :AnchorMaterialize and :AnchorStrip, and writes what
it saw as JSON; the assertions live here. The expected callers come from the
fixture's hand-written expected.json. The copy also holds modules a repository could
plant to run code in a Python that imports from it (see planted): none may run.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from support.nvim import run_script
from support.planted import marks_left, plant

from anchor_ls.tags.policy import is_test_path
from anchor_ls.tags.render import expand_id

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "fixtures" / "example"
TARGET = "pkg/service.py:checkout"


def _callers_of(target: str, tests: bool = False) -> list[str]:
    """The hand-written callers of target; calls from test code are TEST_REF, not CALLED_BY."""
    expected = json.loads((FIXTURE / "expected.json").read_text(encoding="utf-8"))
    callers = {src for src, dst in expected["calls"] if dst == target}
    return sorted(c for c in callers if tests or not is_test_path(c.partition(":")[0]))


def _short(entity_id: str) -> str:
    path, _, qualname = entity_id.partition(":")
    return qualname or path


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    work = tmp_path_factory.mktemp("nvim")
    repo = work / "example"
    shutil.copytree(FIXTURE, repo, ignore=shutil.ignore_patterns(".anchor-ls", "__pycache__"))
    marks = work / "marks"
    plant(repo, marks)
    env = {
        "ANCHOR_NVIM_FILE": str(repo / "pkg" / "service.py"),
        "ANCHOR_NVIM_DEF": "checkout",
        "ANCHOR_NVIM_EXPORT": str(work / "snapshot"),
        "ANCHOR_NVIM_TIMEOUT": "120000",
    }
    result, proc = run_script("init.lua", work, repo, env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    result["repo"] = str(repo)
    result["marks"] = marks_left(marks)
    result["original"] = (repo / "pkg" / "service.py").read_text(encoding="utf-8").splitlines()
    return result


def test_server_starts_for_python_buffers_at_the_repository_root(run: dict[str, Any]) -> None:
    assert run["filetype"] == "python"
    assert Path(run["root_dir"]) == Path(run["repo"])
    assert run["config"]["filetypes"] == ["python"]
    assert run["config"]["settings"]["anchorLs"]["policy"] == "auto"
    assert run["inlay_hints_enabled"] is True
    assert run["codelens_refresh_capability"] is True


def test_inlay_hint_on_the_def_line_names_every_caller(run: dict[str, Any]) -> None:
    callers = _callers_of(TARGET)
    assert callers, "expected.json lists no caller of checkout"
    on_def = [h for h in run["hints"] if h["line"] == run["def_line"]]
    assert len(on_def) == 1, run["hints"]
    hint = on_def[0]
    header = run["original"][run["def_line"]]
    assert hint["character"] >= len(header.rstrip()), "the hint is not at the end of the header"
    for caller in callers:
        assert _short(caller) in hint["label"], (caller, hint["label"])
    assert not any(
        p.get("location", {}).get("uri", "").endswith("/tests/test_service.py")
        for p in hint["parts"]
    ), "test callers belong to TEST_REF, not to the hint"
    linked = {
        p["value"]: p["location"]["uri"] for p in hint["parts"] if p.get("location") is not None
    }
    for caller in callers:
        uri = linked.get(_short(caller))
        assert uri, f"no location on the label part of {caller}: {hint['parts']}"
        assert uri.endswith("/" + caller.partition(":")[0]), (caller, uri)


def test_code_lenses_are_resolved_and_run_into_the_quickfix_list(run: dict[str, Any]) -> None:
    callers = _callers_of(TARGET)
    on_def = [lens for lens in run["lenses"] if lens["line"] == run["def_line"]]
    assert on_def, run["lenses"]
    assert all(lens["command"] == "anchor.showLocations" for lens in on_def), on_def
    caller_lens = [lens for lens in on_def if "caller" in lens["title"]]
    assert len(caller_lens) == 1, on_def
    assert caller_lens[0]["title"].startswith(f"{len(callers)} caller"), caller_lens
    # Neovim draws them as virtual text: one mark per lensed line, every title in it.
    marks = [m for m in run["lens_marks"] if m["line"] == run["def_line"]]
    assert len(marks) == 1, run["lens_marks"]
    assert marks[0]["text"] == " | ".join(lens["title"] for lens in on_def), marks
    # codelens.run() offered the lenses of the line; the callers one filled the quickfix
    # list with one entry per call site, in the callers' files and then the tests' that the
    # title counts apart.
    files = {str(Path(run["repo"]) / c.partition(":")[0]) for c in _callers_of(TARGET, True)}
    items = run["quickfix"]["items"]
    assert len(items) >= len(callers)
    assert {Path(i["filename"]).as_posix() for i in items} == files
    for item in items:
        assert "checkout(" in item["text"], item
    assert run["quickfix_open"] is True


def test_stats_command_reports_the_policy(run: dict[str, Any]) -> None:
    stats = run["stats"]
    assert run.get("stats_error") is None
    assert stats["settings"]["policy"] == "auto"
    resolved = stats["folders"][0]["policy"]["name"]
    assert resolved in ("topo", "inv", "dense")
    assert run["policy_text"] == f"auto→{resolved}"
    assert any('"policy"' in line for line in run["stats_buffer"]), run["stats_buffer"]
    assert run["status"] == f"anchor-ls: auto→{resolved}"


def test_materialize_edits_the_buffer_not_the_file_and_strip_restores_it(
    run: dict[str, Any],
) -> None:
    lines = run["materialized"]
    assert run["disk_unchanged"] is True
    assert run["modified_after_materialize"] is True
    def_at = next(i for i, line in enumerate(lines) if line.startswith("def checkout("))
    block_end = def_at - 1
    assert lines[block_end] == "# ==="
    block_start = max(i for i in range(block_end) if lines[i].startswith("# === CodeAnchor "))
    block = lines[block_start : block_end + 1]
    assert block[0] == f"# === CodeAnchor {TARGET}"
    called_by = next(line for line in block if line.startswith("# CALLED_BY:"))
    listed = {expand_id(i, TARGET) for i in called_by.removeprefix("# CALLED_BY: ").split(", ")}
    for caller in _callers_of(TARGET):
        assert caller in listed, (caller, called_by)
    assert run["stripped_equals_original"] is True
    assert run["hint_lines_after_strip"] == run["hint_lines_before"], (
        "after materialize and strip the buffer is the original again, so are its hints"
    )


def test_export_writes_a_tagged_copy_into_a_new_directory(run: dict[str, Any]) -> None:
    exported = run["exported"]
    assert f"# === CodeAnchor {TARGET}" in exported
    # Stripping the blocks gives back the original file.
    kept, inside = [], False
    for line in exported:
        if line.strip().startswith("# === CodeAnchor "):
            inside = True
        elif not inside:
            kept.append(line)
        elif line.strip() == "# ===":
            inside = False
    assert kept == run["original"]
    assert run["export_refused"] is True, "a second export into the same directory must refuse"


def test_the_server_runs_nothing_of_the_repository(run: dict[str, Any]) -> None:
    """nvim runs in the repository and the command is `python -m anchor_ls serve`, whose
    `-m` alone would put the working directory first on sys.path."""
    assert run["marks"] == []
    assert run["config"]["cmd_env"]["PYTHONSAFEPATH"] == "1"
    assert not Path(run["config"]["cmd_cwd"]).is_relative_to(run["repo"])


def test_a_file_written_on_disk_by_another_program_reaches_the_hints(run: dict[str, Any]) -> None:
    """Neovim on Linux sends no watched-file events: the server watches the tree itself."""
    assert "nightly_batch" in run["hint_with_disk_caller"]
    assert "nightly_batch" not in run["hint_after_disk_delete"]
    assert "quick_checkout" in run["hint_after_disk_delete"]
