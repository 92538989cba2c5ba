"""The syntax layer on bad input: encodings, line endings, binaries and broken code.

`summarize` is a pure function of (path, bytes), so these tests feed it bytes directly.
A broken definition must cost that definition only: what comes before and after it is read.
"""

from __future__ import annotations

import pytest

from anchor_ls.syntax.encoding import declared_encoding
from anchor_ls.syntax.parse import summarize
from anchor_ls.syntax.source import UnreadableSource, decode_source
from anchor_ls.syntax.summary import FileSummary, Scope
from anchor_ls.syntax.words import may_mention, may_mention_of, words_sketch


def scopes(summary: FileSummary) -> dict[str, Scope]:
    return {s.qualname: s for s in summary.scopes if s.qualname}


def called_names(scope: Scope) -> list[str]:
    """The plain names a scope calls (`f()`), in source order."""
    return [c.func[1] for c in scope.calls if c.func[0] == "n"]


def problem_kinds(summary: FileSummary) -> list[str]:
    return [kind for kind, _message in summary.problems]


# ----- encodings -----------------------------------------------------------


def test_latin1_cookie_decodes_identifiers_and_strings() -> None:
    data = (
        "# -*- coding: latin-1 -*-\n"
        'café = "naïve"\n'
        "def fée():\n"
        "    return café\n"
        "def appel():\n"
        "    return fée()\n"
    ).encode("latin-1")
    assert b"\xe9" in data  # really latin-1 bytes, not UTF-8
    summary = summarize("latin.py", data)
    assert summary.encoding == "iso8859-1"
    assert summary.problems == []
    defs = scopes(summary)
    assert set(defs) == {"fée", "appel"}
    assert defs["fée"].line == 3
    assert called_names(defs["appel"]) == ["fée"]
    module = summary.scopes[0]
    assert ("café", ("k", "naïve")) in [(b.name, b.value) for b in module.bindings]


def test_cookie_on_second_line_after_shebang_counts_but_not_after_code() -> None:
    after_shebang = b"#!/usr/bin/env python\n# vim: set fileencoding=latin-1 :\nx = 1\n"
    assert declared_encoding(after_shebang) == "iso8859-1"
    after_code = b"x = 1\n# coding: latin-1\n"
    assert declared_encoding(after_code) == "utf-8"


def test_utf8_bom_is_dropped_and_columns_are_not_shifted() -> None:
    data = b"\xef\xbb\xbfdef b():\n    return 1\n"
    decoded = decode_source(data)
    assert not decoded.text.startswith("\ufeff")
    summary = summarize("bom.py", data)
    b = scopes(summary)["b"]
    assert (b.line, b.end_line) == (1, 2)
    assert b.name_span == (0, 4, 0, 5)
    assert summary.problems == []


def test_undecodable_bytes_are_replaced_and_reported() -> None:
    data = b'def u():\n    s = "\xff\xfe"\n    return g()\n\ndef g():\n    pass\n'
    summary = summarize("undecodable.py", data)
    assert problem_kinds(summary) == ["decode"]
    message = summary.problems[0][1]
    bad_offset = data.index(b"\xff")
    assert "utf-8" in message and f"offset {bad_offset}" in message
    defs = scopes(summary)
    assert set(defs) == {"u", "g"}
    assert called_names(defs["u"]) == ["g"]


def test_a_coding_cookie_naming_no_codec_is_a_decode_problem_read_as_utf8() -> None:
    data = "# -*- coding: no-such-codec -*-\ndef f():\n    return 'é'\n".encode()
    assert declared_encoding(data) == "utf-8"
    summary = summarize("cookie.py", data)
    assert problem_kinds(summary) == ["decode"]
    assert "unknown encoding 'no-such-codec'" in summary.problems[0][1]
    assert set(scopes(summary)) == {"f"}
    # Both at once: one decode problem that says both.
    (kind, message), *rest = summarize("both.py", data + b"x = '\xff'\n").problems
    assert (kind, rest) == ("decode", [])
    assert "no-such-codec" in message and "undecodable bytes" in message


# ----- line endings and whitespace -----------------------------------------


