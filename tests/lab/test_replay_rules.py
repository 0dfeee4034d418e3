"""Replay's pure rules: linked issues, skips, hidden test node ids, collection-error diagnosis,
the interface contract and untrusted text (issue #18)."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from forge.lab.contract import build_contract
from forge.lab.replay_files import fenced
from forge.lab.replay_github import ChangedFile, PullRequest, decode_issue, linked_issue_number
from forge.lab.replay_pytest import MissingName, diagnose, outcomes, parse_events
from forge.lab.replay_rules import (
    allowed_files,
    defined_tests,
    hidden_test_files,
    metadata_skip,
    nodeids_too_long,
    project_skip,
)
from forge.untrusted import one_line, prose


@pytest.mark.parametrize(
    ("body", "title", "expected"),
    [
        ("Closes #12 and #13", "Fix #99", 12),
        ("fixes: #7", "", 7),
        ("Resolved #8", "", 8),
        ("see #4, closes owner/other#5", "Title #6", 6),
        ("no reference", "Fix #3 (#31)", 3),
        ("", "No number", None),
        ("prefixes#2 are not references", "", None),
    ],
)
def test_the_linked_issue_is_the_first_closing_keyword_else_the_titles_first_reference(
    body: str, title: str, expected: int | None
) -> None:
    assert linked_issue_number(body, title) == expected


def pull(*files: ChangedFile, changed: int | None = None) -> PullRequest:
    return PullRequest(
        number=1,
        title="t",
        body="Closes #2",
        merged=True,
        merge_commit="a" * 40,
        base_sha="b" * 40,
        base_ref="main",
        changed_files=len(files) if changed is None else changed,
        files=files,
    )


def changed(
    path: str, status: str = "modified", lines: int = 1, previous: str | None = None
) -> ChangedFile:
    return ChangedFile(path, status, lines, 0, previous)


def test_metadata_skips_in_the_seeds_order() -> None:
    code = changed("calc.py")
    test = changed("tests/test_calc.py")
    assert metadata_skip(pull(code), 2).startswith("no test changes")
    assert metadata_skip(pull(code, changed("tests/test_x.py", "removed")), 2).startswith(
        "no test changes"
    )
    assert metadata_skip(pull(code, test), None).startswith("no linked issue")
    assert metadata_skip(pull(code, test, changed=26), 2) == "more than 25 changed files (26)"
    assert metadata_skip(pull(code, test, changed=25), 2) is None
    assert metadata_skip(pull(changed("a.py", lines=2000), test), 2) == (
        "more than 2,000 changed lines (2,001)"
    )
    assert metadata_skip(pull(changed("a.py", lines=1999), test), 2) is None
    assert (
        metadata_skip(pull(changed("../x.py"), test), 2) == "infrastructure: unsafe path '../x.py'"
    )


def test_hidden_files_and_allowed_files() -> None:
    request = pull(
        changed("src/calc.py"),
        changed("tests/test_new.py", "renamed", previous="tests/test_old.py"),
        changed("tests/conftest.py", "added"),
        changed("tests/helpers_test.py"),
        changed("tests/test_gone.py", "removed"),
        changed("docs/testing.md"),
    )
    assert [(h.path, h.previous) for h in hidden_test_files(request)] == [
        ("tests/conftest.py", None),
        ("tests/helpers_test.py", None),
        ("tests/test_new.py", "tests/test_old.py"),
    ]
    assert allowed_files(request) == (
        "docs/testing.md",
        "src/calc.py",
        "tests/conftest.py",
        "tests/helpers_test.py",
        "tests/test_gone.py",
        "tests/test_new.py",
        "tests/test_old.py",
    )


def test_the_project_is_the_repository_root() -> None:
    assert project_skip(["tests/test_a.py"], {"pyproject.toml", "tests/test_a.py"}) is None
    assert "no pyproject.toml" in str(project_skip(["tests/test_a.py"], {"tests/test_a.py"}))
    nested = {"setup.cfg", "sub/pyproject.toml", "sub/tests/test_a.py"}
    assert project_skip(["sub/tests/test_a.py"], nested) == (
        "hidden tests outside the project: sub/tests/test_a.py is in the nested project sub"
    )


def test_node_ids_are_the_tests_a_file_defines_at_top_level() -> None:
    source = b"""
import unittest

def helper(): ...
def test_one(): ...
async def test_two(): ...
def testing_prefix_counts(): ...
class TestGroup:
    def test_inner(self): ...
class TestWithInit:
    def __init__(self): ...
class Cases(unittest.TestCase):
    def test_case(self): ...
class Plain:
    def test_ignored(self): ...
"""
    assert defined_tests("tests/test_x.py", source) == [
        "tests/test_x.py::test_one",
        "tests/test_x.py::test_two",
        "tests/test_x.py::testing_prefix_counts",
        "tests/test_x.py::TestGroup",
        "tests/test_x.py::Cases",
    ]
    assert defined_tests("tests/conftest.py", b"import pytest\n") == []
    with pytest.raises(SyntaxError):
        defined_tests("tests/test_bad.py", b"def (:\n")
    assert not nodeids_too_long(["a" * 3999])
    assert nodeids_too_long(["a" * 2000, "b" * 2000])


IMPORT_ERROR = """ImportError while importing test module '/w/base/tests/test_m.py'.
Hint: make sure your test modules/packages have valid Python names.
Traceback:
/usr/lib/python3.11/importlib/__init__.py:126: in import_module
    return _bootstrap._gcd_import(name[level:], package, level)
