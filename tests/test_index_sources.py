"""The index's compressed copy of every file's bytes."""

from __future__ import annotations

from anchor_ls.index.sources import RECENT, Sources


def test_bytes_come_back_as_put_and_recent_ones_as_the_same_object() -> None:
    sources = Sources()
    data = {f"m{i}.py": f"def f{i}():\n    return {i}\n".encode() * 50 for i in range(RECENT + 5)}
    for rel, text in data.items():
        sources.put(rel, text)
    assert all(sources.get(rel) == text for rel, text in data.items())
    assert all(sources.size(rel) == len(text) for rel, text in data.items())
    last = sources.get("m3.py")
    assert sources.get("m3.py") is last  # read again without decompressing
    assert sources.get("gone.py") is None and sources.size("gone.py") == 0
    sources.pop("m3.py")
    assert sources.get("m3.py") is None and "m3.py" not in sources
    assert len(sources) == RECENT + 4


def test_a_glance_does_not_push_out_the_files_read_last() -> None:
    sources = Sources()
    for i in range(2 * RECENT):
        sources.put(f"m{i}.py", b"x = %d\n" % i)
    kept = sources.get("m1.py")  # read in full: held from now on
    for i in range(2, 2 * RECENT):  # an edit's dependents, each read once
        assert sources.get(f"m{i}.py", keep=False) == b"x = %d\n" % i
    assert sources.get("m1.py") is kept


def test_ascii_is_known_without_reading_the_file() -> None:
    sources = Sources()
    sources.put("a.py", b"x = 1\n")
    sources.put("u.py", "x = 'größe'\n".encode())
    assert sources.is_ascii("a.py") and not sources.is_ascii("u.py")
    sources.put("u.py", b"x = 2\n")  # edited to plain ASCII
    sources.put("a.py", "y = 'ß'\n".encode())
    assert sources.is_ascii("u.py") and not sources.is_ascii("a.py")
    sources.pop("a.py")
    assert not sources.is_ascii("a.py")  # not indexed: nothing to say
