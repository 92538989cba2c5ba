"""References (functions and classes used as values) in the call hierarchy, lenses and hints.

The index is built for real from a small repository written here; its graph is then
replaced by one made by hand with `references` edges and their sites, so these tests
pin the server's side of the relation whatever the resolver finds.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from lsprotocol import types

from anchor_ls.index import Edge, Entity, Graph, Index, Span
from anchor_ls.server import hierarchy
from anchor_ls.server.folders import READY, Folder
from anchor_ls.server.hints import HintForm, file_hints, resolve_hint
from anchor_ls.server.lenses import code_lenses, resolve_lens
from anchor_ls.server.locations import Locator
from anchor_ls.server.settings import Settings, parse
from anchor_ls.tags.policy import resolve_policy

HANDLERS = "app/handlers.py"
REGISTRY = "app/registry.py"
FILES = {
    "app/__init__.py": "",
    HANDLERS: (
        "def on_save(event):\n"
        "    return event\n"
        "\n"
        "\n"
        "def on_load(event):\n"
        "    return on_save(event)\n"
        "\n"
        "\n"
        "class Plugin:\n"
        "    pass\n"
    ),
    REGISTRY: (
        "from app.handlers import Plugin, on_load, on_save\n"
        "\n"
        'HOOKS = {"save": on_save}\n'
        "\n"
        "\n"
        "def register(callback):\n"
        "    return callback\n"
        "\n"
        "\n"
        "def setup():\n"
        "    register(on_save)\n"
        "    on_load(None)\n"
        "    return Plugin\n"
    ),
}
ON_SAVE, ON_LOAD, PLUGIN = f"{HANDLERS}:on_save", f"{HANDLERS}:on_load", f"{HANDLERS}:Plugin"
SETUP, REGISTER = f"{REGISTRY}:setup", f"{REGISTRY}:register"
ENCODING = "utf-16"


def span(rel: str, needle: str, start: int = 0) -> Span:
    """The span of `needle` (its `start`-th character on) on the first line holding it."""
    for number, line in enumerate(FILES[rel].splitlines()):
        if needle in line:
            col = line.index(needle) + start
            return (number, col, number, line.index(needle) + len(needle))
    raise AssertionError(needle)


# Where each edge is made, in its source's file (calls: the call; references: the name).
SITES: dict[Edge, list[Span]] = {
    Edge("calls", ON_LOAD, ON_SAVE): [span(HANDLERS, "on_save(event)")],
    Edge("calls", SETUP, REGISTER): [span(REGISTRY, "register(on_save)")],
    Edge("calls", SETUP, ON_LOAD): [span(REGISTRY, "on_load(None)")],
    Edge("references", REGISTRY, ON_SAVE): [span(REGISTRY, '"save": on_save', 8)],
    Edge("references", SETUP, ON_SAVE): [span(REGISTRY, "register(on_save)", 9)],
    Edge("references", SETUP, PLUGIN): [span(REGISTRY, "return Plugin", 7)],
}


class HandMade(Folder):
    """A folder whose readers see a graph the test made (and may change) by hand."""

    def __init__(self, uri: str, root: Path, graph: Graph) -> None:
        super().__init__(uri, root)
        self._graph = graph

    @property
    def graph(self) -> Graph:
        return self._graph


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Folder:
    root = tmp_path_factory.mktemp("refs") / "repo"
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    index = Index(root, cache_dir=root.parent / "cache")
    index.build()
    graph = Graph(str(index.root))
    for rel in FILES:
        entities: list[Entity] = index.graph.file_entities(rel)
        graph.replace_file_entities(rel, entities)
    for rel in (HANDLERS, REGISTRY):
        own = {e: s for e, s in SITES.items() if e.src.partition(":")[0] == rel}
        graph.replace_file_edges(rel, set(own), own)
    found = HandMade(root.as_uri(), root, graph)
    found.index, found.state = index, READY
    found.policy = resolve_policy("topo", 0.0, 8)
    return found


def entity(folder: Folder, entity_id: str) -> Entity:
    assert folder.graph is not None
    found = folder.graph.entity(entity_id)
    assert found is not None, entity_id
    return found


def ranges(folder: Folder, rel: str, spans: list[Span]) -> list[types.Range]:
    where = Locator(folder, ENCODING)
    return [where.range(rel, s) for s in spans]


def test_incoming_lists_callers_then_references_with_their_sites(folder: Folder) -> None:
    links = hierarchy.call_links(folder, entity(folder, ON_SAVE), ENCODING, incoming=True)
    assert all(isinstance(link, types.CallHierarchyIncomingCall) for link in links)
    got = [(link.from_.data["id"], link.from_.detail, link.from_ranges) for link in links]  # type: ignore[union-attr]
    assert got == [
        (ON_LOAD, ON_LOAD, ranges(folder, HANDLERS, SITES[Edge("calls", ON_LOAD, ON_SAVE)])),
        (
            REGISTRY,
            f"{REGISTRY} (reference)",
            ranges(folder, REGISTRY, SITES[Edge("references", REGISTRY, ON_SAVE)]),
        ),
        (
            SETUP,
            f"{SETUP} (reference)",
            ranges(folder, REGISTRY, SITES[Edge("references", SETUP, ON_SAVE)]),
        ),
    ]
    assert [link.from_.data.get("via") for link in links] == [None, "references", "references"]  # type: ignore[union-attr]


def test_outgoing_lists_callees_then_what_is_referenced(folder: Folder) -> None:
    links = hierarchy.call_links(folder, entity(folder, SETUP), ENCODING, incoming=False)
    assert all(isinstance(link, types.CallHierarchyOutgoingCall) for link in links)
    got = [(link.to.data["id"], link.to.detail.endswith("(reference)")) for link in links]  # type: ignore[union-attr]
    # Each group in id order: calls, then references.
    assert got == [(ON_LOAD, False), (REGISTER, False), (PLUGIN, True), (ON_SAVE, True)]
    plugin = links[2]
    assert plugin.from_ranges == ranges(folder, REGISTRY, SITES[Edge("references", SETUP, PLUGIN)])


def test_a_reference_item_expands_like_its_entity(folder: Folder) -> None:
    (_call, reference, _other) = hierarchy.call_links(
        folder, entity(folder, ON_SAVE), ENCODING, incoming=True
    )
    assert folder.graph is not None
    item = reference.from_  # type: ignore[union-attr]
    assert hierarchy.item_entity(folder.graph, REGISTRY, item) == entity(folder, REGISTRY)


def test_the_cursor_on_a_referenced_name_targets_it(folder: Folder) -> None:
    assert folder.graph is not None
    line, col, _, _ = SITES[Edge("references", SETUP, ON_SAVE)][0]
    assert hierarchy.call_target(folder.graph, REGISTRY, line, col + 2) == entity(folder, ON_SAVE)
    # On the callee's name, outside the argument, the call wins.
    line, col, _, _ = SITES[Edge("calls", SETUP, REGISTER)][0]
    assert hierarchy.call_target(folder.graph, REGISTRY, line, col + 2) == entity(folder, REGISTER)


def lens_titles(folder: Folder, settings: Settings) -> dict[tuple[str, str], types.CodeLens]:
    uri = f"{folder.root_uri}/{HANDLERS}"
    found = {}
    for lens in code_lenses(folder, HANDLERS, uri, settings):
        resolved = resolve_lens(folder, lens, ENCODING)
        assert resolved.command is not None
        found[(lens.data["id"], resolved.command.title)] = resolved
    return found


def test_lenses_count_references_and_locate_their_sites(folder: Folder) -> None:
    lenses = lens_titles(folder, Settings())
    assert set(lenses) >= {
        (ON_SAVE, "1 caller"),
        (ON_SAVE, "2 references"),
        (PLUGIN, "1 reference"),
    }
    command = lenses[(ON_SAVE, "2 references")].command
    assert command is not None and command.arguments is not None
    locations = command.arguments[2]
    where = Locator(folder, ENCODING)
    expected = [
        where.range(REGISTRY, s)
        for edge in (Edge("references", REGISTRY, ON_SAVE), Edge("references", SETUP, ON_SAVE))
        for s in SITES[edge]
    ]
    assert [loc["uri"].endswith(REGISTRY) for loc in locations] == [True, True]
    assert [(r["range"]["start"]["line"], r["range"]["start"]["character"]) for r in locations] == [
        (r.start.line, r.start.character) for r in expected
    ]
    # Without the field in lensFields, no reference lens.
    plain = lens_titles(folder, Settings(lens_fields=("CALLED_BY",)))
    assert not any(title.endswith(("reference", "references")) for _id, title in plain)


def hint_labels(folder: Folder, fields: tuple[str, ...]) -> dict[int, str]:
    found = file_hints(folder, HANDLERS, HintForm(fields, ENCODING, True, False))
    hints = json.loads(found.within(0, 10_000))
    return {h["position"]["line"]: "".join(p["value"] for p in h["label"]) for h in hints}


def test_hints_show_references_only_when_asked(folder: Folder) -> None:
    default = hint_labels(folder, Settings().hint_fields)
    assert default == {0: "← on_load", 4: "← setup"}
    with_refs = hint_labels(folder, ("CALLED_BY", "REFERENCED_BY"))
    assert with_refs == {
        0: f"← on_load  used by {REGISTRY}, setup",
        4: "← setup",
        8: "used by setup",
    }


def test_what_the_client_resolves_is_left_out_and_resolve_gives_it_back(folder: Folder) -> None:
    fields = ("CALLED_BY", "REFERENCED_BY")

    def hints(lazy_tooltips: bool, lazy_locations: bool) -> list[dict]:
        form = HintForm(fields, ENCODING, lazy_tooltips, lazy_locations)
        return json.loads(file_hints(folder, HANDLERS, form).within(0, 10_000))

    eager, lazy_tips, lazy_all = hints(False, False), hints(True, False), hints(True, True)
    assert len(eager) == len(lazy_tips) == len(lazy_all) == 3
    linked = [p for h in eager for p in h["label"] if "location" in p]
    assert {p["value"] for p in linked} == {"on_load", "setup", REGISTRY}
    assert all("tooltip" in h and "data" not in h for h in eager)
    assert [h["label"] for h in lazy_tips] == [h["label"] for h in eager]
    assert all("tooltip" not in h and h["data"]["uri"].endswith(HANDLERS) for h in lazy_tips)
    for full, bare in zip(eager, lazy_all, strict=True):
        assert "tooltip" not in bare and not any("location" in p for p in bare["label"])
        assert [p["value"] for p in bare["label"]] == [p["value"] for p in full["label"]]
        found = resolve_hint(folder, bare["data"]["id"], HintForm(fields, ENCODING, True, True))
        assert found == {"tooltip": full["tooltip"], "label": full["label"]}
    only_tip = resolve_hint(folder, ON_SAVE, HintForm(fields, ENCODING, True, False))
    assert only_tip is not None and set(only_tip) == {"tooltip"}
    assert resolve_hint(folder, f"{HANDLERS}:gone", HintForm(fields, ENCODING, True, True)) is None


def test_a_name_outside_the_graph_reads_the_same_with_links_or_without(folder: Folder) -> None:
    """The parts a client shows must be the ones resolve gives back: a dense target such
    as env:APP_MODE is not an entity, and both forms spell it in full."""
    graph = folder.graph
    assert graph is not None
    own = {e: s for e, s in SITES.items() if e.src.partition(":")[0] == HANDLERS}
    env = Edge("env_var", ON_LOAD, "env:APP_MODE")
    graph.replace_file_edges(HANDLERS, set(own) | {env}, {**own, env: own[next(iter(own))]})
    try:

        def values(lazy: bool) -> list[list[str]]:
            form = HintForm(("ENV_VAR",), ENCODING, lazy, lazy)
            found = json.loads(file_hints(folder, HANDLERS, form).within(0, 10_000))
            return [[p["value"] for p in h["label"]] for h in found]

        assert values(True) == values(False)
        assert any("env:APP_MODE" in parts for parts in values(True))
    finally:
        graph.replace_file_edges(HANDLERS, set(own), own)


def test_dense_field_names_are_accepted_in_settings() -> None:
    settings, problems = parse({"anchorLs": {"hintFields": ["called_by", "referenced_by"]}})
    assert problems == []
    assert settings.hint_fields == ("CALLED_BY", "REFERENCED_BY")
    assert "REFERENCED_BY" in Settings().lens_fields
    assert "REFERENCED_BY" not in Settings().hint_fields
