"""Regression failures: which pytest tests failed, and whether they also fail at the base commit.

Parsing is pure: failed node ids come from pytest's `FAILED|ERROR <nodeid>` summary lines of the
full stream, before any tail is cut. A re-run verdict reads the `-v` line of that one test. The
rules: a test with at least one passing and one failing base run is flakyAtBase, three
failures brokenAtBase (it excuses nothing), three passes neither, anything else unclassified.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

from forge.attempt.record import RegressionFailure

MAX_RERUN_TESTS = 10
RUNS_PER_TEST = 3
RERUN_TIMEOUT_MS = 300_000
_UNATTRIBUTED_MARKERS = ("INTERNALERROR", "Interrupted:", "Fatal Python error:", "+++ Timeout +++")


def is_pytest(argv: Sequence[str]) -> bool:
    return _pytest_index(argv) is not None


def rerun_argv(argv: Sequence[str], nodeid: str) -> tuple[str, ...]:
    """The check's argv up to `pytest`, then `-p no:cacheprovider -v <nodeid>` (O-21)."""
    index = _pytest_index(argv)
    assert index is not None
    return (*argv[: index + 1], "-p", "no:cacheprovider", "-v", nodeid)


def _pytest_index(argv: Sequence[str]) -> int | None:
    for index, arg in enumerate(argv):
        if os.path.basename(arg) in ("pytest", "py.test"):
            return index
        if arg == "-m" and tuple(argv[index + 1 : index + 2]) == ("pytest",):
            return index + 1
    return None


@dataclass(frozen=True)
class FailedTests:
    nodeids: tuple[str, ...]
    """Sorted, unique."""
    unattributed: tuple[str, ...]
    """Why the failure is not fully explained by named tests (empty when it is)."""


def failed_tests(stdout: str, *, exit_code: int | None, complete: bool) -> FailedTests:
    """Failed node ids and unattributed causes from one pytest stream."""
    nodeids: set[str] = set()
    unattributed: list[str] = []
    for line in stdout.splitlines():
        for prefix in ("FAILED ", "ERROR "):
            if line.startswith(prefix):
                nodeid = split_nodeid(line[len(prefix) :])
                if "::" in nodeid:
                    nodeids.add(nodeid)
                else:
                    unattributed.append(f"error in {nodeid}")
        if any(marker in line for marker in _UNATTRIBUTED_MARKERS):
            unattributed.append(line.strip()[:200])
    if not complete:
        unattributed.append("the check did not complete (timeout, output cap or signal)")
    elif exit_code is not None and exit_code < 0:
        unattributed.append(f"killed by signal {-exit_code}")
    elif exit_code not in (0, None) and not nodeids:
        unattributed.append(f"exit status {exit_code} with no failed test")
    return FailedTests(tuple(sorted(nodeids)), tuple(unattributed))


def split_nodeid(rest: str) -> str:
    """The node id at the start of `rest`, cut before ` - <message>` outside any `[...]`."""
    depth = 0
    for index, char in enumerate(rest):
        if char == "[":
            depth += 1
        elif char == "]":
            depth = max(0, depth - 1)
        elif depth == 0 and rest.startswith(" - ", index):
            return rest[:index]
    return rest.strip()


def rerun_verdict(
    stdout: str, nodeid: str, *, exit_code: int | None, timed_out: bool
) -> str | None:
    """`pass`, `fail` or None (undecided) for one base re-run of `nodeid` under `-v`."""
    started = False
    for line in stdout.splitlines():
        if not line.startswith(nodeid):
            continue
        started = True
        tail = line[len(nodeid) :]
        if " FAILED" in tail or " ERROR" in tail:
            return "fail"
        if " PASSED" in tail:
            return "pass" if exit_code == 0 else None
    return "fail" if timed_out and started else None


def classify(package: str, test: str, verdicts: Sequence[str | None]) -> RegressionFailure:
    fails = sum(1 for v in verdicts if v == "fail")
    passes = sum(1 for v in verdicts if v == "pass")
    flaky = fails >= 1 and passes >= 1
    broken = fails == RUNS_PER_TEST
    neither = passes == RUNS_PER_TEST
    return RegressionFailure(
        package=package,
        test=test,
        flaky_at_base=flaky,
        broken_at_base=broken,
        base_fails=fails,
        base_passes=passes,
        unclassified=not (flaky or broken or neither),
    )


def unclassified_entry(package: str, test: str) -> RegressionFailure:
    return RegressionFailure(
        package=package,
        test=test,
        flaky_at_base=False,
        broken_at_base=False,
        base_fails=0,
        base_passes=0,
        unclassified=True,
    )


def package_and_test(check_dir: str, nodeid: str) -> tuple[str, str]:
    """`package` = the check's dir joined with the id's file; `test` = the rest of the id."""
    file, _, test = nodeid.partition("::")
    package = file if check_dir == "." else f"{check_dir}/{file}"
    return package, test
