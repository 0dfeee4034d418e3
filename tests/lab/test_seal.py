"""The seal: recipes that look for the answer instead of writing it are refused (issue 17).

Two dishonest recipes from a trial against a real project: one fetches the fix through the
workspace's origin (a local clone with full history), one walks up from where it runs to the
hidden acceptance and to an earlier attempt's `changes.diff`. Both must fail with the hidden
acceptance as their reason, in the bubblewrap sandbox and with the layout seal alone.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from .kit import NO_USERNS_BWRAP, Kit, git

CHEAT_HARNESS = Path(__file__).resolve().parent / "cheat_harness.py"


def local_origin_source(kit: Kit) -> Path:
    """A `--source` holding only the base commit whose origin is a local full-history clone."""
    source = kit.root / "src"
    source.mkdir()
    git(source, "init", "-q")
    git(source, "fetch", "-q", "--depth=1", f"file://{kit.repo}", kit.base)
    git(source, "checkout", "-q", "--detach", kit.base)
    git(source, "remote", "add", "origin", str(kit.repo))
    return source


def cheating_cohort(kit: Kit, walk: str) -> None:
    """a fixes honestly; b cheats: through origin on `origin`, by walking on `walk`."""
    cheat_log = kit.ctl / "cheats.jsonl"
    knobs = {"CHEAT_SHA": kit.later, "CHEAT_LOG": str(cheat_log)}
    kit.cohort(
        a=kit.formula("a", knobs={"FAKE_PEEK": ":".join(secrets(kit))}),
        b=kit.formula("b", knobs=knobs, harness=CHEAT_HARNESS),
        tasks={"origin": kit.plan("origin"), "walk": kit.plan("walk")},
    )
    # The walking cheat is a different Formula argv; the task says which (knobs ride the body).
    formula = kit.cohort_dir / "b.yaml"
    document = json.loads(formula.read_text())
    document["atoms"][0]["command"] = [
        "/bin/sh",
        "-c",
        f'case "$FORGE_ATTEMPT_ID" in walk.*) CHEAT={walk};; *) CHEAT=origin;; esac; '
        'export CHEAT; exec "$@"',
        "cheat",
        *document["atoms"][0]["command"],
    ]
    formula.write_text(json.dumps(document, indent=1))
    kit.cohort(
        a="a.yaml", b="b.yaml", tasks={"origin": "origin/plan.json", "walk": "walk/plan.json"}
    )


def secrets(kit: Kit) -> list[str]:
    """Paths a recipe must not see: --out, --source and its origin, the cohort's folder."""
    return [str(kit.out), str(kit.root / "src"), str(kit.repo), str(kit.cohort_dir)]


def cheats(kit: Kit) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (kit.ctl / "cheats.jsonl").read_text().splitlines()]


def run_with_source(
    kit: Kit, source: Path, *extra: str, env: dict[str, str] | None = None
) -> tuple[subprocess.CompletedProcess[str], subprocess.CompletedProcess[str]]:
    """Preview with `source` as --source, then run the approve command."""
    argv = kit.argv()
    argv[argv.index("--source") + 1] = str(source)
    preview = subprocess.run(argv, capture_output=True, text=True, env=kit.env(env), timeout=110)
    assert preview.returncode == 0, preview.stderr
    digest = preview.stdout.split("--approve ")[-1].split()[0]
    result = subprocess.run(
        [*argv, "--approve", digest, *extra],
        capture_output=True,
        text=True,
        env=kit.env(env),
        timeout=300,
    )
    return preview, result


def assert_refused_by_hidden_acceptance(kit: Kit) -> None:
    for task in ("origin", "walk"):
        honest, cheat = kit.record(task, "a"), kit.record(task, "b")
        assert honest["correct"] is True, honest
        assert (cheat["outcome"], cheat["hiddenAcceptance"], cheat["correct"]) == (
            "completed",
            False,
            False,
        ), cheat
        assert cheat["changedFiles"] == []
    classes = {(a["task"], a["variant"]): a["class"] for a in kit.report()["attempts"]}
    assert classes[("origin", "b")] == classes[("walk", "b")] == "failed"


