"""The pure cores, without processes: classifier, verdict, cache decision, replay planner, argv."""

from __future__ import annotations

import builtins
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from forge.health import gh_args, readcache, replay_plan
from forge.health.signals import AVAILABILITY_FAILURES, SIGNALS, classify_call
from forge.health.spool import QueueEntry
from forge.health.verdict import STATES, Observation, classify

NOW = 1_800_000_000_000


def obs(*signals: str, age_s: int = 1) -> list[Observation]:
    """Oldest first, one millisecond apart, all `age_s` old."""
    start = NOW - age_s * 1000 - len(signals)
    return [
        Observation(start + i, 0 if s == "ok" else 1, 5, s, "issue list")
        for i, s in enumerate(signals)
    ]  # type: ignore[arg-type]


def test_h03_seven_signals_four_of_them_availability_failures() -> None:
    assert SIGNALS == ("ok", "net", "server", "ratelimit", "auth", "notfound", "other")
    assert frozenset({"net", "server", "ratelimit", "auth"}) == AVAILABILITY_FAILURES


@pytest.mark.parametrize(
    ("rc", "stderr", "signal"),
    [
        (0, "HTTP 503 anything", "ok"),
        (1, "HTTP 403: API rate limit exceeded for user ID 1.", "ratelimit"),
        (1, "HTTP 429: You have exceeded a secondary rate limit.", "ratelimit"),
        (1, "You have triggered an abuse detection mechanism.", "ratelimit"),
        (4, "", "auth"),
        (1, "HTTP 401: Bad credentials", "auth"),
        (1, "HTTP 403: Resource not accessible by integration", "auth"),
        (1, "GraphQL: Could not resolve to an issue or pull request", "notfound"),
        (1, "HTTP 404: Not Found (https://api.github.com/repos/a/b)", "notfound"),
        (1, "Something went wrong while executing your query.", "server"),
        (1, "HTTP 502: Bad gateway", "server"),
        (1, "HTTP 504: Gateway Timeout", "server"),
        (1, "error connecting to api.github.com", "net"),
        (1, "dial tcp: lookup api.github.com: no such host", "net"),
        (1, "connect: connection refused", "net"),
        (1, "read: connection reset by peer", "net"),
        (1, "net/http: TLS handshake timeout", "net"),
        (1, "unknown flag: --bogus", "other"),
        (1, "HTTP 422: Validation Failed", "other"),
    ],
)
def test_h04_signal_table(rc: int, stderr: str, signal: str) -> None:
    assert classify_call(rc, stderr) == signal


@pytest.mark.parametrize(
    ("signals", "state"),
    [
        ((), "unknown"),
        (("ok",) * 9 + ("notfound",), "operational"),
        (("notfound",) * 10, "operational"),
        (("other",) * 10, "unknown"),
        (("server", "server", "server"), "degraded"),
        (("net", "net", "server"), "unreachable"),
        (("net", "server"), "degraded"),
        (("server", "notfound"), "degraded"),
        (("ok", "auth"), "degraded"),
        (("server",) * 5 + ("ok",) * 10, "operational"),
        (("ok", "other", "other"), "operational"),
    ],
)
def test_h05_h07_rules_over_the_sample(signals: tuple[str, ...], state: str) -> None:
    verdict = classify(obs(*signals), NOW, 300)
    assert verdict.state == state
    assert verdict.state in STATES


def test_h07c_observations_older_than_the_window_are_ignored() -> None:
    assert classify(obs("server", age_s=301), NOW, 300).state == "unknown"
    assert classify(obs("server", age_s=299), NOW, 300).state == "degraded"


def test_h07d_only_the_newest_ten_count_and_other_takes_no_slot() -> None:
    verdict = classify(obs(*(["server"] * 5 + ["ok"] * 10 + ["other"] * 3)), NOW, 300)
    assert (verdict.state, verdict.n, verdict.sample) == ("operational", 10, {"ok": 10})


