"""pytest runs of the hidden tests at base and at merge, read through a one-file event plugin.

The plugin (written by replay to a private directory and loaded with `-p`) appends one JSON line
per collection failure, test report and session end, so the outcome of every hidden test and the
full text of every collection error are read exactly, never from a terminal-width summary.
Everything here except the plugin's own source is pure.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from forge.lab.replay_layout import NAMES_ENV

PLUGIN_MODULE = "forge_replay_events"
EVENTS_ENV = "FORGE_REPLAY_EVENTS"
PLUGIN_SOURCE = f'''"""forge replay: one JSON line per pytest report, appended to ${EVENTS_ENV};
at the end, the file each of the project's top-level modules (${NAMES_ENV}) was imported from."""
import json
import os
import sys


def _write(event):
    with open(os.environ["{EVENTS_ENV}"], "a", encoding="utf-8") as handle:
        handle.write(json.dumps(event) + "\\n")


def pytest_collectreport(report):
    if report.failed:
        _write({{"kind": "collect", "nodeid": report.nodeid, "text": str(report.longrepr)}})


def pytest_runtest_logreport(report):
    _write({{"kind": "test", "nodeid": report.nodeid, "when": report.when,
            "outcome": report.outcome}})


def _location(module):
    where = getattr(module, "__file__", None)
    return os.path.realpath(where) if isinstance(where, str) else None


def pytest_sessionfinish(session, exitstatus):
    names = [n for n in os.environ.get("{NAMES_ENV}", "").split(",") if n in sys.modules]
    _write({{"kind": "imported",
            "modules": {{n: _location(sys.modules[n]) for n in names}}}})
    _write({{"kind": "finish", "exitstatus": int(exitstatus)}})
'''


def pytest_argv(python: str, nodeids: Sequence[str], *, events: bool) -> list[str]:
    """Only the hidden tests, no cache, quiet; the event plugin when replay reads the outcome."""
    argv = [python, "-m", "pytest", "-p", "no:cacheprovider", "-q"]
    if events:
        argv += ["-p", PLUGIN_MODULE]
    return [*argv, "--", *nodeids]


@dataclass(frozen=True)
class CollectError:
    nodeid: str
    text: str


@dataclass
class RunEvents:
    collect_errors: list[CollectError] = field(default_factory=list)
    reports: list[tuple[str, str, str]] = field(default_factory=list)
    """(nodeid, when, outcome) per test report."""
    exitstatus: int | None = None
    """pytest's own exit status; None when the session never finished."""
    imported: dict[str, str | None] = field(default_factory=dict)
    """The project's top-level modules the run imported -> the real path of their file."""


def parse_events(text: str) -> RunEvents:
    events = RunEvents()
    for line in text.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if not isinstance(event, dict):
            continue
        kind = event.get("kind")
        if kind == "collect":
            events.collect_errors.append(CollectError(str(event["nodeid"]), str(event["text"])))
        elif kind == "test":
            events.reports.append((str(event["nodeid"]), str(event["when"]), str(event["outcome"])))
        elif kind == "imported" and isinstance(event.get("modules"), dict):
            events.imported = {
                str(name): where if isinstance(where, str) else None
                for name, where in event["modules"].items()
            }
        elif kind == "finish":
            events.exitstatus = int(event["exitstatus"])
    return events


def owner(report_nodeid: str, requested: Sequence[str]) -> str | None:
    """The requested node id a report belongs to (a class's methods, a test's parameters)."""
    for nodeid in requested:
        if report_nodeid == nodeid or report_nodeid.startswith((f"{nodeid}::", f"{nodeid}[")):
            return nodeid
    return None


@dataclass(frozen=True)
class Outcomes:
    failed: tuple[str, ...]
    """Requested node ids with a failed report (setup, call or teardown)."""
    passed: tuple[str, ...]
    """Requested node ids with a passed call and no failure."""


def outcomes(events: RunEvents, requested: Sequence[str]) -> Outcomes:
    failed: set[str] = set()
    passed: set[str] = set()
    for nodeid, when, outcome in events.reports:
        mine = owner(nodeid, requested)
        if mine is None:
            continue
        if outcome == "failed":
            failed.add(mine)
        elif outcome == "passed" and when == "call":
            passed.add(mine)
    return Outcomes(tuple(sorted(failed)), tuple(sorted(passed - failed)))


CONFTEST_FAILURE = re.compile(r"ImportError while loading conftest '([^']+)'")
_LOCATION_RE = re.compile(r"^(\S[^:\n]*\.py):(\d+): in ", re.MULTILINE)
_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("import-name", re.compile(r"ImportError: cannot import name '([\w.]+)' from '([\w.]+)'")),
    ("module", re.compile(r"ModuleNotFoundError: No module named '([\w.]+)'")),
    (
        "module-attribute",
        re.compile(r"AttributeError: module '([\w.]+)' has no attribute '(\w+)'"),
    ),
    (
        "class-attribute",
        re.compile(r"AttributeError: type object '(\w+)' has no attribute '(\w+)'"),
    ),
)


@dataclass(frozen=True)
class MissingName:
    """One identifier a collection error says the hidden tests need and the base lacks."""

    kind: str
    module: str
    """The dotted module, or the class name for `class-attribute`."""
    name: str | None
    """None for a missing module."""


@dataclass(frozen=True)
class Diagnosis:
    missing: MissingName | None
    """Set when the error is a recognized test-compile error raised by a hidden test file."""
    in_test_code: bool
    """The innermost frame is a hidden test file (or no frame is named at all)."""
    detail: str
    """The exception line, for skip reasons and approval.md."""


def diagnose(text: str, hidden: Sequence[str], root: str) -> Diagnosis:
    """Read one collection error: which identifier it names, and whether the failing statement
    is in a hidden test (an ImportError raised inside the project's own code is a build error)."""
    lines = [line[4:] for line in text.splitlines() if line.startswith("E   ")]
    detail = _last_exception(lines) or _first_line(text)
    locations = _LOCATION_RE.findall(text)
    innermost = _relative(locations[-1][0], root) if locations else None
    in_test = innermost is None or innermost in hidden
    for kind, pattern in _PATTERNS:
        match = pattern.search(detail)
        if match is None:
            continue
        if kind == "module":
            missing = MissingName(kind, match.group(1), None)
        elif kind == "import-name":
            missing = MissingName(kind, match.group(2), match.group(1))
        else:
            missing = MissingName(kind, match.group(1), match.group(2))
        return Diagnosis(missing if in_test else None, in_test, detail)
    return Diagnosis(None, in_test, detail)


def _last_exception(lines: list[str]) -> str | None:
    for line in reversed(lines):
        if re.match(r"[\w.]*(Error|Exception)\b", line.strip()):
            return line.strip()
    return lines[-1].strip() if lines else None


def _first_line(text: str) -> str:
    stripped = [line.strip() for line in text.splitlines() if line.strip()]
    return stripped[-1] if stripped else "collection failed"


def _relative(path: str, root: str) -> str:
    prefix = root.rstrip("/") + "/"
    return path[len(prefix) :] if path.startswith(prefix) else path