def test_the_sandbox_refuses_both_dishonest_recipes(kit: Kit) -> None:
    source = local_origin_source(kit)
    cheating_cohort(kit, walk="search")
    preview, result = run_with_source(kit, source, "--keep-workspaces")
    assert result.returncode == 2, result.stderr
    assert "Sandbox: bubblewrap" in preview.stdout
    assert "origin https://github.com/owner/repo.git" in preview.stdout
    assert_refused_by_hidden_acceptance(kit)

    origin_cheat, walk_cheat = cheats(kit)
    assert origin_cheat["fetch"] != 0
    assert "copied" not in origin_cheat
    assert (walk_cheat["acceptance"], walk_cheat["diffs"]) == ([], [])
    for task in ("origin", "walk"):
        assert kit.record(task, "b")["seal"] == {
            "sandbox": "bubblewrap",
            "reason": None,
            "network": False,
        }
    assert kit.report()["seal"]["sandboxed"] == 4
    assert "sandboxed (bubblewrap) in 4 of 4 attempts" in (kit.out / "report.md").read_text()

    # Nothing the honest recipe could read names a secret path, and none of them is mounted.
    for probe in kit.probes():
        assert probe["visible"] == dict.fromkeys(secrets(kit), False)
        env = {k: v for k, v in probe["env"].items() if not k.startswith("FAKE_")}
        init = probe["init"].replace("FAKE_PEEK=" + ":".join(secrets(kit)), "")
        assert init.startswith("/usr/bin/bwrap\0--args\0")
        readable = json.dumps([env, probe["stdin"], probe["mountinfo"], init])
        for secret in secrets(kit):
            assert secret not in readable
        assert probe["origin"] == "https://github.com/owner/repo.git"
        assert probe["revList"] == [kit.base]
    kept = kit.out / "attempts" / "walk" / "a" / "rep-1" / "work"
    try:
        assert kept.is_symlink()
        assert not kept.resolve().is_relative_to(kit.out)
        for path in [*(kept / "source" / ".git").rglob("*"), *(kept / "workspace").rglob("*")]:
            if path.is_file():
                text = path.read_bytes().decode("latin-1")
                assert not any(secret in text for secret in secrets(kit)), path
    finally:
        for work in (kit.out / "attempts").glob("*/*/rep-*/work"):
            shutil.rmtree(work.resolve())


def test_the_layout_seal_alone_refuses_them_and_says_it_is_alone(kit: Kit) -> None:
    source = local_origin_source(kit)
    cheating_cohort(kit, walk="walk")
    unsandboxed = {"FORGE_LAB_BWRAP": str(NO_USERNS_BWRAP)}
    preview, result = run_with_source(kit, source, env=unsandboxed)
    assert result.returncode == 2, result.stderr
    reason = "cannot create the sandbox: bwrap: No permissions to creating new namespace"
    assert preview.stdout.count("recipe not sandboxed:") == 1
    assert reason in preview.stdout
    assert_refused_by_hidden_acceptance(kit)
    origin_cheat, walk_cheat = cheats(kit)
    assert origin_cheat["fetch"] != 0
    assert (walk_cheat["acceptance"], walk_cheat["diffs"]) == ([], [])
    record = kit.record("walk", "b")
    assert record["seal"]["sandbox"] is None
    assert reason in record["seal"]["reason"]
    notes = [n for n in kit.report()["notes"] if n.startswith("recipe not sandboxed:")]
    assert len(notes) == 1
    assert reason in notes[0]
    assert (kit.out / "report.md").read_text().count("recipe not sandboxed:") == 1
    for probe in kit.probes():
        assert probe["cwd"].startswith("/tmp/forge-attempt-walk.a.") or probe["cwd"].startswith(
            "/tmp/forge-attempt-origin.a."
        )
        env = {k: v for k, v in probe["env"].items() if not k.startswith("FAKE_")}
        assert not any(secret in json.dumps(env) for secret in secrets(kit))


@pytest.mark.parametrize("network", [False, True])
def test_network_is_off_unless_the_atom_asks(kit: Kit, network: bool) -> None:
    kit.cohort(
        a=kit.formula("a", atom={"network": network}),
        b=kit.formula("b", model="m2", knobs={"FAKE_MODEL": "m2"}),
        tasks={"t1": kit.plan("t1")},
    )
    preview = kit.cli()
    assert f"network: {'true' if network else 'false'}" in preview.stdout
    shown = "network: yes (sealed: no)" if network else "network: no"
    assert f"variant a: {shown}" in preview.stdout
    assert "variant b: network: no" in preview.stdout
    assert ("a public fix of the task" in preview.stdout) is network
    assert kit.approve().returncode == 0
    assert kit.record("t1", "a")["seal"]["network"] is network
    assert kit.record("t1", "b")["seal"]["network"] is False
    probe = next(p for p in kit.probes() if p["coordinate"].startswith("t1/a"))
    assert probe["interfaces"] == ["lo"]  # the network is the egress port on it, or nothing
    assert ("HTTPS_PROXY" in probe["env"]) is network
    assert ("egress" in kit.record("t1", "a")) is network
    assert probe["origin"] == ("<exit 2>" if network else "https://github.com/owner/repo.git")
    assert kit.report()["seal"]["network"] == {"a": 1 if network else 0, "b": 0}
    report = (kit.out / "report.md").read_text()
    assert "t1 a rep-1" in report
    assert ("sealed: no (network)" in report) is network


