"""The gh PATH shim under dash and bash --posix: transparency, recording, PATH walk, fallbacks."""

from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from forge.health.signals import classify_call
from forge.health.verdict import parse_line

from .conftest import ForgeEnv, python_gh, tools_dir, write_exec

# Golden corpus: the gh stderr shapes (cli/cli, go-gh) with their exit codes.
CORPUS = [
    (1, "HTTP 503: 503 Service Unavailable (https://api.github.com/graphql)\n", "server"),
    (
        1,
        "Something went wrong while executing your query. This may be the result of a timeout\n",
        "server",
    ),
    (1, "HTTP 500 (https://api.github.com/repos/acme/widget/issues)\n", "server"),
    (1, "HTTP 502: Bad gateway\n", "server"),
    (1, "HTTP 429: You have exceeded a secondary rate limit.\n", "ratelimit"),
    (1, "HTTP 403: API rate limit exceeded for user ID 1.\n", "ratelimit"),
    (1, "You have triggered an abuse detection mechanism.\n", "ratelimit"),
    (1, "HTTP 401: Bad credentials\nTry authenticating with:  gh auth login\n", "auth"),
    (4, "To get started with GitHub CLI, please run:  gh auth login\n", "auth"),
    (
        1,
        "GraphQL: Could not resolve to an issue or pull request with the number of 9.\n",
        "notfound",
    ),
    (
        1,
        "HTTP 410: This issue was deleted (https://api.github.com/repos/a/w/issues/1)\n",
        "notfound",
    ),
    (1, "error connecting to api.github.com\ncheck your internet connection\n", "net"),
    (1, 'Post "https://api.github.com/graphql": net/http: TLS handshake timeout\n', "net"),
    (1, "dial tcp: lookup api.github.com: no such host\n", "net"),
    (1, "unknown flag: --bogus\n\nUsage:  gh issue list [flags]\n", "other"),
    (1, "HTTP 422: Validation Failed\n", "other"),
    (0, "HTTP 503 but it worked\n", "ok"),
]


@pytest.fixture
def echo_env(any_shell_env: ForgeEnv) -> ForgeEnv:
    python_gh(any_shell_env.realbin / "gh", "echogh.py")
    return any_shell_env


def last_observation(env: ForgeEnv) -> list[str]:
    return env.observations()[-1]


def test_h04_s11_golden_corpus_sh_and_python_agree(forge_env: ForgeEnv) -> None:
    python_gh(forge_env.realbin / "gh", "echogh.py")
    for rc, stderr, expected in CORPUS:
        result = forge_env.gh("api", "x", env={"ECHOGH_RC": str(rc), "ECHOGH_STDERR": stderr})
        assert result.returncode == rc
        shim_signal = last_observation(forge_env)[3]
        assert (shim_signal, classify_call(rc, stderr)) == (expected, expected), stderr


ARGVS = [
    ["api", "with space", "new\nline", "*", "", "$HOME", "--flag=a b"],
    ["frobnicate", "-x", "'quoted'", '"dq"', "\\back"],
]


@pytest.mark.parametrize("argv", ARGVS)
def test_s03_transparent_byte_for_byte(echo_env: ForgeEnv, argv: list[str]) -> None:
    stdin = bytes(range(256)) * 50
    for rc in (0, 1, 2, 4, 42, 255):
        env = {"ECHOGH_RC": str(rc), "ECHOGH_STDERR": "err \x01 bytes\n"}
        through = echo_env.gh(*argv, stdin=stdin, env=env)
        direct = subprocess.run(
            [str(echo_env.realbin / "gh"), *argv],
            input=stdin,
            capture_output=True,
            env={**echo_env.env, **env},
            check=False,
        )
        assert (through.returncode, through.stdout, through.stderr) == (
            direct.returncode,
            direct.stdout,
            direct.stderr,
        )
        assert json.loads(through.stdout)["argv"] == argv
        assert base64.b64decode(json.loads(through.stdout)["stdin_b64"]) == stdin


