"""How the binder resolves method calls through class hierarchies, checked against what
CPython does with the same code: hypothesis writes small repositories of classes (one or
two modules, `from a import C` or `import a` with b's classes sometimes named like a's;
single and multiple inheritance the C3 MRO accepts, mixins with no bases; methods f, g,
h and `__init__` defined in some classes and not others, now and then `f = None` hiding
the bases' f; bodies calling `super().m()`, `super(Cj, self).m()` for a class Cj of the
MRO, `self.m()`; module functions calling `C().m()`), runs them in a child interpreter
that records every call a function makes, and compares the trace with the call edges of
a fresh index.

The generated code is the test's own (no repository's code runs): the child runs it with
`python -I`, every function and method swapped for a recorder. Each method of each class
K runs once on an instance of each class X that derives from K (`K.m(X())`), so every
(body, class of self) pair the code can meet at run time is met, and a call made from a
body is recorded and not followed (the callee's body is met on its own pair: no
recursion, and the trace is the complete set of edges any instance can take).

- Precision: every call edge of the graph is in the trace (or is `use -> C`, the
  constructor call of a `C().m()`). An edge no instance of any class could take is wrong.
- Recall, for the shapes fixtures/accuracy says are resolved: `super().m()` in K runs what
  K's own MRO puts after K, or, when it puts nothing there (a mixin), what each
  subclass's MRO puts after K (mixin_super); `super(Cj, self).m()` the same after Cj
  (super_calls, super_explicit_class); `self.m()` in K runs what K's MRO finds, or,
  when it finds nothing, what each subclass's MRO finds (mixin_self); `C().m()` calls C,
  the `__init__` and the m C's MRO finds (constructor_init, init_via_mro). Overrides a
  subclass's instance reaches besides are allowed (self_dispatch, mro_multiple), so they
  are checked by precision only.
- The test's own model of those rules is checked against the trace too: an edge it
  requires that CPython never takes fails the test, not the binder.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import HealthCheck, example, given, note, settings
from hypothesis import strategies as st

from anchor_ls.index import Index

NAMES = ("f", "g", "h")  # called on instances by the module functions
METHODS = (*NAMES, "__init__")  # defined and called from bodies
MAX_CLASSES = 7


@dataclass
class Klass:
    name: str
    module: str  # "a" or "b"; b may import from a, never the other way
    bases: list[int]
    # name -> [("super" | "super<j>" | "self", called name)], or None for `name = None`
    methods: dict[str, list[tuple[str, str]] | None]


@dataclass
class Use:
    name: str
    module: str
    cls: int
    method: str


@dataclass
class Repo:
    classes: list[Klass]
    uses: list[Use]
    import_module: bool  # b reaches a's classes as `a.C0` instead of `from a import C0`
    mros: list[list[int]] = field(default_factory=list)

    def ident(self, i: int, method: str | None = None) -> str:
        k = self.classes[i]
        return f"{k.module}.py:{k.name}" + (f".{method}" if method else "")


def c3(bases: list[int], mros: list[list[int]], me: int) -> list[int] | None:
    """The C3 linearization of a class `me` with these bases, or None where Python
    raises TypeError (also for a repeated base)."""
    if len(set(bases)) != len(bases):
        return None
    seqs = [list(mros[b]) for b in bases] + [list(bases)]
    out = [me]
    while True:
        seqs = [s for s in seqs if s]
        if not seqs:
            return out
        for s in seqs:
            head = s[0]
            if not any(head in t[1:] for t in seqs):
                break
        else:
            return None
        out.append(head)
        for t in seqs:
            if t[0] == head:
                del t[0]


@st.composite
def repos(draw: st.DrawFn) -> Repo:
    count = draw(st.integers(1, MAX_CLASSES))
    two = draw(st.booleans())
    import_module = draw(st.booleans())
    classes: list[Klass] = []
    mros: list[list[int]] = []

    def name_for(i: int, module: str) -> str:
        """C<i>, or in b reached through `import a`, maybe the name of a class of a."""
        if module == "b" and import_module:
            taken = {k.name for k in classes if k.module == "b"}
            free = sorted({k.name for k in classes if k.module == "a"} - taken)
            if free and draw(st.booleans()):
                return draw(st.sampled_from(free))
        return f"C{i}"

    for i in range(count):
        module = draw(st.sampled_from(("a", "b"))) if two else "a"
        seen = [j for j in range(i) if classes[j].module in ("a", module)]
        wanted = draw(st.lists(st.sampled_from(seen), unique=True, max_size=3)) if seen else []
        bases: list[int] = []
        for b in wanted:  # keep the hierarchies CPython accepts: drop a base it would refuse
            if c3([*bases, b], mros, i) is not None:
                bases.append(b)
        line = c3(bases, mros, i)
        assert line is not None
        mros.append(line)
        # `super(Cj, self)` names a class of the MRO: the lookup starts after it
        hows = st.sampled_from(("super", "self", *(f"super{j}" for j in line)))
        methods: dict[str, list[tuple[str, str]] | None] = {}
        calls = st.lists(st.tuples(hows, st.sampled_from(METHODS)), max_size=3)
        for name in METHODS:
            if draw(st.booleans()):  # a def, now and then a `name = None` hiding the bases'
                hidden = st.none() if name in NAMES else calls  # `__init__ = None`: no instance
                methods[name] = draw(st.one_of(calls, calls, calls, hidden))
        classes.append(Klass(name_for(i, module), module, bases, methods))
    uses = []
    for k, (cls, method, in_b) in enumerate(
        draw(
            st.lists(
                st.tuples(st.integers(0, count - 1), st.sampled_from(NAMES), st.booleans()),
                max_size=3,
            )
        )
    ):
        module = "b" if two and in_b else classes[cls].module
        uses.append(Use(f"use{k}", module, cls, method))
    return Repo(classes, uses, import_module, mros)


def render(repo: Repo) -> dict[str, str]:
    """The files of repo: a.py, and b.py when a class or use is there."""
    out: dict[str, list[str]] = {"a": [], "b": []}
    named = {  # the classes b names: bases, super(Cj, self), C() in a module function
        *(b for k in repo.classes if k.module == "b" for b in k.bases),
        *(
            int(how[5:])
            for k in repo.classes
            if k.module == "b"
            for body in k.methods.values()
            for how, _ in body or ()
            if how[5:]
        ),
        *(u.cls for u in repo.uses if u.module == "b"),
    }
    needed_in_b = sorted(named)

    def ref(i: int, here: str) -> str:
        k = repo.classes[i]
        if k.module == here or not repo.import_module:
            return k.name
        return f"a.{k.name}"

    imported = [repo.classes[i].name for i in needed_in_b if repo.classes[i].module == "a"]
    for k in repo.classes:
        lines = out[k.module]
        bases = ", ".join(ref(b, k.module) for b in k.bases)
        lines.append(f"class {k.name}({bases}):" if bases else f"class {k.name}:")
        if not k.methods:
            lines.append("    pass")
        for name, body in k.methods.items():
            if body is None:
                lines.append(f"    {name} = None")
                continue
            lines.append(f"    def {name}(self):")
            if not body:
                lines.append("        pass")
            for how, called in body:
                target = {"super": "super()", "self": "self"}.get(how)
                if target is None:
                    target = f"super({ref(int(how[5:]), k.module)}, self)"
                lines += [
                    "        try:",
                    f"            {target}.{called}()",
                    "        except (AttributeError, TypeError):",
                    "            pass",
                ]
        lines.append("")
    for u in repo.uses:
        out[u.module] += [f"def {u.name}():", f"    {ref(u.cls, u.module)}().{u.method}()", ""]
    files = {"a.py": "\n".join(out["a"]) + "\n"}
    if out["b"]:
        head = []
        if imported:
            names = ", ".join(imported)
            head = ["import a", ""] if repo.import_module else [f"from a import {names}", ""]
        files["b.py"] = "\n".join(head + out["b"]) + "\n"
    return files


# Run in the child: swap every function and method of the generated modules for a
# recorder, run each method on an instance of each class deriving from its class and
# each module function, print the (caller, callee) pairs seen as JSON.
DRIVER = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
mods = [__import__(name) for name in sys.argv[2:]]
edges = set()
top = [None]

def ident(fn):
    return fn.__module__ + ".py:" + fn.__qualname__

def recorder(fn):
    me = ident(fn)
    def run(*args):
        if top[0] is None:
            top[0] = me
            try:
                return fn(*args)
            finally:
                top[0] = None
        edges.add((top[0], me))  # a call from a body: noted, not followed
    return run

classes, functions = [], []
for mod in mods:
    for name, value in list(vars(mod).items()):
        if getattr(value, "__module__", None) != mod.__name__:
            continue  # an imported name
        if isinstance(value, type):
            classes.append(value)
            for attr, fn in list(vars(value).items()):
                if callable(fn) and (attr == "__init__" or not attr.startswith("__")):
                    setattr(value, attr, recorder(fn))
        elif callable(value):
            functions.append(recorder(value))
            setattr(mod, name, functions[-1])
for K in classes:
    for attr, fn in list(vars(K).items()):
        if not callable(fn) or attr.startswith("__") and attr != "__init__":
            continue
        for X in classes:
            if issubclass(X, K):
                fn(X())
for fn in functions:
    try:
        fn()
    except (AttributeError, TypeError):  # `C().m()` where C's MRO has no m, or None
        pass
print(json.dumps(sorted(edges)))
"""


