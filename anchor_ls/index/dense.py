"""The dense facts and references, read off the binder's values.

Precise before complete: each fact needs the binder to know what a thing is (the
`os` module's environ, a repository constant, a settings object, a repository
function), never a name alone. Kinds and targets are those of DESIGN.md.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from anchor_ls.index.bind import classes, lookup
from anchor_ls.index.bind.db import BinderState
from anchor_ls.index.bind.definitions import is_settings_module, value_names_in
from anchor_ls.index.bind.values import in_order
from anchor_ls.index.decorators import decorator_kind
from anchor_ls.index.model import CONFIG_USAGE, CONST_REF, ENV_VAR, IO_DEP
from anchor_ls.index.state import (
    CALLABLE,
    INSTANCES,
    BoundMethod,
    Class,
    Ctx,
    External,
    FileFacts,
    Function,
    Module,
    Value,
    Values,
)
from anchor_ls.index.testcode import is_test_path
from anchor_ls.syntax.parse import is_constant_name
from anchor_ls.syntax.summary import ATTR_READ, CallSite

_ENV_MAPPINGS = frozenset({"os.environ", "os.environb"})
_ENV_CALLS = frozenset(
    {"os.getenv", "os.getenvb", "os.putenv", "os.unsetenv"}
    | {f"{m}.{f}" for m in _ENV_MAPPINGS for f in ("get", "setdefault", "pop")}
)
_SETTINGS_CLASS_SUFFIXES = ("Settings", "Config", "Configuration")
_SETTINGS_OBJECTS = frozenset({"django.conf.settings"})
_CONFIG_OWNERS = ("flask.", "quart.")
_SETTINGS_NAMES = frozenset({"settings", "config", "conf", "cfg", "configuration"})
# Decorators that reshape a definition rather than register it somewhere.
_RESHAPING = (
    *("builtins.", "functools.", "abc.", "typing.", "typing_extensions.", "dataclasses."),
    *("contextlib.", "enum.", "types.", "pytest.mark.", "unittest.", "asyncio.coroutine"),
)

# Effects by the external callable (a prefix at dot boundaries, "()" removed:
# `sqlite3.connect().execute` is under `sqlite3.connect`).
_IO_CALLS: dict[str, tuple[str, ...]] = {
    "file": (
        "builtins.open",
        "io.open",
        "codecs.open",
        "os.open",
        "os.fdopen",
        "os.remove",
        "os.unlink",
        "os.rename",
        "os.renames",
        "os.replace",
        "os.mkdir",
        "os.makedirs",
        "os.rmdir",
        "os.removedirs",
        "os.listdir",
        "os.scandir",
        "os.walk",
        "os.chmod",
        "os.chown",
        "os.link",
        "os.symlink",
        "os.truncate",
        "os.utime",
        "shutil.copy",
        "shutil.copy2",
        "shutil.copyfile",
        "shutil.copyfileobj",
        "shutil.copytree",
        "shutil.move",
        "shutil.rmtree",
        "shutil.make_archive",
        "shutil.unpack_archive",
        "tempfile.mkstemp",
        "tempfile.mkdtemp",
        "tempfile.NamedTemporaryFile",
        "tempfile.TemporaryFile",
        "tempfile.SpooledTemporaryFile",
        "tempfile.TemporaryDirectory",
        "gzip.open",
        "bz2.open",
        "lzma.open",
        "zipfile.ZipFile",
        "tarfile.open",
        "mmap.mmap",
        *(
            f"pathlib.{cls}.{method}"
            for cls in ("Path", "PosixPath", "WindowsPath")
            for method in (
                "open",
                "read_text",
                "read_bytes",
                "write_text",
                "write_bytes",
                "mkdir",
                "touch",
                "unlink",
                "rmdir",
                "rename",
                "replace",
                "iterdir",
                "glob",
                "rglob",
                "symlink_to",
                "chmod",
            )
        ),
    ),
    "network": (
        "socket.socket",
        "socket.create_connection",
        "socket.create_server",
        "socket.getaddrinfo",
        "socket.gethostbyname",
        "ssl.wrap_socket",
        "urllib.request.urlopen",
        "urllib.request.urlretrieve",
        "urllib.request.build_opener",
        "http.client.HTTPConnection",
        "http.client.HTTPSConnection",
        "smtplib.SMTP",
        "smtplib.SMTP_SSL",
        "ftplib.FTP",
        "ftplib.FTP_TLS",
        "imaplib.IMAP4",
        "imaplib.IMAP4_SSL",
        "poplib.POP3",
        "poplib.POP3_SSL",
        "xmlrpc.client.ServerProxy",
        "asyncio.open_connection",
        "asyncio.start_server",
        "aiohttp.ClientSession",
        "aiohttp.request",
        "urllib3.PoolManager",
        "urllib3.request",
        "websockets.connect",
        "websockets.serve",
        *(
            f"{lib}.{verb}"
            for lib in ("requests", "httpx")
            for verb in ("get", "post", "put", "patch", "delete", "head", "options", "request")
        ),
        "requests.Session",
        "requests.session",
        "httpx.Client",
        "httpx.AsyncClient",
        "httpx.stream",
    ),
    "db": (
        "sqlite3.connect",
        "dbm.open",
        "shelve.open",
        "psycopg2.connect",
        "psycopg.connect",
        "psycopg.AsyncConnection",
        "pymysql.connect",
        "MySQLdb.connect",
        "mysql.connector.connect",
        "asyncpg.connect",
        "asyncpg.create_pool",
        "aiosqlite.connect",
        "cx_Oracle.connect",
        "oracledb.connect",
        "pyodbc.connect",
        "sqlalchemy.create_engine",
        "sqlalchemy.ext.asyncio.create_async_engine",
        "pymongo.MongoClient",
        "motor.motor_asyncio.AsyncIOMotorClient",
        "redis.Redis",
        "redis.StrictRedis",
        "redis.from_url",
        "django.db.connection.cursor",
        "django.db.connections",
    ),
    "subprocess": (
        "subprocess.run",
        "subprocess.call",
        "subprocess.check_call",
        "subprocess.check_output",
        "subprocess.Popen",
        "subprocess.getoutput",
        "subprocess.getstatusoutput",
        "os.system",
        "os.popen",
        "os.posix_spawn",
        "os.posix_spawnp",
        *(f"os.exec{s}" for s in ("l", "le", "lp", "lpe", "v", "ve", "vp", "vpe")),
        *(f"os.spawn{s}" for s in ("l", "le", "lp", "lpe", "v", "ve", "vp", "vpe")),
        "asyncio.create_subprocess_exec",
        "asyncio.create_subprocess_shell",
        "pty.spawn",
    ),
}
_IO_KIND = {name: kind for kind, names in _IO_CALLS.items() for name in names}


def io_kind(dotted: str) -> str | None:
    """file | network | db | subprocess for an external callable, else None."""
    name = dotted.replace("()", "")
    while name:
        kind = _IO_KIND.get(name)
        if kind is not None:
            return kind
        name = name.rpartition(".")[0]
    return None


def external_call(
    db: BinderState, path: str, idx: int, site: CallSite, callees: Values, facts: FileFacts
) -> None:
    """Facts of a call to something outside the repository: effects, environment, settings."""
    if site.kind != "call":
        return
    ctx: Ctx | None = None
    for value in in_order(callees):
        if not isinstance(value, External):
            continue
        dotted = value.dotted.replace("()", "")
        kind = io_kind(dotted)
        if kind is not None:
            facts.dense[(idx, IO_DEP, f"io:{kind}")].append(site.span)
        args = site.args
        if dotted == "builtins.getattr" and len(args) > 1 and args[1][0] == "k":
            ctx = ctx or Ctx(path, idx, site.pos, site.blocks)
            owner = db.eval(args[0], ctx)
            for target in settings_targets(db, owner, str(args[1][1])):
                facts.dense[(idx, CONFIG_USAGE, target)].append(site.span)
        if not args or args[0][0] != "k":
            continue
        key = str(args[0][1])
        if dotted in _ENV_CALLS:
            facts.dense[(idx, ENV_VAR, f"env:{key}")].append(site.span)
        elif dotted.startswith(_CONFIG_OWNERS) and dotted.endswith(".config.get"):
            facts.dense[(idx, CONFIG_USAGE, f"setting:{key}")].append(site.span)


def resolve_uses(
    db: BinderState, path: str, idx: int, uses: Sequence[tuple], facts: FileFacts
) -> None:
    """References, constant reads and keyed reads (`os.environ["K"]`) of one scope."""
    names = value_names(db)
    for tag, expr, span, pos, blocks in uses:
        if tag == "r":
            if (expr[1] if expr[0] == "n" else expr[2]) not in names:
                continue
            if expr[0] == "n" and _is_parameter(db, path, idx, expr[1]):
                continue  # passing on what a caller passed in: the caller made the reference
            for value in db.eval(expr, Ctx(path, idx, pos, blocks)):
                if isinstance(value, BoundMethod):  # a reference to the function
                    facts.refs[(idx, Function(value.path, value.idx))].append(span)
                elif isinstance(value, Function | Class):
                    facts.refs[(idx, value)].append(span)
        elif tag == "n":
            origin = constant_origin(db, path, idx, expr[1])
            if origin is not None and origin[0] != path:
                facts.dense[(idx, CONST_REF, f"{origin[0]}:{origin[1]}")].append(span)
        else:  # "s": a constant key read from a mapping
            key = str(expr[2][1])
            for value in db.eval(expr[1], Ctx(path, idx, pos, blocks)):
                if not isinstance(value, External):
                    continue
                dotted = value.dotted.replace("()", "")
                if dotted in _ENV_MAPPINGS:
                    facts.dense[(idx, ENV_VAR, f"env:{key}")].append(span)
                elif dotted.startswith(_CONFIG_OWNERS) and dotted.endswith(".config"):
                    facts.dense[(idx, CONFIG_USAGE, f"setting:{key}")].append(span)


def resolve_attribute_reads(
    db: BinderState, path: str, idx: int, attr_reads: Sequence[tuple], facts: FileFacts
) -> None:
    """`config.TIMEOUT` (a module constant) and `settings.DEBUG` (a setting)."""
    local = db.scope(path, idx).kind != "module"
    for expr, span, pos, blocks, kind in attr_reads:
        if kind != ATTR_READ:  # `settings.X = v` sets, `del config.X` drops: neither reads
            continue
        name = expr[2]
        constant = is_constant_name(name)
        base = expr[1]
        if not constant and not (base[0] == "n" and _may_hold_settings(base[1])):
            continue
        owner = db.eval(base, Ctx(path, idx, pos, blocks))
        for value in owner:
            if isinstance(value, Module) and constant:
                origin = module_constant(db, value.path, name)
                if origin is not None and origin[0] != path:
                    facts.dense[(idx, CONST_REF, f"{origin[0]}:{origin[1]}")].append(span)
        if local and base[0] == "n" and base[1] in lookup.names(db, path, idx):
            # a local object is not the module-level config object the issue means
            owner = frozenset(v for v in owner if isinstance(v, External))
        for target in settings_targets(db, owner, name):
            facts.dense[(idx, CONFIG_USAGE, target)].append(span)


def settings_targets(db: BinderState, owner: Values, name: str) -> list[str]:
    """The setting `owner.name` reads, when owner is a settings object: where the
    repository defines it (its settings modules), else `setting:NAME`."""
    if name.startswith("_") or not any(_is_settings_object(db, v, name) for v in in_order(owner)):
        return []
    return setting_definitions(db).get(name) or [f"setting:{name}"]


def _is_settings_object(db: BinderState, value: Value, name: str) -> bool:
    if isinstance(value, External):
        return value.dotted in _SETTINGS_OBJECTS and is_constant_name(name)
    if not isinstance(value, INSTANCES):
        return False
    cls = value.scope
    if not db.scope(*cls).name.endswith(_SETTINGS_CLASS_SUFFIXES):
        return False
    # A method or property of the settings class is behaviour, not a setting.
    return not any(isinstance(v, CALLABLE) for v in classes.class_attr(db, cls, name, bound=True))


def decorator_reference(
    db: BinderState, path: str, idx: int, site: CallSite, callees: Values, facts: FileFacts
) -> None:
    """`@register` hands the definition to the decorator: a reference, unless the decorator
    only reshapes it (property, staticmethod, functools.wraps, dataclass, ...)."""
    decorated = site.args[0]
    if decorated[0] not in ("f", "dw"):
        return
    if decorator_kind(site.func) != "instance":
        return
    if callees and all(
        isinstance(v, External) and v.dotted.startswith(_RESHAPING) for v in callees
    ):
        return
    kind = Class if db.scope(path, decorated[1]).kind == "class" else Function
    facts.refs[(idx, kind(path, decorated[1]))].append(site.span)


def _is_parameter(db: BinderState, path: str, idx: int, name: str) -> bool:
    bindings = lookup.names(db, path, idx).get(name)
    return bool(bindings) and all(b.value[0] == "P" for b in bindings)


def _may_hold_settings(name: str) -> bool:
    """A name worth evaluating for settings reads: `settings`, `config`, `app_settings`..."""
    lowered = name.lower()
    return lowered in _SETTINGS_NAMES or lowered.endswith(("_settings", "_config", "_conf"))


# ----- constants and settings ---------------------------------------------------
def value_names(db: BinderState) -> frozenset[str]:
    """The names a reference can be made through: those of functions and classes, and
    aliases of them (`h = f`, `self.cb = f`, two levels deep). Others are not worth
    evaluating."""
    if db._value_names is None:
        db._value_names = frozenset(value_names_in(db.summaries.values(), frozenset()))
    return db._value_names


def constant_names(db: BinderState, path: str) -> frozenset[str]:
    return db.constants.ask(path, frozenset(), _constant_names_of, db, path)


def _constant_names_of(db: BinderState, path: str) -> frozenset[str]:
    return frozenset(c[0] for c in db.summaries[path].constants)


def constant_origin(db: BinderState, path: str, idx: int, name: str) -> tuple[str, str] | None:
    """Where the module constant a name read in scope idx comes from, if it is one."""
    scopes = db.summaries[path].scopes
    cur = idx
    while cur >= 0:
        scope = scopes[cur]
        if (cur == idx or scope.kind != "class") and (
            name in lookup.names(db, path, cur) or (cur == 0 and scope.star_imports)
        ):
            return module_constant(db, path, name) if cur == 0 else None
        if name in scope.global_names:
            return module_constant(db, path, name)
        cur = scope.parent
    return None


def module_constant(
    db: BinderState, path: str, name: str, depth: int = 0
) -> tuple[str, str] | None:
    """The module constant `name` of module path is, through imports and re-exports."""
    if depth > 8 or path not in db.summaries:
        return None
    if name in constant_names(db, path):
        return (path, name)
    module = db.summaries[path].scopes[0]
    for binding in lookup.names(db, path, 0).get(name, ()):
        value = binding.value
        if value[0] == "if":
            target = db.modules.resolve(value[1], value[2], path)
            if target is not None:
                return module_constant(db, target, value[3], depth + 1)
    if name not in lookup.names(db, path, 0):
        for star, level, _pos in module.star_imports:
            target = db.modules.resolve(star, level, path)
            found = module_constant(db, target, name, depth + 1) if target else None
            if found is not None:
                return found
    return None


def setting_definitions(db: BinderState) -> dict[str, list[str]]:
    """Setting name -> the constants that define it in the repository's settings modules."""
    if db._setting_defs is None:
        defs: dict[str, list[str]] = defaultdict(list)
        for path in sorted(db.summaries):
            if is_settings_module(path) and not is_test_path(path):
                for name in sorted(constant_names(db, path)):
                    defs[name].append(f"{path}:{name}")
        db._setting_defs = dict(defs)
    return db._setting_defs
