"""The strict cohort, Formula and plan decoders (rows C1-C11): every refusal names its field."""

from __future__ import annotations

import json
from typing import Any

import pytest

from forge.attempt.cohort import decode_cohort, load_cohort
from forge.attempt.errors import LabRefusal
from forge.attempt.formula import decode_formula
from forge.attempt.plan import decode_issue, decode_plan

from .kit import Kit

SHA = "a" * 64


def cohort_doc(**changes: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "schemaVersion": 1,
        "hypothesis": "h",
        "primaryOutcome": "hiddenAcceptancePassRate",
        "variants": [
            {"name": "a", "formula": "a.yaml", "formulaSha256": SHA},
            {"name": "b", "formula": "b.yaml", "formulaSha256": "b" * 64},
        ],
        "tasks": [{"name": "t1", "plan": "t1/plan.json", "planSha256": SHA}],
        "repetitions": 2,
    }
    doc.update(changes)
    return doc


def refused(raw: bytes | dict[str, Any]) -> str:
    data = json.dumps(raw).encode() if isinstance(raw, dict) else raw
    with pytest.raises(LabRefusal) as caught:
        decode_cohort(data, file="cohort.json")
    assert caught.value.exit_code == 1
    return str(caught.value)


def test_a_valid_cohort_decodes() -> None:
    spec = decode_cohort(
        json.dumps(cohort_doc(stop={"maxAttempts": 3, "maxCostUSD": 1.5})).encode(), file="c"
    )
    assert [v.name for v in spec.variants] == ["a", "b"]
    assert spec.repetitions == 2
    assert spec.stop.max_attempts == 3
    assert spec.stop.max_cost_usd == 1.5


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        (b'{"a": 1, // no\n}', "not strict JSON"),
        (b'{"schemaVersion": 1,}', "not strict JSON"),
        (b'{"x": NaN}', "NaN is not JSON"),
        (b'{"x": Infinity}', "Infinity is not JSON"),
        (b"\xef\xbb\xbf{}", "byte-order mark"),
        (b'{"x": "\xff"}', "not UTF-8"),
        (b"[]", "top level must be a JSON object"),
        (b'{"schemaVersion": 1, "schemaVersion": 1}', "duplicate key 'schemaVersion'"),
    ],
)
def test_strict_json(raw: bytes, problem: str) -> None:
    assert problem in refused(raw)


def test_size_limit_is_on_raw_bytes() -> None:
    base = json.dumps(cohort_doc())
    padded = base[:-1] + " " * (65_536 - len(base)) + "}"
    assert len(padded.encode()) == 65_536
    decode_cohort(padded.encode(), file="c")
    assert "larger than 65536 bytes" in refused((padded[:-1] + " }").encode())


@pytest.mark.parametrize(
    ("doc", "field"),
    [
        (cohort_doc(extra=1), "cohort.json: extra: unknown field"),
        (
            cohort_doc(
                variants=[
                    {"name": "a", "formula": "a", "formulaSha256": SHA, "model": "x"},
                    {"name": "b", "formula": "b", "formulaSha256": SHA},
                ]
            ),
            "variants[0].model: unknown field",
        ),
        (
            cohort_doc(tasks=[{"name": "t", "plan": "p", "planSha256": SHA, "x": 1}]),
            "tasks[0].x: unknown field",
        ),
        (cohort_doc(stop={"maxTime": 1}), "stop.maxTime: unknown field"),
        (cohort_doc(schemaVersion=1.0), "schemaVersion: must be an integer"),
        (cohort_doc(schemaVersion="1"), "schemaVersion: must be an integer"),
        (cohort_doc(schemaVersion=True), "schemaVersion: must be an integer"),
        (cohort_doc(schemaVersion=2), "schemaVersion: must be an integer from 1 to 1"),
        (cohort_doc(repetitions=0), "repetitions"),
        (cohort_doc(repetitions=11), "repetitions"),
        (cohort_doc(repetitions=1.5), "repetitions: must be an integer"),
        (cohort_doc(stop={"maxAttempts": 0}), "stop.maxAttempts"),
        (cohort_doc(stop={"maxCostUSD": 0}), "stop.maxCostUSD"),
        (cohort_doc(stop={"maxCostUSD": "1"}), "stop.maxCostUSD: must be a number"),
        (cohort_doc(hypothesis="x" * 2001), "hypothesis: must be at most 2000 characters"),
        (cohort_doc(hypothesis="  "), "hypothesis: must not be blank"),
        (cohort_doc(primaryOutcome="HiddenAcceptancePassRate"), "primaryOutcome: must be one of"),
        (
            cohort_doc(variants=cohort_doc()["variants"][:1]),
            "variants: must hold from 2 to 2 entries",
        ),
        (
            cohort_doc(
                variants=[
                    *cohort_doc()["variants"],
                    {"name": "c", "formula": "c", "formulaSha256": SHA},
                ]
            ),
            "variants: must hold from 2 to 2",
        ),
        (cohort_doc(tasks=[]), "tasks: must hold from 1 to 50"),
        (
            cohort_doc(
                tasks=[{"name": f"t{i}", "plan": "p", "planSha256": SHA} for i in range(51)]
            ),
            "tasks: must hold from 1 to 50",
        ),
        (
            cohort_doc(tasks=[{"name": "t", "plan": "p", "planSha256": SHA}] * 2),
            "tasks[1].name: duplicate name",
        ),
        (
            cohort_doc(tasks=[{"name": "t", "plan": "../p", "planSha256": SHA}]),
            "tasks[0].plan: must be clean",
        ),
        (
            cohort_doc(tasks=[{"name": "t", "plan": "/p", "planSha256": SHA}]),
            "tasks[0].plan: must be relative",
        ),
        (
            cohort_doc(tasks=[{"name": "t", "plan": "a\\p", "planSha256": SHA}]),
            "tasks[0].plan: must not contain a backslash",
        ),
        (
            cohort_doc(tasks=[{"name": "t", "plan": "p", "planSha256": "A" * 64}]),
            "tasks[0].planSha256: must match",
        ),
        (cohort_doc(tasks=[{"name": "t"}]), "tasks[0].plan: missing required field"),
    ],
)
def test_field_refusals_name_the_field(doc: dict[str, Any], field: str) -> None:
    assert field in refused(doc)