def test_s04_s13_offline_subcommands_are_not_recorded(echo_env: ForgeEnv) -> None:
    for argv in (
        ["--version"],
        ["help"],
        ["completion"],
        ["alias"],
        ["config"],
        ["extension"],
        [],
        ["-h"],
        ["--help"],
    ):
        assert echo_env.gh(*argv).returncode == 0
    assert echo_env.observations() == []
    echo_env.gh("frobnicate", env={"ECHOGH_RC": "1", "ECHOGH_STDERR": "unknown command\n"})
    echo_env.gh("issue", "list", "--limit", "3")
    rows = echo_env.observations()
    assert [row[3:] for row in rows] == [["other", "frobnicate"], ["ok", "issue list"]]
    assert all(parse_line("\t".join(row)) is not None for row in rows)


@pytest.mark.parametrize("breakage", ["missing", "not-a-dir", "tmpdir"])
def test_s05_plain_exec_when_the_recording_path_is_missing(
    echo_env: ForgeEnv, breakage: str
) -> None:
    env = dict(echo_env.env)
    if breakage == "missing":
        shutil.rmtree(echo_env.state_dir)
    elif breakage == "not-a-dir":
        shutil.rmtree(echo_env.state_dir)
        echo_env.state_dir.write_text("a file")
    else:
        env["TMPDIR"] = str(echo_env.root / "no-such-tmp")
    extra = {"ECHOGH_RC": "7", "ECHOGH_STDERR": "HTTP 503: x\n"}
    result = echo_env.gh("issue", "list", env={**env, **extra})
    assert (result.returncode, result.stderr) == (7, b"HTTP 503: x\n")
    assert json.loads(result.stdout)["argv"] == ["issue", "list"]
    if breakage == "tmpdir":
        assert echo_env.observations() == []