def test_h08_classify_is_pure(monkeypatch: pytest.MonkeyPatch) -> None:
    def forbidden(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("classify did I/O")

    sample = obs("ok", "server", "net")
    monkeypatch.setattr(builtins, "open", forbidden)
    monkeypatch.setattr(subprocess, "run", forbidden)
    assert classify(sample, NOW, 300) == classify(sample, NOW, 300)


def test_h09_h10_the_verdict_carries_its_evidence_and_names_auth() -> None:
    verdict = classify(obs("ok", "auth"), NOW, 300).to_json()
    assert set(verdict) == {"state", "reason", "sample", "window_s", "n", "computed_at", "probed"}
    assert verdict["state"] == "degraded"
    assert "auth" in str(verdict["reason"])
    assert verdict["sample"] == {"ok": 1, "auth": 1}


@pytest.mark.parametrize(
    ("signal", "age", "expected"),
    [
        ("server", 45, readcache.Serve(45)),
        ("net", 0, readcache.Serve(0)),
        ("notfound", 45, readcache.PassThrough()),
        ("other", 45, readcache.PassThrough()),
        ("server", None, readcache.PassThrough()),
    ],
)
def test_c04_c06_cache_decision(signal: str, age: int | None, expected: object) -> None:
    assert readcache.decide(signal, age, 86_400) == expected


def test_c07_a_stale_entry_is_reported_not_served() -> None:
    decision = readcache.decide("server", 25 * 3600, 86_400)
    assert isinstance(decision, readcache.PassThrough)
    assert decision.note == "[forge-cache] not served: cached copy is 25h old (bound 24h)"


def test_c04_marker_wording() -> None:
    assert readcache.Serve(45).marker("server") == (
        "[forge-cache] served from cache (age 45s) — the live call failed (server). "
        "This is last-known state, not live."
    )


def entry(seq: int, kind: str, depends_on: list[str] | None = None, **extra: Any) -> QueueEntry:
    return QueueEntry(
        seq=seq,
        kind=kind,
        repo="acme/widget",
        host=None,
        target=(depends_on or ["7"])[0] if kind != "create" else None,
        handle=f"FORGE-Q{seq}" if kind == "create" else None,
        depends_on=depends_on or [],
        idempotency_key="k",
        argv=["issue", kind, *(depends_on or ["7"])[:1]],
        title="t",
        has_body=True,
        enqueued_at=NOW,
        project="/p",
        live_signal="server",
        live_stderr="",
        **extra,
    )


def test_r05_r09_resolve_orders_dependents_behind_their_create() -> None:
    comment = entry(2, "comment", ["FORGE-Q1"])
    assert replay_plan.resolve(comment, {}, ["FORGE-Q1"]) == replay_plan.Wait(
        "waits for FORGE-Q1, whose create has not landed yet"
    )
    step = replay_plan.resolve(comment, {"FORGE-Q1": 12}, [])
    assert step == replay_plan.Deliver(["issue", "comment", "12", "-R", "acme/widget"], "12")
    orphan = replay_plan.resolve(comment, {}, [])
    assert orphan == replay_plan.SetAside("the create it depends on (FORGE-Q1) never landed")


def test_issue13_item1_a_dependent_of_a_corrupt_entry_is_blocked_by_it() -> None:
    """Issue 13 item 1: the reason names the corrupt entry, not a create that "never landed"."""
    comment = entry(2, "comment", ["FORGE-Q1"])
    corrupt = {"FORGE-Q1": "corrupt entry q000001 (/q/000001.json): empty file (0 bytes)"}
    assert replay_plan.resolve(comment, {}, [], corrupt) == replay_plan.SetAside(
        "blocked: the create it depends on (FORGE-Q1) is corrupt entry q000001 "
        "(/q/000001.json): empty file (0 bytes)"
    )


def test_r08_r10_judge() -> None:
    assert replay_plan.judge("ok", "", 0, 3) == replay_plan.Delivered()
    assert replay_plan.judge("server", "", 0, 3) == replay_plan.Stop("server")
    assert isinstance(replay_plan.judge("notfound", "", 0, 3), replay_plan.SetAside)
    assert replay_plan.judge("other", "HTTP 422: x\nmore", 0, 3) == replay_plan.Retry(
        1, "HTTP 422: x"
    )
    exhausted = replay_plan.judge("other", "HTTP 422: x", 2, 3)
    assert exhausted == replay_plan.SetAside("attempts exhausted (3): HTTP 422: x")


def test_r11_select_takes_a_batch_of_pending_in_seq_order() -> None:
    entries = [entry(3, "edit"), entry(1, "edit"), entry(2, "edit", status="set_aside")]
    assert [e.seq for e in replay_plan.select(entries, 0)] == [1, 3]
    assert [e.seq for e in replay_plan.select(entries, 1)] == [1]


def test_r06_content_match_only_since_enqueue_and_unclaimed() -> None:
    old = {"url": "u0", "body": "same", "createdAt": "2020-01-01T00:00:00Z"}
    new = {"url": "u1", "body": "same", "createdAt": "2027-01-15T08:00:00Z"}
    since = 1_800_000_000_000  # 2027-01-15T08:00:00Z
    assert replay_plan.landed_comment([old, new], "same", since, []) == "u1"
    assert replay_plan.landed_comment([old, new], "same", since, ["u1"]) is None
    issue = {"number": 5, "title": "t", "body": None, "createdAt": new["createdAt"]}
    assert replay_plan.landed_issue([issue], "t", None, since, []) == 5
    assert replay_plan.landed_issue([issue], "t", None, since, ["issue:5"]) is None


def test_q04_argv_rewriting_moves_the_body_and_the_repo() -> None:
    argv = ["issue", "comment", "FORGE-Q1", "-R", "o/r", "--body", "hi", "--edit-last"]
    parsed = gh_args.parse_write(argv)
    assert parsed.target == "FORGE-Q1"
    assert parsed.value(gh_args.REPO_FLAGS) == "o/r"
    assert gh_args.replayable_argv(parsed, "/b.md") == [
        "issue",
        "comment",
        "FORGE-Q1",
        "--edit-last",
        "--body-file",
        "/b.md",
    ]
    assert gh_args.handles_in(argv) == ["FORGE-Q1"]
    assert gh_args.substitute(argv, {"FORGE-Q1": 9})[2] == "9"
    assert gh_args.handles_in(["FORGE-Q01", "FORGE-Qx", "xFORGE-Q1"]) == []


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://github.com/acme/widget.git", ("github.com", "acme/widget")),
        ("git@github.com:acme/widget.git", ("github.com", "acme/widget")),
        ("ssh://git@ghe.example/acme/widget", ("ghe.example", "acme/widget")),
    ],
)
def test_c13_q14a_repo_from_remote(url: str, expected: tuple[str, str]) -> None:
    assert gh_args.repo_from_remote(url) == expected