@pytest.mark.parametrize("name", ["a", "a-9", "a" + "b" * 31])
def test_variant_names_accepted(name: str) -> None:
    variants = [
        {"name": name, "formula": "a", "formulaSha256": SHA},
        {"name": "zz", "formula": "b", "formulaSha256": SHA},
    ]
    decode_cohort(json.dumps(cohort_doc(variants=variants)).encode(), file="c")


@pytest.mark.parametrize("name", ["", "A", "9a", "a_b", "a" * 33, "a\n"])
def test_variant_names_refused(name: str) -> None:
    variants = [
        {"name": name, "formula": "a", "formulaSha256": SHA},
        {"name": "zz", "formula": "b", "formulaSha256": SHA},
    ]
    assert "variants[0].name: must match" in refused(cohort_doc(variants=variants))


def test_duplicate_variant_names_refused() -> None:
    variants = [{"name": "a", "formula": "a", "formulaSha256": SHA}] * 2
    assert "variants[1].name: duplicate name" in refused(cohort_doc(variants=variants))


def test_hypothesis_counts_characters_not_bytes() -> None:
    decode_cohort(
        json.dumps(cohort_doc(hypothesis="é" * 2000), ensure_ascii=False).encode(), file="c"
    )


def test_fifty_tasks_accepted() -> None:
    tasks = [{"name": f"t{i}", "plan": "p", "planSha256": SHA} for i in range(50)]
    assert len(decode_cohort(json.dumps(cohort_doc(tasks=tasks)).encode(), file="c").tasks) == 50


FORMULA = {
    "schemaVersion": 1,
    "name": "f",
    "atoms": [{"id": "code", "role": "coding", "command": ["h"], "timeoutMs": 1000, "model": "m"}],
}


LEARN = {"id": "learn", "role": "learn", "command": ["meta", "--json"], "timeoutMs": 900_000}


def test_a_formula_binds_one_trailing_learn_atom() -> None:
    document = {**FORMULA, "atoms": [*FORMULA["atoms"], LEARN]}
    formula = decode_formula(json.dumps(document).encode(), file="a.yaml")
    assert formula.learn is not None
    assert formula.learn.command == ("meta", "--json")
    assert formula.coding.id == "code"
    assert decode_formula(json.dumps(FORMULA).encode(), file="a.yaml").learn is None


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"extra": 1}, "extra: unknown field"),
        (
            {"atoms": [{**FORMULA["atoms"][0], "role": "review"}]},
            "atoms[0].role: must be one of coding",
        ),
        (
            {"atoms": [{**FORMULA["atoms"][0], "role": "learn"}, FORMULA["atoms"][0]]},
            "atoms[0].role: a learn atom must be the last atom",
        ),
        (
            {"atoms": [{"id": "l", "role": "learn", "command": ["m"], "timeoutMs": 1}]},
            "atoms: must hold exactly one coding atom, got 0",
        ),
        (
            {"atoms": [*FORMULA["atoms"], {**LEARN, "timeoutMs": 900_001}]},
            "atoms[1].timeoutMs: must be an integer from 1 to 900000",
        ),
        (
            {"atoms": [{**FORMULA["atoms"][0], "command": []}]},
            "atoms[0].command: must hold at least 1",
        ),
        ({"atoms": [{**FORMULA["atoms"][0], "timeoutMs": 0}]}, "atoms[0].timeoutMs"),
        ({"learning": {"recurrenceThreshold": 51}}, "learning.recurrenceThreshold"),
        (
            {"checks": [{"id": "c", "argv": ["x"], "category": "vet", "timeoutMs": 1}]},
            "checks[0].category: must be one of",
        ),
    ],
)
def test_formula_refusals(change: dict[str, Any], field: str) -> None:
    with pytest.raises(
        LabRefusal,
        match=r"a\.yaml: " + field.replace("[", r"\[").replace("]", r"\]").replace(".", r"\."),
    ):
        decode_formula(json.dumps({**FORMULA, **change}).encode(), file="a.yaml")


