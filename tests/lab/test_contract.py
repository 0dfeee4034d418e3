"""The harness contract, the transient classifier, redaction and pytest parsing (pure)."""

from __future__ import annotations

import json

import pytest

from forge.attempt.harness import HarnessReport, is_transient, parse_report, served_model_mismatch
from forge.attempt.redact import Redactor
from forge.attempt.regression import (
    classify,
    failed_tests,
    is_pytest,
    rerun_argv,
    rerun_verdict,
    split_nodeid,
)


def report(**fields: object) -> bytes:
    return json.dumps({"schemaVersion": "v1", "outcome": "failed", **fields}).encode()


def test_parse_valid_report_ignores_extra_keys() -> None:
    parsed = parse_report(
        report(
            outcome="completed",
            usage={"costUsd": 0.2, "model": "m1", "costBasis": "reported"},
            extra=1,
        )
    )
    assert parsed is not None
    assert (parsed.outcome, parsed.cost_usd, parsed.model, parsed.cost_basis) == (
        "completed",
        0.2,
        "m1",
        "reported",
    )


@pytest.mark.parametrize(
    "stdout",
    [
        b"",
        b"garbage",
        report() + b"\n" + report(),
        b'{"schemaVersion": "v2", "outcome": "failed"}',
        report(outcome="done"),
        b"[1]",
        report(usage=[1]),
    ],
)
def test_anything_else_is_invalid(stdout: bytes) -> None:
    assert parse_report(stdout) is None


def make(
    outcome: str = "failed",
    terminal: str | None = "api_error",
    error: str | None = None,
    status: int | None = None,
) -> HarnessReport:
    return HarnessReport(outcome, None, None, None, False, terminal, error, status)


@pytest.mark.parametrize(
    ("item", "transient"),
    [
        (make(error="request failed: ECONNRESET"), True),
        (make(error="getaddrinfo ENOTFOUND api.anthropic.com"), True),
        (make(error="socket hang up"), True),
        (make(error="Connection error."), True),
        (make(error="the model went to sleep mid-response"), True),
        (make(terminal=None, error="API Error: 529 overloaded"), True),
        (make(terminal=None, error="API Error: 503 Service Unavailable"), True),
        (make(terminal=None, error="overloaded_error"), True),
        (make(terminal=None, error="boom", status=502), True),
        (make(error="API Error: 400 bad request ECONNRESET"), False),
        (make(error="invalid_request_error: ECONNRESET"), False),
        (make(error="authentication_error ETIMEDOUT"), False),
        (make(error="permission_error"), False),
        (make(error="boom"), False),
        (make(terminal="refusal", error="ECONNRESET"), False),
        (make(outcome="completed", error="ECONNRESET"), False),
        (make(error="x", status=404), False),
    ],
)
def test_transient_classifier(item: HarnessReport, transient: bool) -> None:
    assert is_transient(item) is transient


def test_model_mismatch() -> None:
    served = HarnessReport("completed", None, "m2", None, False, None, None, None)
    assert served_model_mismatch(served, "m1")
    assert not served_model_mismatch(served, "m2")
    assert not served_model_mismatch(make(), "m1")
    assert served_model_mismatch(
        HarnessReport("completed", None, None, None, True, None, None, None), "m1"
    )


def test_redaction() -> None:
    redactor = Redactor({"MY_API_TOKEN": "s3cr3tvalue", "SHORT_KEY": "abc", "HOME": "/home/x"})
    text = redactor.text(
        "v=s3cr3tvalue k=abc ghp_abcdefghijklmnopqrstuvwxyz Bearer xyz.abc "
        "sk-ant-api03-xyz AKIAABCDEFGHIJKLMNOP /home/x"
    )
    assert "[REDACTED:MY_API_TOKEN]" in text
    assert "k=abc" in text
    assert "ghp_" not in text
    assert "sk-ant" not in text
    assert "AKIA" not in text
    assert "Bearer xyz" not in text
    assert "/home/x" in text
    assert len(redactor.tail(b"x" * 10_000)) == 8192


PYTEST_OUT = """\
..F.E
=========================== short test summary info ============================
FAILED tests/test_a.py::test_x - assert 1 == 2
FAILED tests/test_a.py::test_p[a - b] - AssertionError
ERROR tests/test_b.py::test_y - fixture 'z' not found
FAILED tests/test_a.py::test_x - assert 1 == 2
"""


def test_failed_tests_from_summary_lines() -> None:
    parsed = failed_tests(PYTEST_OUT, exit_code=1, complete=True)
    assert parsed.nodeids == (
        "tests/test_a.py::test_p[a - b]",
        "tests/test_a.py::test_x",
        "tests/test_b.py::test_y",
    )
    assert parsed.unattributed == ()


@pytest.mark.parametrize(
    ("stdout", "exit_code", "complete", "cause"),
    [
        ("ERROR tests/test_c.py - ImportError\n", 2, True, "error in tests/test_c.py"),
        ("INTERNALERROR> boom\n", 3, True, "INTERNALERROR> boom"),
        ("", 1, True, "exit status 1 with no failed test"),
        ("", -9, True, "killed by signal 9"),
        ("", None, False, "did not complete"),
    ],
)
def test_unattributed_failures(
    stdout: str, exit_code: int | None, complete: bool, cause: str
) -> None:
    assert any(
        cause in item
        for item in failed_tests(stdout, exit_code=exit_code, complete=complete).unattributed
    )


def test_split_nodeid_keeps_brackets() -> None:
    assert split_nodeid("t.py::f[x - y] - msg") == "t.py::f[x - y]"
    assert split_nodeid("t.py::f") == "t.py::f"


def test_pytest_detection_and_rerun_argv() -> None:
    argv = ("/usr/bin/env", "A=1", "python", "-m", "pytest", "-q", "tests")
    assert is_pytest(argv)
    assert rerun_argv(argv, "t.py::f") == (
        "/usr/bin/env",
        "A=1",
        "python",
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        "-v",
        "t.py::f",
    )
    assert is_pytest(("/venv/bin/pytest",))
    assert not is_pytest(("make", "test"))


@pytest.mark.parametrize(
    ("stdout", "exit_code", "timed_out", "verdict"),
    [
        ("t.py::f PASSED  [100%]\n", 0, False, "pass"),
        ("t.py::f PASSED  [100%]\n", 1, False, None),
        ("t.py::f FAILED  [100%]\n", 1, False, "fail"),
        ("t.py::f ", None, True, "fail"),
        ("", None, True, None),
        ("ERROR collecting t.py\n", 2, False, None),
    ],
)
def test_rerun_verdicts(
    stdout: str, exit_code: int | None, timed_out: bool, verdict: str | None
) -> None:
    assert rerun_verdict(stdout, "t.py::f", exit_code=exit_code, timed_out=timed_out) == verdict


def test_classification() -> None:
    flaky = classify("tests/t.py", "test_f", ["fail", "pass", "fail"])
    assert (flaky.package, flaky.test, flaky.flaky_at_base, flaky.base_fails) == (
        "tests/t.py",
        "test_f",
        True,
        2,
    )
    assert classify("p", "t", ["fail"] * 3).broken_at_base
    passed = classify("p", "t", ["pass"] * 3)
    assert not passed.flaky_at_base
    assert not passed.broken_at_base
    assert not passed.unclassified
    assert classify("p", "t", ["fail", None, "fail"]).unclassified