def test_c09_cache_events_rotate_and_both_generations_are_read(tmp_path: Path) -> None:
    from forge.health import cache_events

    per_line = len(f"{NOW}\tserved\t5\tserver\t{tmp_path}\n")
    count = cache_events.ROTATE_AT_BYTES // per_line + 10
    for i in range(count):
        cache_events.append(tmp_path, NOW + i, "served", 5, "server", tmp_path)
    assert (tmp_path / "cache-events.log.1").exists()
    assert cache_events.block(tmp_path, NOW + count, 300)["served"] == count


def test_x03_queue_headline_colours() -> None:
    from forge.health.queue_summary import RED, YELLOW, render

    base: dict[str, Any] = {
        "project": "/p",
        "pending": 1,
        "set_aside": 0,
        "crashed_slots": [],
        "pending_by_kind": {"comment": 1},
        "oldest_age_s": 3,
        "unresolved_handles": [],
        "set_aside_entries": [],
        "corrupt_entries": [],
        "untrusted_entries": [],
        "last_replay": None,
    }
    assert render(base, color=True)[0].startswith(YELLOW)
    aside = {
        **base,
        "set_aside": 1,
        "set_aside_entries": [{"entry": "q000002", "kind": "edit", "reason": "not found"}],
    }
    assert render(aside, color=True)[0].startswith(RED)
    assert render(aside)[0] == "forge queue: 1 pending (comment 1), 1 set aside — /p"
    quiet = {**base, "pending": 0, "pending_by_kind": {}}
    assert render(quiet) == ["forge queue: nothing undelivered in /p"]
    corrupt = {
        **quiet,
        "oldest_age_s": None,
        "corrupt_entries": [{"entry": "q000003", "file": "/q/000003.json", "problem": "x"}],
    }
    assert render(corrupt, color=True)[0].startswith(RED)
    assert render(corrupt)[:2] == [
        "forge queue: 0 pending (none), 0 set aside, 1 corrupt — /p",
        "  corrupt q000003 (/q/000003.json): x — never replayed, kept on disk",
    ]
    untrusted = {
        **corrupt,
        "untrusted_entries": [
            {"entry": "q000001", "file": "/q/000001.json.untrusted", "problem": "y",
             "moved_aside": True}
        ],
    }  # fmt: skip
    assert render(untrusted, color=True)[0].startswith(RED)
    assert render(untrusted)[:3] == [
        "forge queue: 0 pending (none), 0 set aside, 1 corrupt, 1 untrusted — /p",
        "  corrupt q000003 (/q/000003.json): x — never replayed, kept on disk",
        "  untrusted q000001 (/q/000001.json.untrusted): y — moved aside, never replayed, "
        "kept on disk",
    ]


