"""A run's files byte for byte: attempt.json, report.json and report.md against golden copies.

The goldens in `golden/` were written by the Lab before its attempt record was typed (with its
keys in one order on every path); the typed record must keep every key, its order, its nulls and
the formatting of every number. What a run cannot
repeat (paths, ids, digests, clocks, memory, CPU, pytest's timing line) is replaced by a fixed
value of the same JSON type before comparing. `FORGE_UPDATE_GOLDEN=1` rewrites the goldens.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import msgspec
import pytest

from forge.attempt.record import dumps_record, read_record

from .kit import Kit

GOLDEN = Path(__file__).resolve().parent / "golden"
UPDATE = os.environ.get("FORGE_UPDATE_GOLDEN") == "1"
LOCALHOST = {"ANTHROPIC_BASE_URL": "http://localhost:1"}

_VOLATILE = [
    (re.compile(r"(\w+\.\w+\.rep-\d+)\.[0-9a-f]{12}"), r"\1.ID"),
    (re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"), "2026-01-01T00:00:00Z"),
    (
        re.compile(
            r'"(elapsedMs|elapsedPerAcceptedMs|harnessMs|peakRssBytes|median|p90|approvedAt)": \d+'
        ),
        r'"\1": 7',
    ),
    (re.compile(r'"cpuSeconds": [0-9.]+'), '"cpuSeconds": 0.25'),
    (re.compile(r"\b[0-9a-f]{64}\b"), "SHA"),
    (re.compile(r"(median|p90) \d+"), r"\1 7"),
    (re.compile(r"elapsed \d+ ms"), "elapsed 7 ms"),
    (re.compile(r"timed out after \d+\.\d s"), "timed out after 7.0 s"),
    (re.compile(r"\| \d+\.\d s \|"), "| 7.0 s |"),
    (re.compile(r" in \d+\.\d+s"), " in 0.01s"),
]


def steady(text: str, kit: Kit) -> str:
    """`text` with what differs between two identical runs replaced by fixed values."""
    text = text.replace(str(kit.root), "/ROOT")
    for pattern, replacement in _VOLATILE:
        text = pattern.sub(replacement, text)
    return text


def run_files(kit: Kit) -> dict[str, str]:
    """Every attempt.json and report file of the run, by path relative to --out."""
    names = sorted(
        [p.relative_to(kit.out) for p in kit.out.glob("attempts/**/attempt.json")]
        + [p.relative_to(kit.out) for p in kit.out.glob("superseded/**/attempt.json")]
        + [Path("report.json"), Path("report.md")]
    )
    return {str(name): steady((kit.out / name).read_text(), kit) for name in names}


def check_golden(case: str, files: dict[str, str]) -> None:
    folder = GOLDEN / case
    if UPDATE:
        for name, text in files.items():
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_text(text)
    golden = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())
    assert sorted(files) == golden
    for name, text in files.items():
        assert text == (folder / name).read_text(), name


def test_verified_attempts_keep_their_bytes(kit: Kit) -> None:
    """Correct, no-change and a regression re-run at base: every verification field."""
    kit.cohort(
        a=kit.formula("a", knobs={"FAKE_COST": "0.25"}),
        b=kit.formula("b", knobs={"FAKE_ACTION": "none", "FAKE_OUTCOME": "no-change"}),
        tasks={
            "calc": kit.plan("calc", checks=["tests/test_calc.py"]),
            "regress": kit.plan(
                "regress", checks=["tests/test_calc.py"], knobs={"FAKE_ACTION": "break"}
            ),
        },
    )
    result = kit.approve()
    assert result.returncode == 2, result.stderr
    check_golden("verified", run_files(kit))


def test_early_exits_and_a_superseded_record_keep_their_bytes(kit: Kit) -> None:
    """Setup failure, timeout, invalid output, a model mismatch, provider-unavailable, resumed."""
    switch = kit.ctl / "transient"
    switch.write_text("9:connect ETIMEDOUT 1.2.3.4:443")
    kit.cohort(
        a=kit.formula("a", timeout_ms=10_000, knobs={"FAKE_COST": "0.1"}),
        b=kit.formula(
            "b",
            timeout_ms=10_000,
            knobs={"FAKE_TRANSIENT_FILE": str(switch), "FAKE_COST": "0.1"},
        ),
        tasks={
            "setup": kit.plan(
                "setup", setup=[{"id": "no", "argv": ["false"], "dir": ".", "timeoutMs": 5000}]
            ),
            "hang": kit.plan("hang", knobs={"FAKE_HANG": "1"}),
            "garbage": kit.plan("garbage", knobs={"FAKE_STDOUT": "garbage"}),
            "model": kit.plan("model", knobs={"FAKE_MODEL": "other"}),
            "plain": kit.plan("plain"),
        },
    )
    first = kit.approve("--parallel", "4", env=LOCALHOST)
    assert first.returncode == 2, first.stderr
    switch.write_text("1:read ECONNRESET")
    resumed = kit.approve("--parallel", "4", env=LOCALHOST)
    assert resumed.returncode == 2, resumed.stderr
    check_golden("early-exits", run_files(kit))


def test_every_golden_record_reads_and_writes_back_byte_for_byte() -> None:
    """A resume reads attempt.json into the typed record; writing it again changes nothing."""
    paths = sorted(GOLDEN.rglob("attempt.json"))
    assert len(paths) == 15
    for path in paths:
        record = read_record(json.loads(path.read_bytes()))
        assert record is not None, path
        assert dumps_record(record) == path.read_bytes(), path


def test_an_unfinished_record_reads_as_none_and_an_ill_typed_one_is_named() -> None:
    golden = json.loads((GOLDEN / "verified/attempts/calc/a/rep-1/attempt.json").read_bytes())
    assert read_record({k: v for k, v in golden.items() if k != "outcome"}) is None
    assert read_record({**golden, "schemaVersion": 2}) is None
    assert read_record([golden]) is None
    with pytest.raises(
        msgspec.ValidationError, match=r"`costUsd` - at `\$\.invocations\[0\]\.usage`"
    ):
        read_record({**golden, "invocations": [{**golden["invocations"][0], "usage": {}}]})
