"""Generated files of hostile size, shared by tests/test_index_hostile_sizes.py (which counts
the work) and benchmarks/hostile_sizes.py (which times it)."""

from __future__ import annotations


def stacked_decorators(n: int, *, wraps: bool = False) -> str:
    """One function under n decorators, wrapping ones and ones that hand it back in turn;
    wraps: the wrapping ones use functools.wraps."""
    head = (
        ("import functools\n\n\n" if wraps else "")
        + "def wrap(f):\n"
        + ("    @functools.wraps(f)\n" if wraps else "")
        + "    def inner(*a, **k):\n"
        "        return f(*a, **k)\n"
        "    return inner\n\n\n"
        "def same(f):\n"
        "    return f\n\n\n"
    )
    decorators = "".join("@wrap\n" if i % 2 else "@same\n" for i in range(n))
    return head + decorators + "def target():\n    return 1\n\n\ndef use():\n    target()\n"


def self_chain(n: int, shape: str = "calls") -> str:
    """A chain whose every class has a method working on self: calling K0's m ("calls"),
    the method of the class before ("steps"), or reading what its __init__ stored
    ("stores"); the last class's instance calls the last method."""
    out = ["class K0:\n    def m(self):\n        return 1\n\n\n"]
    for i in range(1, n):
        before = "m" if i == 1 else f"m{i - 1}"
        body = {
            "calls": f"    def m{i}(self):\n        return self.m()\n",
            "steps": f"    def m{i}(self):\n        return self.{before}()\n",
            "stores": (
                f"    def __init__(self):\n        self.x{i} = K0()\n\n"
                f"    def m{i}(self):\n        return self.x{i}.m()\n"
            ),
        }[shape]
        out.append(f"class K{i}(K{i - 1}):\n{body}\n\n")
    out.append(f"def use():\n    return K{n - 1}().m{n - 1}()\n")
    return "".join(out)