def test_s06_tty_stderr_is_not_diverted(echo_env: ForgeEnv) -> None:
    import pty

    leader, follower = pty.openpty()
    env = {**echo_env.env, "ECHOGH_RC": "4", "ECHOGH_STDERR": "? prompt> ", "ECHOGH_STDIN": "0"}
    proc = subprocess.Popen(
        [*echo_env.shell.split(), str(echo_env.shim), "auth", "login"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=follower,
        env=env,
        cwd=echo_env.project,
    )
    os.close(follower)
    seen = b""
    while b"prompt>" not in seen:
        seen += os.read(leader, 1024)
    assert proc.wait(timeout=30) == 4
    os.close(leader)
    assert proc.stdout is not None
    proc.stdout.close()
    assert last_observation(echo_env)[1:5:2] == ["4", "auth"]


def test_s07_two_shim_copies_on_path_find_the_real_gh(echo_env: ForgeEnv) -> None:
    second = echo_env.root / "second-bin" / "gh"
    write_exec(second, echo_env.shim.read_text().replace("the real gh on PATH", "a copy"))
    env = {"PATH": f"{echo_env.shim.parent}:{second.parent}:{echo_env.realbin}:/usr/bin:/bin"}
    result = echo_env.gh("api", "x", env=env)
    assert result.returncode == 0
    assert json.loads(result.stdout)["argv"] == ["api", "x"]
    assert len(echo_env.observations()) == 1


def test_s08_no_real_gh_exits_127_with_a_message(echo_env: ForgeEnv) -> None:
    second = echo_env.root / "second-bin" / "gh"
    write_exec(second, echo_env.shim.read_text())
    env = {"PATH": f"{echo_env.shim.parent}:{second.parent}:{tools_dir(echo_env.root)}"}
    result = echo_env.gh("issue", "list", env=env)
    assert result.returncode == 127
    assert b"found no real gh on PATH" in result.stderr


def test_s09_latency_in_milliseconds(echo_env: ForgeEnv) -> None:
    echo_env.gh("api", "x", env={"ECHOGH_SLEEP": "0.3"})
    row = last_observation(echo_env)
    assert 250 <= int(row[2]) < 30_000  # a slow machine may add start-up time, never lose it
    assert len(row[0]) == 13


def test_s09_perl_clock_when_date_lacks_milliseconds(echo_env: ForgeEnv) -> None:
    fakebin = echo_env.root / "stubdate"
    write_exec(fakebin / "date", '#!/bin/sh\nexec /bin/date "$(echo "$1" | sed s/%3N/3N/)"\n')
    env = {"PATH": f"{echo_env.shim.parent}:{fakebin}:{echo_env.realbin}:/usr/bin:/bin"}
    echo_env.gh("api", "x", env={**env, "ECHOGH_SLEEP": "0.3"})
    row = last_observation(echo_env)
    assert len(row[0]) == 13
    assert 250 <= int(row[2]) < 30_000
    assert int(row[2]) != 1000  # what the whole-seconds fallback would have recorded


def test_s10_bypass_by_path_and_disable_by_deleting(echo_env: ForgeEnv) -> None:
    subprocess.run(
        [str(echo_env.realbin / "gh"), "api", "x"],
        env=echo_env.env,
        check=True,
        capture_output=True,
    )
    assert echo_env.observations() == []
    echo_env.shim.unlink()
    found = subprocess.run(
        ["sh", "-c", "command -v gh"], env=echo_env.env, capture_output=True, text=True, check=True
    )
    assert found.stdout.strip() == str(echo_env.realbin / "gh")


def test_s12_death_by_signal_and_pipes(echo_env: ForgeEnv) -> None:
    result = echo_env.gh("api", "x", env={"ECHOGH_SIGNAL": "SIGINT"})
    assert result.returncode == 128 + signal.SIGINT
    piped = subprocess.run(
        ["sh", "-c", f"{echo_env.shell} {echo_env.shim} api x | head -c 1"],
        env={**echo_env.env, "ECHOGH_STDIN": "0"},
        capture_output=True,
        timeout=30,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    assert piped.stdout == b"{"


def test_s02_install_puts_the_shim_first_on_path(forge_env: ForgeEnv) -> None:
    target = forge_env.root / "elsewhere"
    result = forge_env.forge("shim", "install", "--dir", str(target))
    assert result.returncode == 0, result.stderr
    env = {"PATH": f"{target}:{forge_env.env['PATH']}"}
    found = subprocess.run(
        ["sh", "-c", "command -v gh"],
        env={**forge_env.env, **env},
        capture_output=True,
        text=True,
        check=True,
    )
    assert Path(found.stdout.strip()) == target / "gh"
    assert b"forge-gh-shim:v1" in (target / "gh").read_bytes()[:512]


def test_h18_concurrent_appends_are_whole_lines(forge_env: ForgeEnv) -> None:
    script = (
        f"i=0; while [ $i -lt 60 ]; do {forge_env.shim} api x >/dev/null 2>&1; i=$((i+1)); done"
    )
    write_exec(forge_env.realbin / "gh", "#!/bin/sh\nexit 0\n")
    procs = [subprocess.Popen(["dash", "-c", script], env=forge_env.env) for _ in range(4)]
    assert [p.wait(timeout=100) for p in procs] == [0] * 4
    rows = forge_env.observations()
    assert len(rows) == 240
    assert all(len(row) == 5 and row[3] == "ok" for row in rows)


def test_s07_a_remembered_real_gh_that_vanished_is_walked_for_again(echo_env: ForgeEnv) -> None:
    assert echo_env.gh("api", "x").returncode == 0
    remembered = (echo_env.state_dir / "real-gh").read_text().splitlines()
    assert remembered == [str(echo_env.realbin / "gh")]  # every gh the walk met, the real one last
    moved = echo_env.root / "moved"
    python_gh(moved / "gh", "echogh.py")
    (echo_env.realbin / "gh").unlink()
    env = {"PATH": f"{echo_env.shim.parent}:{echo_env.realbin}:{moved}:/usr/bin:/bin"}
    result = echo_env.gh("api", "y", env=env)
    assert (result.returncode, result.stderr) == (0, b"")
    assert json.loads(result.stdout)["argv"] == ["api", "y"]


def test_s01_shellcheck_posix_sh_is_clean() -> None:
    import sys

    shellcheck = Path(sys.executable).parent / "shellcheck"
    shim = Path(__file__).parents[2] / "forge" / "health" / "shim" / "gh.sh"
    result = subprocess.run(
        [str(shellcheck), "-s", "sh", str(shim)], capture_output=True, text=True, check=False
    )
    assert (result.returncode, result.stdout) == (0, "")


def test_s12_ctrl_c_reaches_gh_and_its_stderr_and_130_reach_the_caller(echo_env: ForgeEnv) -> None:
    from .conftest import wait_until

    ready = echo_env.root / "ready"
    env = {**echo_env.env, "ECHOGH_READY": str(ready)}
    proc = subprocess.Popen(
        [*echo_env.shell.split(), str(echo_env.shim), "issue", "list"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=echo_env.project,
        start_new_session=True,
    )
    wait_until(ready.exists)
    os.killpg(proc.pid, signal.SIGINT)
    _, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 130
    assert b"KeyboardInterrupt" in stderr
    assert last_observation(echo_env)[1] == "130"


def test_no_python_on_a_healthy_call_with_nothing_to_do(forge_env: ForgeEnv) -> None:
    spy_log = forge_env.root / "python-started"
    spy = write_exec(forge_env.root / "spy-python", f'#!/bin/sh\necho "$@" >> {spy_log}\n')
    forge_env.fake.seed("first")
    env = {"FORGE_PYTHON": str(spy)}
    for argv in (
        ["issue", "list"],
        ["issue", "view", "1"],
        ["issue", "comment", "1", "-b", "x"],
        ["api", "rate_limit"],
    ):
        assert forge_env.gh(*argv, env=env).returncode == 0
    assert not spy_log.exists()
    assert len(forge_env.observations()) == 4


def test_without_python_failures_pass_through_unchanged(forge_env: ForgeEnv) -> None:
    forge_env.fake.seed("first")
    env = {"FORGE_PYTHON": str(forge_env.root / "no-such-python")}
    forge_env.gh("issue", "view", "1", env=env)
    forge_env.fake.fail("issue *", "503", times=2)
    read = forge_env.gh("issue", "view", "1", env=env)
    write = forge_env.gh("issue", "comment", "1", "--body", "x", env=env)
    expected = b"HTTP 503: 503 Service Unavailable (https://api.github.com/graphql)\n"
    assert (read.returncode, read.stdout, read.stderr) == (1, b"", expected)
    assert (write.returncode, write.stderr) == (1, expected)
    assert not forge_env.queue_dir().exists()


def test_issue13_item17_a_gh_added_earlier_on_the_same_path_is_found(echo_env: ForgeEnv) -> None:
    """Issue 13 item 17: the real gh was remembered per PATH value, so a gh installed later into
    a directory earlier on the same PATH was never used; it must be."""
    early = echo_env.root / "early"
    early.mkdir()
    env = {"PATH": f"{echo_env.shim.parent}:{early}:{echo_env.realbin}:/usr/bin:/bin"}
    python_gh(echo_env.realbin / "gh", "fakegh.py")
    first = echo_env.gh("api", "rate_limit", env=env)
    assert b"resources" in first.stdout  # the fake forge answered
    python_gh(early / "gh", "echogh.py")
    second = echo_env.gh("api", "rate_limit", env=env)
    assert second.returncode == 0
    assert json.loads(second.stdout)["argv"] == ["api", "rate_limit"]  # the earlier gh answered


def test_issue13_item17_a_shim_copy_written_over_the_remembered_gh_is_skipped(
    echo_env: ForgeEnv,
) -> None:
    """Issue 13 item 17: a remembered answer stands only while the files it names are unchanged."""
    early = echo_env.root / "early"
    python_gh(early / "gh", "echogh.py")
    env = {"PATH": f"{echo_env.shim.parent}:{early}:{echo_env.realbin}:/usr/bin:/bin"}
    assert echo_env.gh("api", "x", env=env).returncode == 0
    remembered = echo_env.state_dir / "real-gh"
    old = remembered.stat().st_mtime - 60
    os.utime(remembered, (old, old))
    result = echo_env.forge("shim", "install", "--dir", str(early))
    assert result.returncode == 0, result.stderr
    through = echo_env.gh("api", "y", env=env)
    assert (through.returncode, json.loads(through.stdout)["argv"]) == (0, ["api", "y"])
    assert len(echo_env.observations()) == 2  # recorded once, not once per shim copy


@pytest.mark.parametrize(
    ("shell", "rcfile", "line"),
    [
        ("/bin/bash", "~/.bashrc", 'export PATH="{dir}:$PATH"'),
        ("/usr/bin/zsh", "~/.zshrc", 'export PATH="{dir}:$PATH"'),
        ("/usr/bin/fish", "~/.config/fish/config.fish", "set -gx PATH {dir} $PATH"),
        ("/bin/dash", "~/.profile", 'export PATH="{dir}:$PATH"'),
    ],
)
def test_issue13_item17_install_prints_the_line_that_puts_the_shim_on_path(
    forge_env: ForgeEnv, shell: str, rcfile: str, line: str
) -> None:
    """Issue 13 item 17: `forge shim install` cannot change the caller's PATH, so it prints the
    line to add, for the user's shell ($SHELL)."""
    target = forge_env.root / "elsewhere"
    result = forge_env.forge("shim", "install", "--dir", str(target), env={"SHELL": shell})
    assert result.returncode == 0, result.stderr
    expected = line.format(dir=target)
    assert rcfile in result.stdout
    assert f"\n  {expected}\n" in result.stdout
    if shell == "/bin/bash":
        found = subprocess.run(
            ["bash", "-c", f"{expected}; command -v gh"],
            env={**forge_env.env, "PATH": f"{forge_env.realbin}:/usr/bin:/bin"},
            capture_output=True,
            text=True,
            check=True,
        )
        assert found.stdout.strip() == str(target / "gh")


def test_issue13_item17_install_says_when_the_shim_is_already_on_path(forge_env: ForgeEnv) -> None:
    """Issue 13 item 17: with the shim's directory already ahead of gh, there is nothing to add."""
    result = forge_env.forge("shim", "install", env={"SHELL": "/bin/bash"})
    assert result.returncode == 0, result.stderr
    assert "gh on PATH is forge's shim" in result.stdout
    assert "export PATH" not in result.stdout


def test_install_with_no_gh_on_path_says_so_in_words(forge_env: ForgeEnv) -> None:
    """Issue 36 item 8: with no gh anywhere on PATH, install says there is none ("gh on PATH is
    nothing" was the line), then the line to add."""
    target = forge_env.root / "elsewhere"
    result = forge_env.forge(
        "shim", "install", "--dir", str(target), env={"SHELL": "/bin/bash", "PATH": "/nowhere"}
    )
    assert result.returncode == 0, result.stderr
    assert "forge shim: no gh is on PATH yet; add this line to ~/.bashrc" in result.stdout
    assert "nothing" not in result.stdout


def test_issue13_item17_health_warns_when_gh_on_path_is_not_the_shim(forge_env: ForgeEnv) -> None:
    """Issue 13 item 17: `forge health` says so when `gh` on PATH bypasses the shim."""
    bypassed = {"PATH": f"{forge_env.realbin}:/usr/bin:/bin"}
    result = forge_env.forge("health", "--no-probe", env=bypassed)
    assert result.returncode == 5
    warning = f"gh on PATH is {forge_env.realbin / 'gh'}, not forge's shim"
    assert warning in result.stderr
    assert warning in forge_env.forge("health", "--json", "--no-probe", env=bypassed).stderr
    assert forge_env.forge("health", "--no-probe").stderr == ""


@pytest.mark.parametrize("directory", ["/opt/my tools/bin", '/o/$HOME "q" `x` \\b', "/o/it's"])
def test_issue13_item17_the_path_line_survives_any_directory_name(directory: str) -> None:
    """Issue 13 item 17: the printed line, pasted into bash, puts exactly that directory first."""
    from forge.health.shim_install import path_line

    wanted = path_line(Path(directory), "/bin/bash")
    result = subprocess.run(
        ["bash", "-c", f'{wanted.line}\nprintf %s "$PATH"'],
        env={"PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
    )
    assert result.stdout == f"{directory}:/usr/bin:/bin"
