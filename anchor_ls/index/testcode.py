"""Which code is test code, by the pytest and unittest layout conventions; which is demo code.

Tests get their own relation (test_ref): a helper called from hundreds of tests
should not list them among its callers. Demo code (examples, docs, demos, tutorials,
samples, and `if __name__ == "__main__":` blocks, see anchor_ls.tags.rank) stays a
caller but is ranked after the rest where a list is capped.
"""

from __future__ import annotations

import re
from functools import lru_cache

_TEST_DIR = re.compile(r"(?:^|/)(?:tests?|testing|[^/]*_tests?)/")
# DRF's sdist ships tutorial/ (a Django project built in its docs' tutorial)
_DEMO_DIR = re.compile(r"(?:^|/)(?:examples?|docs?|demos?|tutorials?|samples?)/")
_TEST_FILE = re.compile(r"(?:^|/)(?:test_[^/]*|[^/]*_test|tests|conftest)\.pyi?$")


@lru_cache(maxsize=65536)
def is_test_path(relpath: str) -> bool:
    """Files under a test/tests/testing folder, test_*.py, *_test.py, tests.py, conftest.py."""
    return bool(_TEST_DIR.search(relpath) or _TEST_FILE.search(relpath))


def is_test_name(name: str) -> bool:
    """A function or method pytest and unittest collect as a test."""
    return name.startswith("test")


@lru_cache(maxsize=65536)
def is_demo_path(relpath: str) -> bool:
    """Files under an example(s)/doc(s)/demo(s)/tutorial(s)/sample(s) folder: code that
    shows a library in use."""
    return bool(_DEMO_DIR.search(relpath))