def atom(**fields: Any) -> dict[str, Any]:
    """FORMULA with its coding atom changed."""
    return {"atoms": [{**FORMULA["atoms"][0], **fields}]}


def test_a_formula_atom_may_name_its_egress_and_the_variables_it_is_given() -> None:
    document = {
        **FORMULA,
        **atom(
            egress=["API.Anthropic.com:443", "127.0.0.1:8080", "[::1]:9"],
            passEnv=["ANTHROPIC_API_KEY"],
        ),
    }
    coding = decode_formula(json.dumps(document).encode(), file="a.yaml").coding
    assert coding.egress == ("api.anthropic.com:443", "127.0.0.1:8080", "[::1]:9")
    assert coding.pass_env == ("ANTHROPIC_API_KEY",)
    assert coding.network is False


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (
            atom(network=True, egress=["api.anthropic.com:443"]),
            "atoms[0].egress: atom 'code' names both network and egress",
        ),
        (atom(egress=[]), "atoms[0].egress: must hold from 1 to 16 entries, got 0"),
        (atom(egress="api.anthropic.com:443"), "atoms[0].egress: must be an array"),
        (
            atom(egress=["api.anthropic.com"]),
            "atoms[0].egress[0]: 'api.anthropic.com' is not host:port",
        ),
        (atom(egress=["a.example:99999"]), "atoms[0].egress[0]: port 99999 is not between"),
        (
            atom(egress=["http://a.example:443"]),
            "atoms[0].egress[0]: 'http://a.example:443' is not",
        ),
        (atom(egress=["10.1.2.3:80"]), "atoms[0].egress[0]: '10.1.2.3:80': a private address"),
        (atom(egress=["localhost:80"]), "atoms[0].egress[0]: 'localhost:80': name loopback by"),
        (atom(egress=["a.example:1", "A.example:1"]), "atoms[0].egress[1].destination: duplicate"),
        (atom(passEnv=["ANTHROPIC API KEY"]), "atoms[0].passEnv[0]: must match"),
    ],
)
def test_a_bad_egress_or_passed_variable_is_refused_naming_it(
    change: dict[str, Any], problem: str
) -> None:
    with pytest.raises(LabRefusal) as refusal:
        decode_formula(json.dumps({**FORMULA, **change}).encode(), file="a.yaml")
    assert f"a.yaml: {problem}" in str(refusal.value)


def test_formula_yaml_refuses_duplicate_keys() -> None:
    with pytest.raises(LabRefusal, match="duplicate key 'name'"):
        decode_formula(b"schemaVersion: 1\nname: a\nname: b\natoms: []\n", file="a.yaml")


def test_formula_threshold_default() -> None:
    assert decode_formula(json.dumps(FORMULA).encode(), file="f").recurrence_threshold == 3


PLAN = {
    "schemaVersion": 1,
    "task": "issue.json",
    "acceptance": "acceptance.sh",
    "baseCommit": "0" * 40,
    "allowedFiles": ["calc.py"],
}


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"acceptance": "../x.sh"}, "acceptance: must be clean"),
        ({"task": "./issue.json"}, "task: must be clean"),
        ({"baseCommit": "HEAD"}, "baseCommit: must match"),
        ({"allowedFiles": []}, "allowedFiles: must hold at least 1"),
        (
            {"setup": [{"id": "s", "argv": ["x"], "dir": "../up", "timeoutMs": 1}]},
            "setup[0].dir: must be clean",
        ),
        ({"requireInitialFailure": "yes"}, "requireInitialFailure: must be true or false"),
        ({"protectedExemptPaths": []}, "protectedExemptPaths: unknown field"),
    ],
)
def test_plan_refusals(change: dict[str, Any], field: str) -> None:
    with pytest.raises(LabRefusal) as caught:
        decode_plan(json.dumps({**PLAN, **change}).encode(), file="t1/plan.json")
    assert f"t1/plan.json: {field}" in str(caught.value)


