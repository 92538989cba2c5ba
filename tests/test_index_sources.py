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


def test_files_kept_as_read_until_packed_read_back_the_same() -> None:
    sources = Sources()
    data = {f"m{i}.py": f"x = {i}  # größe\n".encode() * 40 for i in range(RECENT + 8)}
    for rel, text in data.items():
        sources.put(rel, text, pack=False)
    assert len(sources) == len(data) and "m0.py" in sources
    assert not sources.is_ascii("m0.py") and sources.size("m0.py") == len(data["m0.py"])
    sources.pack()
    assert len(sources) == len(data)
    assert all(sources.get(rel, keep=False) == text for rel, text in data.items())
    sources.put("m1.py", b"y = 1\n", pack=False)  # an edit before the next pack
    sources.pop("m2.py")
    assert sources.get("m1.py") == b"y = 1\n" and sources.get("m2.py") is None
    assert len(sources) == len(data) - 1
