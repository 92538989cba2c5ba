"""The `anchorLs` settings: parsed from initializationOptions or workspace/configuration.

A bad value never stops the server: it is reported and the default is kept.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

from anchor_ls.tags.policy import FIELD_SPECS

SECTION = "anchorLs"
POLICIES = ("auto", "topo", "inv", "dense")
KNOWN_FIELDS = tuple(FIELD_SPECS)


@dataclass(frozen=True, slots=True)
class Settings:
    policy: str = "auto"
    max_items: int = 8
    inlay_hints: bool = True
    code_lens: bool = True
    hint_fields: tuple[str, ...] = ("CALLED_BY", "BASE", "DERIVED")
    lens_fields: tuple[str, ...] = (
        "CALLED_BY",
        "REFERENCED_BY",
        "CALLS",
        "DERIVED",
        "OVERRIDES",
        "OVERRIDDEN_BY",
    )
    exclude: tuple[str, ...] = ()
    cache_dir: str | None = None
    source_roots: tuple[str, ...] = ()
    python: str | None = None

    def index_key(self) -> tuple[tuple[str, ...], str | None, tuple[str, ...], str | None]:
        """The settings an Index is built with: a change here means a rebuild."""
        return self.exclude, self.cache_dir, self.source_roots, self.python

    def as_json(self) -> dict[str, Any]:
        return {_CAMEL[f.name]: _jsonable(getattr(self, f.name)) for f in fields(self)}


_CAMEL = {
    "policy": "policy",
    "max_items": "maxItems",
    "inlay_hints": "inlayHints",
    "code_lens": "codeLens",
    "hint_fields": "hintFields",
    "lens_fields": "lensFields",
    "exclude": "exclude",
    "cache_dir": "cacheDir",
    "source_roots": "sourceRoots",
    "python": "python",
}


def _jsonable(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def _field_list(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError("expected a list of field names")
    unknown = [v for v in value if v.upper() not in KNOWN_FIELDS]
    if unknown:
        raise ValueError(f"unknown field(s) {', '.join(unknown)}; known: {', '.join(KNOWN_FIELDS)}")
    return tuple(v.upper() for v in value)


def _policy(value: Any) -> str:
    if not isinstance(value, str) or value not in POLICIES:
        raise ValueError(f"expected one of {', '.join(POLICIES)}")
    return value


def _max_items(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError("expected a whole number (0: no cap)")
    return value


def _bool(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError("expected true or false")
    return value


def _globs(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError("expected a list of glob strings")
    return tuple(value)


def _folders(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ValueError("expected a list of folders (relative to the workspace folder)")
    return tuple(value)


def _cache_dir(value: Any) -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise ValueError("expected a directory path or null")
    return value


def _python(value: Any) -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise ValueError("expected the path of a Python interpreter or null")
    return value


_PARSERS = {
    "policy": ("policy", _policy),
    "maxItems": ("max_items", _max_items),
    "inlayHints": ("inlay_hints", _bool),
    "codeLens": ("code_lens", _bool),
    "hintFields": ("hint_fields", _field_list),
    "lensFields": ("lens_fields", _field_list),
    "exclude": ("exclude", _globs),
    "cacheDir": ("cache_dir", _cache_dir),
    "sourceRoots": ("source_roots", _folders),
    "python": ("python", _python),
}
# Settings whose null means "back to the default" rather than "not given".
_NULLABLE = frozenset({"cacheDir", "python"})


def section_of(raw: Any) -> Mapping[str, Any] | None:
    """The anchorLs section of a settings object, which may be wrapped or bare."""
    if not isinstance(raw, Mapping):
        return None
    inner = raw.get(SECTION)
    if isinstance(inner, Mapping):
        return inner
    if any(key in _PARSERS for key in raw):
        return raw
    return None


def parse(raw: Any, base: Settings | None = None) -> tuple[Settings, list[str]]:
    """Settings from a JSON value, with one message per rejected key."""
    settings = Settings()
    if base is not None:
        settings = base
    section = section_of(raw)
    if section is None:
        return settings, []
    problems: list[str] = []
    changes: dict[str, Any] = {}
    for key, value in section.items():
        if key not in _PARSERS:
            problems.append(f"anchorLs.{key}: unknown setting, ignored")
            continue
        if value is None and key not in _NULLABLE:
            continue
        name, parser = _PARSERS[key]
        try:
            changes[name] = parser(value)
        except ValueError as exc:
            problems.append(
                f"anchorLs.{key}: {exc}; keeping {_jsonable(getattr(settings, name))!r}"
            )
    return replace(settings, **changes), problems