def test_load_checks_pins_and_files(kit: Kit) -> None:
    a, b = kit.formula("a"), kit.formula("b", model="m2")
    plan = kit.plan("t1")
    path = kit.cohort(a=a, b=b, tasks={"t1": plan})
    cohort = load_cohort(path)
    assert set(cohort.pins()) == {
        "cohort.json",
        "a.yaml",
        "b.yaml",
        "t1/plan.json",
        "t1/issue.json",
        "t1/acceptance.sh",
    }

    (kit.cohort_dir / b).write_text((kit.cohort_dir / b).read_text() + " ")
    with pytest.raises(
        LabRefusal, match=r"variants\[1\]\.formulaSha256: sha256 mismatch for b\.yaml"
    ):
        load_cohort(path)


def test_same_formula_bytes_refused_one_newline_accepted(kit: Kit) -> None:
    a = kit.formula("a")
    (kit.cohort_dir / "b.yaml").write_bytes((kit.cohort_dir / a).read_bytes())
    path = kit.cohort(a=a, b="b.yaml", tasks={"t1": kit.plan("t1")})
    with pytest.raises(LabRefusal, match="both variants pin the same Formula bytes"):
        load_cohort(path)
    (kit.cohort_dir / "b.yaml").write_bytes((kit.cohort_dir / a).read_bytes() + b"\n")
    load_cohort(kit.cohort(a=a, b="b.yaml", tasks={"t1": kit.plan("t1")}))


def test_symlinked_and_missing_files_refused(kit: Kit) -> None:
    a, b = kit.formula("a"), kit.formula("b", model="m2")
    plan = kit.plan("t1")
    (kit.cohort_dir / "link.yaml").symlink_to(kit.cohort_dir / b)
    path = kit.cohort(a=a, b="link.yaml", tasks={"t1": plan})
    with pytest.raises(LabRefusal, match="symbolic link"):
        load_cohort(path)
    (kit.cohort_dir / "t1" / "acceptance.sh").unlink()
    path = kit.cohort(a=a, b=b, tasks={"t1": plan})
    with pytest.raises(LabRefusal, match=r"t1/acceptance\.sh does not exist"):
        load_cohort(path)


def test_a_refusal_lists_every_faulty_field_at_once(kit: Kit) -> None:
    """Issue 17: three wrong fields (a bound, a name, a pin) in one refusal, not one per run."""
    path = kit.cohort(
        a=kit.formula("a"), b=kit.formula("b", model="m2"), tasks={"t1": kit.plan("t1")}
    )
    document = json.loads(path.read_text())
    document["repetitions"] = 0
    document["variants"][1]["name"] = "B"
    document["tasks"][0]["planSha256"] = "0" * 64
    path.write_text(json.dumps(document))
    with pytest.raises(LabRefusal) as caught:
        load_cohort(path)
    message = str(caught.value)
    assert message.startswith("every problem found (fix them all, then preview again):")
    for field in (
        "repetitions: must be an integer from 1 to 10, got 0",
        "variants[1].name: must match",
        "tasks[0].planSha256: sha256 mismatch for t1/plan.json",
    ):
        assert f"{path}: {field}" in message
    assert len(message.splitlines()) == 4


def test_problems_in_several_files_are_listed_together(kit: Kit) -> None:
    kit.formula("a", timeout_ms=0)
    plan = kit.plan("t1")
    plan_file = kit.cohort_dir / plan
    plan_file.write_text(plan_file.read_text().replace('"calc.py"', '"../calc.py"'))
    path = kit.cohort(a="a.yaml", b=kit.formula("b", model="m2"), tasks={"t1": plan})
    with pytest.raises(LabRefusal) as caught:
        load_cohort(path)
    message = str(caught.value)
    assert "a.yaml: atoms[0].timeoutMs: must be an integer from 1" in message
    assert "t1/plan.json: allowedFiles[0]: must be clean" in message


def test_an_issue_may_freeze_its_state_as_open_only() -> None:
    issue = {"title": "t", "body": "b"}
    assert decode_issue(json.dumps(issue).encode(), file="i.json").title == "t"
    assert decode_issue(json.dumps({**issue, "state": "OPEN"}).encode(), file="i.json").body == "b"
    with pytest.raises(LabRefusal, match=r"i\.json: state: must be one of OPEN"):
        decode_issue(json.dumps({**issue, "state": "CLOSED"}).encode(), file="i.json")