@pytest.mark.parametrize("newline", [b"\r\n", b"\r", b"\n"], ids=["crlf", "cr", "lf"])
def test_line_endings_give_python_line_numbers(newline: bytes) -> None:
    lines = [b"x = 1", b"", b"def c():", b"    pass", b"", b"def d():", b"    c()"]
    summary = summarize("ends.py", newline.join(lines) + newline)
    defs = scopes(summary)
    assert (defs["c"].line, defs["c"].end_line) == (3, 4)
    assert (defs["d"].line, defs["d"].end_line) == (6, 7)
    (site,) = defs["d"].calls
    assert site.span == (6, 4, 6, 5)
    assert summary.line_count == 7
    assert summary.problems == []


def test_mixed_line_endings_in_one_file() -> None:
    summary = summarize("mixed.py", b"def a():\r\n    pass\rdef b():\n    a()\r\n")
    defs = scopes(summary)
    assert (defs["a"].line, defs["b"].line, defs["b"].end_line) == (1, 3, 4)
    assert called_names(defs["b"]) == ["a"]


def test_tab_indentation_nests_methods_in_their_class() -> None:
    data = b"def t():\n\treturn 1\n\nclass T:\n\tdef m(self):\n\t\treturn t()\n"
    summary = summarize("tabs.py", data)
    defs = scopes(summary)
    assert set(defs) == {"t", "T", "T.m"}
    assert summary.scopes[defs["T.m"].parent].qualname == "T"
    assert called_names(defs["T.m"]) == ["t"]
    assert summary.problems == []


# ----- not source at all ---------------------------------------------------


@pytest.mark.parametrize(
    "data",
    [
        b"def n():\n    pass\n\x00\x00",
        b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x10",
        "def f(): pass\n".encode("utf-16"),
    ],
    ids=["nul", "png", "utf16"],
)
def test_binary_content_is_unreadable(data: bytes) -> None:
    with pytest.raises(UnreadableSource) as caught:
        summarize("bin.py", data)
    assert caught.value.kind == "binary"
    assert "NUL" in str(caught.value)


def test_size_limit_is_a_clear_refusal() -> None:
    data = b"x = 1\n" * 100
    assert summarize("ok.py", data, limit=len(data)).problems == []
    with pytest.raises(UnreadableSource) as caught:
        summarize("big.py", data, limit=len(data) - 1)
    assert caught.value.kind == "too-large"
    assert f"{len(data)} bytes" in str(caught.value)


def test_jinja_template_named_py_is_a_syntax_problem_not_a_crash() -> None:
    data = b"{% for x in items %}\n{{ x.name }}\n{% endfor %}\n"
    summary = summarize("template.py", data)
    assert problem_kinds(summary) == ["syntax"]
    assert scopes(summary) == {}


# ----- broken code -----------------------------------------------------------

BEFORE = "@dec\ndef before():\n    helper()\n\n"  # lines 1-4
AFTER = (
    "\n\n@dec\n@other\nclass After:\n    def m(self):\n        before()\n\n"
    "def helper():\n    return before()\n"
)
BROKEN = {
    "unclosed-paren": "def broken():\n    x = (1,\n",
    "bad-parameter": "def broken(:\n    x = = 1\n",
    "double-equals": "def broken():\n    x = = 1\n",
    "dangling-operator": "def broken():\n    return 1 +\n",
    "missing-colon": "def broken()\n    return 1\n",
    "keyword-as-value": "def broken():\n    return class\n",
    "unterminated-string": 'def broken():\n    s = "abc\n',
    "unclosed-decorator": "@dec(1,\ndef broken():\n    pass\n",
}


@pytest.mark.parametrize("middle", list(BROKEN.values()), ids=list(BROKEN))
def test_a_broken_definition_keeps_everything_around_it(middle: str) -> None:
    source = BEFORE + middle + AFTER
    summary = summarize("broken.py", source.encode())
    defs = scopes(summary)
    lines = source.split("\n")
    after_line = lines.index("class After:") + 1
    helper_line = lines.index("def helper():") + 1
    assert {"before", "After", "After.m", "helper"} <= set(defs)
    assert (defs["before"].start_line, defs["before"].line) == (1, 2)
    assert called_names(defs["before"]) == ["helper"]
    assert defs["After"].line == after_line
    assert defs["After"].start_line == after_line - 2  # its decorators
    assert defs["After"].decorators == [("n", "dec"), ("n", "other")]
    assert called_names(defs["After.m"]) == ["before"]
    assert (defs["helper"].line, defs["helper"].end_line) == (helper_line, helper_line + 1)
    assert called_names(defs["helper"]) == ["before"]
    # The module still sees its decorator applications, never calls from inside definitions.
    assert "helper" not in called_names(summary.scopes[0])
    assert problem_kinds(summary) == ["syntax"]
    message = summary.problems[0][1]
    error_line = int(message.split(" at line ")[1].split(",")[0])
    assert 5 <= error_line < after_line - 2, message