def runtime_edges(root: Path, modules: list[str]) -> set[tuple[str, str]]:
    driver = root.parent / "driver.py"
    driver.write_text(DRIVER, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-I", str(driver), str(root), *modules],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return {(a, b) for a, b in json.loads(done.stdout)}


def first_in(repo: Repo, line: list[int], name: str) -> int | None:
    """The class of line whose def of name a lookup finds: None where no class binds it,
    or the first one that does binds it to None."""
    for c in line:
        if name in repo.classes[c].methods:
            return None if repo.classes[c].methods[name] is None else c
    return None


def subclasses_of(repo: Repo, k: int) -> list[int]:
    return [x for x in range(len(repo.classes)) if x != k and k in repo.mros[x]]


def required_edges(repo: Repo) -> set[tuple[str, str]]:
    """What the accuracy conventions require the graph to hold (see the module doc)."""
    out: set[tuple[str, str]] = set()
    for k, klass in enumerate(repo.classes):
        for method, body in klass.methods.items():
            src = repo.ident(k, method)
            if body is None:
                continue
            for how, called in body:
                if how == "self":
                    own = first_in(repo, repo.mros[k], called)
                else:  # the MRO after k, or after the class super(Cj, self) names
                    start = k if how == "super" else int(how[5:])
                    line = repo.mros[k]
                    own = first_in(repo, line[line.index(start) + 1 :], called)
                if own is not None:
                    out.add((src, repo.ident(own, called)))
                    continue
                for x in subclasses_of(repo, k):
                    line = repo.mros[x]  # self: all of it; super(): after k or Cj
                    after = line if how == "self" else line[line.index(start) + 1 :]
                    found = first_in(repo, after, called)
                    if found is not None:
                        out.add((src, repo.ident(found, called)))
    for u in repo.uses:
        src = f"{u.module}.py:{u.name}"
        out.add((src, repo.ident(u.cls)))
        init = first_in(repo, repo.mros[u.cls], "__init__")  # constructor_init, init_via_mro
        if init is not None:
            out.add((src, repo.ident(init, "__init__")))
        found = first_in(repo, repo.mros[u.cls], u.method)
        if found is not None:
            out.add((src, repo.ident(found, u.method)))
    return out


def check(repo: Repo) -> None:
    files = render(repo)
    for name, text in files.items():
        note(f"--- {name}\n{text}")
    with tempfile.TemporaryDirectory(prefix="mro-diff-") as tmp:
        root = Path(tmp) / "repo"
        root.mkdir()
        for name, text in files.items():
            (root / name).write_text(text, encoding="utf-8")
        seen = runtime_edges(root, [n.removesuffix(".py") for n in files])
        limit = sys.getrecursionlimit()
        index = Index(root, use_cache=False)
        index.build()
        sys.setrecursionlimit(limit)  # the build raises it; hypothesis warns of a change
        graph = {(e.src, e.dst) for e in index.graph.edges("calls")}
    constructors = {(f"{u.module}.py:{u.name}", repo.ident(u.cls)) for u in repo.uses}
    required = required_edges(repo)
    # The test's own model of the conventions must agree with CPython.
    unseen = required - constructors - seen
    assert not unseen, f"the test's model expects edges CPython never took: {sorted(unseen)}"
    impossible = graph - seen - constructors
    assert not impossible, f"call edges no instance of any class takes: {sorted(impossible)}"
    missing = required - graph
    assert not missing, f"call edges CPython takes that the graph lacks: {sorted(missing)}"


@settings(
    max_examples=150,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(repos())
# What it found (fixed; fixtures/accuracy/super_explicit_class): super(C2, self).g() in
# C3(C2, C1) is C1.g, after C2 in C3's MRO, not C0.g of C2's own MRO ...
@example(
    Repo(
        classes=[
            Klass("C0", "a", [], {"g": []}),
            Klass("C1", "a", [0], {"g": []}),
            Klass("C2", "a", [0], {}),
            Klass("C3", "a", [2, 1], {"h": [("super2", "g")]}),
        ],
        uses=[],
        import_module=False,
        mros=[[0], [1, 0], [2, 0], [3, 2, 1, 0]],
    )
)
# ... and super(C0, self).f() in C2(C0) is nothing, not the C1.f that C3(C0, C1), no C2,
# puts after C0.
@example(
    Repo(
        classes=[
            Klass("C0", "a", [], {}),
            Klass("C1", "a", [], {"f": []}),
            Klass("C2", "a", [0], {"h": [("super0", "f")]}),
            Klass("C3", "a", [0, 1], {}),
        ],
        uses=[],
        import_module=False,
        mros=[[0], [1], [2, 0], [3, 0, 1]],
    )
)
def test_method_calls_through_class_hierarchies_match_cpython(repo: Repo) -> None:
    check(repo)
