"""The read cache through a raw gh call: stored on the way past, served on availability failures."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from pathlib import Path

import pytest

from .conftest import ForgeEnv, git_status, make_project

MARKER = re.compile(
    r"^\[forge-cache\] served from cache \(age \d+s\) — the live call failed "
    r"\((net|server|ratelimit|auth)\)\. This is last-known state, not live\.$"
)


def cache_files(project: Path) -> list[Path]:
    return sorted((project / ".forge" / "cache").glob("*.out"))


@pytest.fixture
def seeded(forge_env: ForgeEnv) -> ForgeEnv:
    forge_env.fake.seed("one", "two")
    return forge_env


def test_c01_c02_a_live_read_is_stored_on_the_way_past(seeded: ForgeEnv) -> None:
    live = seeded.gh("issue", "list")
    assert live.returncode == 0
    [entry] = cache_files(seeded.project)
    assert entry.read_bytes() == live.stdout
    assert (seeded.project / ".forge" / ".gitignore").read_text() == "*\n"
    assert git_status(seeded.project) == ""


@pytest.mark.parametrize("kind", ["503", "502", "429", "401", "net"])
def test_c04_c12_served_on_an_availability_failure(seeded: ForgeEnv, kind: str) -> None:
    live = seeded.gh("issue", "view", "1")
    seeded.fake.fail("issue view*", kind)
    served = seeded.gh("issue", "view", "1")
    assert served.returncode == 0
    assert served.stdout == live.stdout
    assert MARKER.match(served.stderr.decode().strip()), served.stderr


def test_c12_a_served_read_still_pipes_into_a_parser(seeded: ForgeEnv) -> None:
    seeded.gh("issue", "list", "--json", "number")
    seeded.fake.fail("issue list*", "503")
    piped = subprocess.run(
        [
            "sh",
            "-c",
            f"{seeded.shim} issue list --json number | python3 -c "
            "'import json,sys; print(len(json.load(sys.stdin)))'",
        ],
        env=seeded.env,
        cwd=seeded.project,
        capture_output=True,
        text=True,
        check=False,
    )
    assert piped.stdout == "2\n"


def test_c05_a_404_passes_through(seeded: ForgeEnv) -> None:
    seeded.gh("issue", "view", "2")
    data = json.loads(seeded.fake.state.read_text())
    del data["repos"]["acme/widget"]["issues"]["2"]
    seeded.fake.state.write_text(json.dumps(data))
    result = seeded.gh("issue", "view", "2")
    assert result.returncode == 1
    assert b"Could not resolve to" in result.stderr
    assert b"[forge-cache]" not in result.stderr


def test_c05_a_usage_error_passes_through(seeded: ForgeEnv) -> None:
    seeded.gh("issue", "list")
    result = seeded.gh("issue", "list", "--bogus")
    assert result.returncode == 1
    assert b"unknown flag" in result.stderr


def test_c06_a_query_never_seen_live_fails_honestly(seeded: ForgeEnv) -> None:
    seeded.fake.fail("issue list*", "503")
    result = seeded.gh("issue", "list", "--label", "never-seen")
    assert (result.returncode, result.stdout) == (1, b"")
    assert b"HTTP 503" in result.stderr


def test_c07_c09_a_stale_entry_is_not_served_and_is_reported(seeded: ForgeEnv) -> None:
    seeded.gh("issue", "list")
    [entry] = cache_files(seeded.project)
    old = time.time() - 25 * 3600
    os.utime(entry, (old, old))
    seeded.fake.fail("issue list*", "503")
    result = seeded.gh("issue", "list")
    assert result.returncode == 1
    assert b"[forge-cache] not served: cached copy is 25h old (bound 24h)" in result.stderr
    report = json.loads(seeded.forge("health", "--json", "--no-probe").stdout)
    assert report["cache"]["stale_refused"] == 1


def test_c09_the_cache_block_shows_serves_next_to_a_clean_verdict(seeded: ForgeEnv) -> None:
    seeded.gh("issue", "list")
    seeded.fake.fail("issue list*", "503")
    seeded.gh("issue", "list")
    for _ in range(3):
        seeded.gh("issue", "view", "1")
    report = json.loads(seeded.forge("health", "--json", "--no-probe").stdout)
    assert report["state"] == "degraded"
    assert report["cache"]["served"] == 1
    assert report["cache"]["oldest_served_age_s"] is not None


@pytest.mark.parametrize(
    "argv",
    [["issue", "create", "--title", "t", "--body", "b"], ["pr", "list"], ["api", "x"]],
)
def test_c03_c08_only_the_allowlist_is_cached(seeded: ForgeEnv, argv: list[str]) -> None:
    seeded.gh(*argv)
    assert cache_files(seeded.project) == []


def test_c10_disabled_entirely(seeded: ForgeEnv) -> None:
    seeded.gh("issue", "list", env={"FORGE_CACHE": "0"})
    assert cache_files(seeded.project) == []


def test_c02_c13_keys_per_project_and_per_repo(seeded: ForgeEnv) -> None:
    other = make_project(seeded.root / "other")
    seeded.gh("issue", "list")
    seeded.gh("issue", "list", cwd=other)
    seeded.gh("issue", "list", env={"GH_REPO": "acme/widget"})
    assert len(cache_files(seeded.project)) == 2
    assert len(cache_files(other)) == 1


def test_c02_outside_a_project_there_is_no_cache(seeded: ForgeEnv, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    assert seeded.gh("issue", "list", "-R", "acme/widget", cwd=outside).returncode == 0
    assert not (outside / ".forge").exists()


def test_c11_status_and_clear(seeded: ForgeEnv) -> None:
    seeded.gh("issue", "list")
    status = seeded.forge("cache", "status", "--json")
    [row] = json.loads(status.stdout)
    assert row["argv"] == ["issue", "list"]
    assert "issue list" in seeded.forge("cache", "status").stdout
    assert "dropped 1" in seeded.forge("cache", "clear").stdout
    assert cache_files(seeded.project) == []


def test_c13_argv_with_any_bytes_is_keyed_and_served(seeded: ForgeEnv) -> None:
    argv = ["search", "issues", "one", "--label", "needs triage"]
    live = seeded.gh(*argv)
    assert live.stdout == b"1\tone\n"
    [entry] = cache_files(seeded.project)
    assert entry.name.startswith("h")
    seeded.fake.fail("search issues*", "429")
    served = seeded.gh(*argv)
    assert (served.returncode, served.stdout) == (0, live.stdout)


def test_c14_a_reader_never_sees_a_torn_entry(seeded: ForgeEnv) -> None:
    seeded.gh("issue", "list")
    [entry] = cache_files(seeded.project)
    expected = entry.read_bytes()
    writers = [
        subprocess.Popen(
            ["dash", "-c", f"for i in 1 2 3 4 5 6; do {seeded.shim} issue list >/dev/null; done"],
            env=seeded.env,
            cwd=seeded.project,
        )
        for _ in range(2)
    ]
    while any(w.poll() is None for w in writers):
        assert entry.read_bytes() == expected
    assert [w.returncode for w in writers] == [0, 0]


def test_s01_cache_store_and_serve_under_both_shells(any_shell_env: ForgeEnv) -> None:
    any_shell_env.fake.seed("one")
    live = any_shell_env.gh("issue", "view", "1", "--json", "title")
    any_shell_env.fake.fail("issue view*", "net")
    served = any_shell_env.gh("issue", "view", "1", "--json", "title")
    assert (served.returncode, served.stdout) == (0, live.stdout)
    assert MARKER.match(served.stderr.decode().strip())


def delete_issue(env: ForgeEnv, number: int) -> None:
    data = json.loads(env.fake.state.read_text())
    del data["repos"]["acme/widget"]["issues"][str(number)]
    env.fake.state.write_text(json.dumps(data))


@pytest.mark.parametrize("answer", ["404", "410"])
def test_issue13_item2_a_not_found_answer_drops_the_issues_cached_views(
    seeded: ForgeEnv, answer: str
) -> None:
    """Issue 13 item 2: once the forge answered 404 (or 410) for `issue view 1`, the next outage
    must not serve the old "OPEN" copy of issue 1, under any of its cached views."""
    views = [
        ["issue", "view", "1"],
        ["issue", "view", "1", "--json", "title,state"],
        ["issue", "view", "https://github.com/acme/widget/issues/1", "--comments"],
        ["issue", "view", "1", "-R", "acme/widget"],
    ]
    for argv in [*views, ["issue", "view", "2"]]:
        assert seeded.gh(*argv).returncode == 0
    delete_issue(seeded, 1)
    if answer == "410":
        seeded.fake.fail("issue view 1", "410")
    gone = seeded.gh("issue", "view", "1")
    assert gone.returncode == 1
    assert f"HTTP {answer}".encode() in gone.stderr or b"Could not resolve to" in gone.stderr
    seeded.fake.fail("issue view*", "503", times=-1)
    for argv in views:
        outage = seeded.gh(*argv)
        assert (outage.returncode, outage.stdout) == (1, b""), argv
        assert b"HTTP 503" in outage.stderr
        assert b"[forge-cache]" not in outage.stderr
    other = seeded.gh("issue", "view", "2")
    assert other.returncode == 0
    assert MARKER.match(other.stderr.decode().strip())


def test_issue13_item2_without_python_the_shim_still_drops_the_entry_itself(
    seeded: ForgeEnv,
) -> None:
    """Issue 13 item 2: the shim records a 404 on its own fast path, so it drops that key itself."""
    no_python = {"FORGE_PYTHON": str(seeded.root / "no-such-python")}
    assert seeded.gh("issue", "view", "1", env=no_python).returncode == 0
    delete_issue(seeded, 1)
    assert seeded.gh("issue", "view", "1", env=no_python).returncode == 1
    seeded.fake.fail("issue view*", "503")
    outage = seeded.gh("issue", "view", "1")
    assert (outage.returncode, outage.stdout) == (1, b"")
    assert b"[forge-cache]" not in outage.stderr