def test_definition_text_inside_a_string_does_not_split_a_broken_file() -> None:
    source = (
        "def broken(:\n"
        "    pass\n"
        "\n"
        'DOC = """\n'
        "def not_a_definition():\n"
        "    fake()\n"
        '"""\n'
        "\n"
        "def real():\n"
        "    pass\n"
    )
    summary = summarize("strings.py", source.encode())
    defs = scopes(summary)
    assert "not_a_definition" not in defs
    assert defs["real"].line == 9
    assert problem_kinds(summary) == ["syntax"]


def test_a_clean_file_has_no_problems_and_every_definition() -> None:
    source = BEFORE + "def fine():\n    return 1\n" + AFTER
    summary = summarize("clean.py", source.encode())
    assert summary.problems == []
    assert {"before", "fine", "After", "After.m", "helper"} == set(scopes(summary))


def test_the_words_sketch_rules_out_absent_words_only() -> None:
    text = b"from m import helper\n\ndef run():\n    return helper(x='other')\n"
    words = words_sketch(text)
    for present in (b"helper", b"run", b"other", b"m", b"from"):
        assert may_mention(words, present)
    absent = [b"help", b"helpers", b"runner", b"zzz", b"QuerySet", b"_bench_edit_fn"]
    assert sum(may_mention(words, word) for word in absent) <= 1  # a rare hash collision
    assert may_mention(words, b"django.db")  # not one word: the sketch cannot tell


def test_the_words_sketch_of_a_large_file_still_rules_out_most_absent_words() -> None:
    """The sketch grows with the words of the file: a 4,096-bit one let a quarter of the
    absent names through for large files, and each of those files was read in full.
    (With 32-bit hashes of 6,000 words, an absent name passes once in some 700,000.)"""
    text = b"\n".join(b"def f%d(a%d): return g%d(a%d)" % (i, i, i, i) for i in range(3000))
    words = words_sketch(text)
    assert all(may_mention(words, b"g%d" % i) for i in range(3000))
    absent = [b"h%d" % i for i in range(2000)]
    assert sum(may_mention(words, w) for w in absent) < 0.02 * len(absent)
    assert may_mention(b"", b"anything")  # no sketch: nothing can be ruled out


def test_many_names_asked_of_one_sketch_at_once_answer_as_one_at_a_time() -> None:
    """may_mention_of reads a sketch once for a round's hundreds of names: the same
    answer as may_mention of each."""
    words = words_sketch(b"from m import helper\n\ndef run():\n    return helper.msg\n")
    names = ["helper", "msg", "help", "zzz", "django.db", "run"]
    probes = [(name, name.encode()) for name in names]
    assert may_mention_of(words, probes) == {n for n, b in probes if may_mention(words, b)}
    assert may_mention_of(b"", probes) == set(names)


@pytest.mark.parametrize("codec", ["hex", "rot13", "base64", "zlib", "undefined"])
def test_a_coding_cookie_naming_no_text_encoding_is_a_decode_problem_read_as_utf8(
    codec: str,
) -> None:
    """Python refuses such a file; the index read it with the codec and crashed (LookupError
    for `hex`, UnicodeError for `undefined`), so one file stopped the whole build."""
    data = f"# coding: {codec}\ndef f():\n    return 1\n".encode()
    assert declared_encoding(data) == "utf-8"
    summary = summarize("cookie.py", data)
    assert problem_kinds(summary) == ["decode"]
    assert f"encoding {codec!r}" in summary.problems[0][1]
    assert set(scopes(summary)) == {"f"}
