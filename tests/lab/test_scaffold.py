"""`forge evaluate init` and `forge evaluate pin`: a starter cohort that runs as written."""

from __future__ import annotations

import json
import subprocess

from .kit import PYTHON, Kit


def forge(kit: Kit, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PYTHON, "-m", "forge.cli", "evaluate", *argv],
        cwd=kit.root,
        env=kit.env(),
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_init_then_pin_gives_a_cohort_that_runs(kit: Kit) -> None:
    made = forge(
        kit,
        *("init", "--source", "fx", "--base", kit.base[:10]),
        *("--acceptance", "grep -q 'a + b' calc.py", "--out", "lab"),
        *("--allowed", "calc.py", "--check", "test -f calc.py"),
    )
    assert made.returncode == 0, made.stderr
    assert "forge evaluate pin lab/cohort.json" in made.stdout
    lab = kit.root / "lab"
    assert sorted(p.name for p in lab.rglob("*") if p.is_file()) == [
        "a.yaml",
        "acceptance.sh",
        "b.yaml",
        "cohort.json",
        "issue.json",
        "plan.json",
    ]
    plan = json.loads((lab / "task-1" / "plan.json").read_text())
    assert (plan["baseCommit"], plan["allowedFiles"]) == (kit.base, ["calc.py"])
    assert plan["checks"][0]["argv"] == ["/bin/sh", "-c", "test -f calc.py"]

    current = forge(kit, "pin", "lab/cohort.json")
    assert current.returncode == 0, current.stderr
    assert "Every pin in" in current.stdout
    formula = lab / "b.yaml"
    formula.write_text(formula.read_text().replace("model-b", "model-c"))
    edited = forge(kit, "pin", "lab/cohort.json")
    assert edited.returncode == 0, edited.stderr
    assert "variants[1].formulaSha256 (b.yaml): " in edited.stdout
    assert "variants[0]" not in edited.stdout

    preview = forge(kit, "--cohort", "lab/cohort.json", "--source", "fx", "--out", "res")
    assert preview.returncode == 0, preview.stderr
    digest = preview.stdout.split("--approve ")[-1].split()[0]
    ran = forge(
        kit, "--cohort", "lab/cohort.json", "--source", "fx", "--out", "res", "--approve", digest
    )
    assert ran.returncode == 2, ran.stderr  # the placeholder recipe changes nothing
    report = json.loads((kit.root / "res" / "report.json").read_text())
    assert report["status"] == "complete"
    assert [a["outcome"] for a in report["attempts"]] == ["no-change", "no-change"]
    assert [a["hiddenAcceptance"] for a in report["attempts"]] == [False, False]


def test_init_refuses_every_faulty_argument_at_once(kit: Kit) -> None:
    (kit.root / "lab").mkdir()
    (kit.root / "lab" / "x").write_text("")
    refused = forge(
        kit,
        *("init", "--source", "fx", "--base", "0" * 40, "--acceptance", "true"),
        *("--out", "lab", "--task", "Bad Name", "--allowed", "../x"),
    )
    assert refused.returncode == 1
    for problem in ("--task must match", "is not an empty directory", "--allowed '../x'", "--base"):
        assert problem in refused.stderr