SIDECAR = "/state/queue/p-0123/000001.d/body.md"


@pytest.mark.parametrize(
    ("kind", "argv", "body"),
    [
        ("create", ["issue", "create", "--title", "t", "-l", "bug", "-a", "me", "-m", "v1",
                    "-p", "Roadmap", "--body-file", SIDECAR], True),
        ("create", ["issue", "create", "-t", "t"], False),
        ("comment", ["issue", "comment", "FORGE-Q3", "--body-file", SIDECAR], True),
        ("comment", ["issue", "comment", "https://github.com/acme/widget/issues/4",
                     "--body-file", SIDECAR], True),
        ("edit", ["issue", "edit", "#7", "--add-label", "x", "--remove-label", "y",
                  "--add-assignee", "@me", "--remove-assignee", "z", "--add-project", "p",
                  "--remove-project", "q", "--remove-milestone", "-t", "-starts-with-dash"],
         False),
        ("close", ["issue", "close", "7", "--reason", "not planned", "-c", "bye"], False),
        ("reopen", ["issue", "reopen", "7", "--comment", "back"], False),
    ],
)  # fmt: skip
def test_write_shapes_accept_every_shape_the_shim_queues(
    kind: str, argv: list[str], body: bool
) -> None:
    from forge.health.write_shapes import refusal

    found = refusal(
        kind=kind, argv=argv, repo="acme/widget", host=None, body_file=SIDECAR if body else None
    )
    assert found is None


@pytest.mark.parametrize(
    ("kind", "argv", "body", "repo", "why"),
    [
        ("edit", ["gist", "create", "--public", "../.config/gh/hosts.yml"], False, None,
         "`gh gist create` is not a write the queue replays (only gh issue create|comment|edit|"
         "close|reopen)"),
        ("edit", ["api", "-X", "PUT", "repos/a/b/collaborators/x"], False, None,
         "`gh api -X` is not a write the queue replays"),
        ("delete", ["issue", "delete", "1"], False, None,
         "`gh issue delete` is not a write the queue replays"),
        ("comment", ["issue", "edit", "1"], False, None, "`gh issue edit` is not a write"),
        ("comment", ["issue", "comment", "1", "--body-file", "/home/me/.ssh/id_ed25519"], False,
         None, "`gh issue comment` may read only its own body file (None)"),
        ("comment", ["issue", "comment", "1", "--body-file", "/etc/passwd"], True, None,
         f"may read only its own body file ({SIDECAR})"),
        ("comment", ["issue", "comment", "1", "--body-file", SIDECAR, "--body-file", SIDECAR],
         True, None, "may read only its own body file"),
        ("comment", ["issue", "comment", "1"], True, None, "lost its body file"),
        ("comment", ["issue", "comment", "1", "-b", "inline"], False, None,
         "'-b' is not among the flags the queue replays for `gh issue comment`"),
        ("comment", ["issue", "comment", "1", "-R", "evil/repo"], False, None,
         "'-R' is not among the flags"),
        ("create", ["issue", "create", "--title", "t", "--web"], False, None,
         "'--web' is not among the flags"),
        ("create", ["issue", "create", "--title", "t", "--recover", "/tmp/x"], False, None,
         "'--recover' is not among the flags"),
        ("create", ["issue", "create", "-l", "bug"], False, None,
         "`gh issue create` needs --title or -t"),
        ("create", ["issue", "create", "--title", "t", "extra"], False, None,
         "'extra' is not among the flags"),
        ("close", ["issue", "close"], False, None, "must name an issue"),
        ("close", ["issue", "close", "--comment", "x"], False, None,
         "must name an issue (a number, #N, FORGE-Q<n> or its URL), not '--comment'"),
        ("close", ["issue", "close", "1", "--reason"], False, None, "--reason has no value"),
        ("close", ["issue", "close", "1"], False, "acme/widget;rm", "is not OWNER/REPO"),
    ],
)  # fmt: skip
def test_write_shapes_refuse_anything_else_and_say_why(
    kind: str, argv: list[str], body: bool, repo: str | None, why: str
) -> None:
    from forge.health.write_shapes import refusal

    found = refusal(kind=kind, argv=argv, repo=repo, host=None, body_file=SIDECAR if body else None)
    assert found is not None
    assert why in found