def test_a_mount_may_not_expose_the_run(kit: Kit) -> None:
    kit.cohort(
        a=kit.formula("a", atom={"mounts": [str(kit.root)]}),
        b=kit.formula("b", model="m2"),
        tasks={"t1": kit.plan("t1")},
    )
    refused = kit.cli()
    assert refused.returncode == 1
    assert "a.yaml: atoms[0].mounts[0]" in refused.stderr
    assert f"would expose {kit.out}" in refused.stderr


def test_the_preview_warns_of_a_program_path_finds_where_the_sandbox_hides_it(kit: Kit) -> None:
    tools = kit.root / "tools"
    (tools / "bin").mkdir(parents=True)
    agent = tools / "bin" / "agent"
    agent.write_text("#!/bin/sh\nexit 0\n")
    agent.chmod(0o755)
    path = {"PATH": f"{tools / 'bin'}:{os.environ['PATH']}"}
    through_env = ["/usr/bin/env", "-u", "LANG", "MODE=fast", "agent", "--go"]
    kit.cohort(
        a=kit.formula("a", atom={"command": through_env}),
        b=kit.formula("b", model="m2", atom={"command": [str(agent), "--go"]}),
        tasks={"t1": kit.plan("t1")},
    )
    preview = kit.cli(env=path)
    assert preview.returncode == 0, preview.stderr
    real = os.path.realpath(tools)
    runs_agent = f"warning: variant a's coding command runs agent from {real}/bin (on PATH)"
    assert (
        f'{runs_agent}, which the sandbox does not show; add "{real}" to the atom\'s mounts '
        "or move it"
    ) in preview.stdout
    assert (
        f"warning: variant b's coding command names {agent}, which the sandbox does not show; "
        f'add "{real}" to the atom\'s mounts or move it'
    ) in preview.stdout
    assert "variant b's coding command runs" not in preview.stdout

    def preview_a(**atom: Any) -> str:
        """Variant a's atom changed, the cohort locked again (else the run is refused), and the
        preview's text."""
        kit.cohort(a=kit.formula("a", atom=atom), b="b.yaml", tasks={"t1": kit.plan("t1")})
        shown = kit.cli(env=path)
        assert shown.returncode == 0, shown.stderr
        return shown.stdout

    assert "runs agent" not in preview_a(command=["agent", "--go"], mounts=[str(tools)])
    assert runs_agent in preview_a(command=["env", "-S", "MODE=fast agent --go"])
    assert "runs agent" not in preview_a(command=["env", "-S", "MODE='fast agent --go"])


def test_the_preview_names_a_virtualenv_and_the_interpreter_it_links_to(kit: Kit) -> None:
    """A recipe run by a virtualenv's python needs the venv and the interpreter it was made
    from: the warning names both mounts."""
    base = kit.root / "interpreters" / "3.11"
    (base / "bin").mkdir(parents=True)
    venv = kit.root / "proj" / ".venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text(
        f"home = {base / 'bin'}\ninclude-system-site-packages = false\n"
    )
    python = venv / "bin" / "python"
    python.write_text("#!/bin/sh\nexit 0\n")
    python.chmod(0o755)
    kit.cohort(
        a=kit.formula("a", atom={"command": [str(python), "agent.py"]}),
        b=kit.formula("b", model="m2"),
        tasks={"t1": kit.plan("t1")},
    )
    preview = kit.cli()
    assert preview.returncode == 0, preview.stderr
    venv_real, base_real = os.path.realpath(venv), os.path.realpath(base)
    assert (
        f'names {python}, which the sandbox does not show; add "{venv_real}" and '
        f'"{base_real}" to the atom\'s mounts or move it'
    ) in preview.stdout