tests/test_m.py:1: in <module>
    from calc import mul3
E   ImportError: cannot import name 'mul3' from 'calc' (/w/base/calc.py)"""


def test_a_collection_error_names_the_identifier_only_when_a_hidden_test_raised_it() -> None:
    found = diagnose(IMPORT_ERROR, ["tests/test_m.py"], "/w/base")
    assert found.missing == MissingName("import-name", "calc", "mul3")
    assert found.detail == "ImportError: cannot import name 'mul3' from 'calc' (/w/base/calc.py)"
    inside = IMPORT_ERROR.replace(
        "    from calc import mul3", "    import calc\n/w/base/calc.py:3: in <module>\n    import x"
    )
    assert diagnose(inside, ["tests/test_m.py"], "/w/base").in_test_code is False
    module = (
        "tests/test_m.py:2: in <module>\n    import calc.extra\n"
        "E   ModuleNotFoundError: No module named 'calc.extra'"
    )
    assert diagnose(module, ["tests/test_m.py"], "/w").missing == MissingName(
        "module", "calc.extra", None
    )
    attribute = (
        "tests/test_m.py:3: in <module>\n    X = calc.SCALE\n"
        "E   AttributeError: module 'calc' has no attribute 'SCALE'"
    )
    assert diagnose(attribute, ["tests/test_m.py"], "/w").missing == MissingName(
        "module-attribute", "calc", "SCALE"
    )
    syntax = "tests/test_m.py:3: in <module>\nE   NameError: name 'x' is not defined"
    other = diagnose(syntax, ["tests/test_m.py"], "/w")
    assert other.missing is None
    assert other.detail == "NameError: name 'x' is not defined"


def event(nodeid: str, when: str, outcome: str) -> str:
    return json.dumps({"kind": "test", "nodeid": nodeid, "when": when, "outcome": outcome})


def test_outcomes_attribute_reports_to_the_requested_node_ids() -> None:
    events = parse_events(
        "\n".join(
            [
                event("t.py::TestA::test_x", "call", "passed"),
                event("t.py::test_p[1]", "call", "passed"),
                event("t.py::test_p[2]", "call", "failed"),
                event("t.py::test_q", "setup", "failed"),
                "not json",
                '{"kind": "finish", "exitstatus": 1}',
            ]
        )
    )
    result = outcomes(events, ["t.py::TestA", "t.py::test_p", "t.py::test_q", "t.py::test_r"])
    assert result.failed == ("t.py::test_p", "t.py::test_q")
    assert result.passed == ("t.py::TestA",)
    assert events.exitstatus == 1


def reader(files: dict[str, str]) -> Callable[[str], bytes | None]:
    return lambda path: files[path].encode() if path in files else None


def test_the_contract_follows_re_exports_and_skips_what_the_base_has() -> None:
    base = {"pkg/__init__.py": "from .core import old\n", "pkg/core.py": "def old(): ...\n"}
    merge = {
        "pkg/__init__.py": "from .core import old, new\n",
        "pkg/core.py": (
            "def old(): ...\n\n@cache\ndef new(x, *, y=2) -> 'T':\n    '''doc'''\n    return x\n\n"
            "LIMIT: int = compute()\n"
        ),
        "pkg/fresh.py": "class Fresh(Base, metaclass=M):\n    'd'\n    def go(self): return 1\n",
    }
    tests = {
        "tests/test_p.py": (
            b"from pkg import new, old\nimport pkg.core as core\nfrom pkg.fresh import Fresh\n"
            b"import os\n\ndef test():\n    assert core.LIMIT and os.sep and Fresh().go()\n"
        )
    }
    contract = build_contract(
        tests,
        [MissingName("import-name", "pkg", "new"), MissingName("import-name", "pkg", "ghost")],
        base=reader(base),
        merge=reader(merge),
    )
    assert contract.identifiers == ["pkg.ghost", "pkg.new", "pkg.core.LIMIT", "pkg.fresh.Fresh"]
    assert contract.resolved == 3
    assert contract.render() == "\n".join(
        [
            "## Interface contract (from the merged change)",
            "",
            "```python",
            "# module pkg (pkg/__init__.py)",
            "ghost  # declaration not found",
            "@cache",
            "def new(x, *, y=2) -> 'T': ...",
            "```",
            "",
            "```python",
            "# module pkg.core (pkg/core.py)",
            "LIMIT: int = ...",
            "```",
            "",
            "```python",
            "# module pkg.fresh (pkg/fresh.py)",
            "class Fresh(Base, metaclass=M):",
            "    def go(self): ...",
            "```",
            "",
        ]
    )


def test_a_fence_is_longer_than_any_backtick_run_inside() -> None:
    assert fenced("a ```` b") == "`````text\na ```` b\n`````"
    assert fenced("plain", "python") == "```python\nplain\n```"


def test_untrusted_text_is_one_clean_line_cut_by_characters() -> None:
    hostile = "ti\x1b[31mtle\u202e evil\u2066 \x07bell\nnext\tline\r\n"
    assert one_line(hostile) == "title evil bell next line"
    assert one_line("é" * 10, 5) == "éééé…"
    assert prose("a\x1b]0;title\x07b\nc\u200fd") == "ab\ncd"


def test_a_rest_issue_that_is_a_pull_request_says_so() -> None:
    assert decode_issue({"number": 2, "title": "t", "pull_request": {}}).is_pull_request
    assert not decode_issue(
        {"number": 2, "title": "t", "body": None, "state": "open"}
    ).is_pull_request