def test_the_seal_covers_every_field_and_only_this_key(tmp_path: Path) -> None:
    from dataclasses import asdict

    from forge.health import queue_seal

    key = queue_seal.load_key(tmp_path)
    assert queue_seal.load_key(tmp_path) == key  # made once, then read
    fields = asdict(entry(1, "comment"))
    mac = queue_seal.seal(key, fields)
    assert queue_seal.verifies(key, {**fields, "mac": mac}, mac)
    for name, value in [("argv", ["api", "x"]), ("repo", "evil/x"), ("status", "set_aside"),
                        ("body_sha256", "0" * 64), ("project", "/elsewhere")]:  # fmt: skip
        assert not queue_seal.verifies(key, {**fields, name: value}, mac), name
    assert not queue_seal.verifies(bytes(32), fields, mac)
    assert not queue_seal.verifies(key, fields, "é" + mac[1:])
    (tmp_path / "queue.key").write_bytes(b"short")
    with pytest.raises(queue_seal.QueueKeyError, match="holds 5 bytes, not 32"):
        queue_seal.load_key(tmp_path)


def test_issue13_item2_every_view_of_one_issue_is_recognised() -> None:
    """Issue 13 item 2: the views a 404 for `issue view 1` invalidates, and those it keeps."""
    from forge.health.readcache import IssueRef, same_issue, viewed_issue

    gone = viewed_issue(["issue", "view", "1"])
    assert gone == IssueRef(None, 1)
    same = [
        ["issue", "view", "#1", "--json", "title"],
        ["issue", "view", "-R", "Acme/Widget", "1", "-c"],
        ["issue", "view", "https://github.com/acme/widget/issues/1"],
        ["issue", "view", "--repo=github.com/acme/widget", "1"],
    ]
    for argv in same:
        view = viewed_issue(argv)
        assert view is not None, argv
        assert same_issue(gone, view, "acme/widget"), argv
    other = [
        ["issue", "view", "12"],
        ["issue", "view", "1", "-R", "acme/other"],
        ["issue", "view", "https://github.com/acme/other/issues/1"],
    ]
    for argv in other:
        view = viewed_issue(argv)
        assert view is not None, argv
        assert not same_issue(gone, view, "acme/widget"), argv
    assert viewed_issue(["issue", "list"]) is None
    assert viewed_issue(["issue", "view", "--json", "title"]) is None


def test_forge_now_ms_pins_the_wall_clock_only() -> None:
    """FORGE_NOW_MS fixes timestamps; durations stay real, as the sh shim measures them."""
    from forge.health.settings import clock_from_env

    clock = clock_from_env({"FORGE_NOW_MS": str(NOW)})
    assert clock.time() == NOW / 1000
    before = clock.monotonic()
    assert time.monotonic() >= before
    assert clock_from_env({}).time() != NOW / 1000
