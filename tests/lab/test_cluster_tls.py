"""`forge evaluate cluster-certs`, and the flags that make `--executor dask` use TLS or say it
does not: refusals and previews only, so no cluster runs here (test_cluster*.py run them)."""

from __future__ import annotations

import argparse
import json
import re
import shlex
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from cryptography import x509

from forge.attempt.cohort import CohortSpec, Stop, TaskSpec, VariantSpec
from forge.attempt.errors import LabRefusal
from forge.lab.cluster_tls import CA_FILE, client_tls, dask_tls_options, scheduler_problems
from forge.lab.report import RunState, build_report, render_markdown
from forge.lab.scheduler import ran_on_insecure_cluster

from .kit import Kit

FILES = [
    CA_FILE,
    *(f"{role}.{kind}" for role in ("client", "scheduler", "worker") for kind in ("key", "pem")),
]


def cluster_certs(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "forge.cli", "evaluate", "cluster-certs", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_cluster_certs_makes_a_private_ca_folder_and_prints_the_commands(tmp_path: Path) -> None:
    folder = tmp_path / "certs"
    made = cluster_certs(str(folder), "--host", "sched.test")
    assert made.returncode == 0, made.stderr
    assert sorted(path.name for path in folder.iterdir()) == sorted(FILES)  # no CA key kept
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    for role in ("scheduler", "worker", "client"):
        assert stat.S_IMODE((folder / f"{role}.key").stat().st_mode) == 0o600
    ca = x509.load_pem_x509_certificate((folder / CA_FILE).read_bytes())
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    for role in ("scheduler", "worker", "client"):
        cert = x509.load_pem_x509_certificate((folder / f"{role}.pem").read_bytes())
        cert.verify_directly_issued_by(ca)
        assert not cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    lines = made.stdout.splitlines()
    scheduler = "tls://sched.test:8786"
    for command in (
        ["dask", "scheduler", *dask_tls_options(folder, "scheduler")],
        ["dask", "worker", scheduler, *dask_tls_options(folder, "worker")],
        ["--executor", "dask", "--scheduler", scheduler, "--cluster-certs", str(folder)],
    ):
        assert f"  {shlex.join(command)}" in lines

    again = cluster_certs(str(folder))
    assert again.returncode == 1
    assert f"cluster-certs: {folder} is not an empty directory" in again.stderr
    assert sorted(path.name for path in folder.iterdir()) == sorted(FILES)


def two_variants(kit: Kit, **atom: object) -> None:
    kit.cohort(
        a=kit.formula("a", atom=dict(atom)),
        b=kit.formula("b", model="m2"),
        tasks={"t1": kit.plan("t1")},
    )


def flags(scheduler: str, executor: str = "dask", **given: object) -> argparse.Namespace:
    return argparse.Namespace(
        executor=executor,
        scheduler=scheduler,
        cluster_certs=given.get("certs"),
        insecure_cluster=given.get("insecure", False),
    )


INSECURE = (
    "--scheduler {} is not TLS: a Dask scheduler runs any function from anyone who connects to "
    "it, on its workers, outside the sandbox. Start the cluster with TLS (`forge evaluate "
    "cluster-certs DIR` makes the certificates and prints its commands) and pass --scheduler "
    "tls://HOST:PORT --cluster-certs DIR, or pass --insecure-cluster to run on it anyway (the "
    "report will say so)"
)


def test_a_tcp_scheduler_is_refused_unless_the_cluster_is_declared_insecure(kit: Kit) -> None:
    """The attack this closes: a plain Dask scheduler runs code from anyone who connects."""
    two_variants(kit)
    address = "tcp://127.0.0.1:8786"
    refused = kit.cli("--executor", "dask", "--scheduler", address)
    assert refused.returncode == 1
    assert INSECURE.format(address) in refused.stderr
    assert scheduler_problems(flags("127.0.0.1:8786")) == [INSECURE.format("127.0.0.1:8786")]
    declared = kit.cli("--executor", "dask", "--scheduler", address, "--insecure-cluster")
    assert declared.returncode == 0, declared.stderr
    assert f"Runs in: the Dask cluster at {address}, WITHOUT TLS (--insecure-cluster)" in (
        declared.stdout
    )


def test_a_tls_scheduler_needs_the_clients_certificate_and_key(
    kit: Kit, cluster_certs: Path, tmp_path: Path
) -> None:
    address = "tls://127.0.0.1:8786"
    assert scheduler_problems(flags(address)) == [
        f"--scheduler {address} needs --cluster-certs DIR: the folder with the client's "
        "certificate (ca.pem, client.pem, client.key; `forge evaluate cluster-certs DIR` makes "
        "them)"
    ]
    assert scheduler_problems(flags(address, certs="c", insecure=True)) == [
        f"--insecure-cluster contradicts the TLS scheduler {address}"
    ]
    assert scheduler_problems(flags("tcp://h:1", certs="c", insecure=True)) == [
        "--cluster-certs needs a tls:// scheduler, got tcp://h:1"
    ]
    assert scheduler_problems(flags(address, executor="local", certs="c")) == [
        "--scheduler is only meaningful with --executor dask",
        "--cluster-certs is only meaningful with --executor dask",
    ]
    mixed = tmp_path / "mixed"
    shutil.copytree(cluster_certs, mixed)
    shutil.copy(mixed / "worker.key", mixed / "client.key")
    with pytest.raises(LabRefusal, match=re.escape("client.pem and client.key do not load")):
        client_tls(mixed)

    two_variants(kit)
    tls = ("--executor", "dask", "--scheduler", address)
    empty = tmp_path / "empty"
    empty.mkdir()
    missing = kit.cli(*tls, "--cluster-certs", str(empty))
    assert missing.returncode == 1
    assert f"--cluster-certs {empty}: no ca.pem, client.pem, client.key there" in missing.stderr
    good = kit.cli(*tls, "--cluster-certs", str(cluster_certs))
    assert good.returncode == 0, good.stderr
    assert (
        f"Runs in: the Dask cluster at {address} (TLS, as {cluster_certs}/client.pem)"
        in good.stdout
    )


def test_a_recipe_may_not_mount_the_clients_certificate(kit: Kit, cluster_certs: Path) -> None:
    """client.key submits work to the cluster: its folder is hidden like --out and --source."""
    two_variants(kit, mounts=[str(cluster_certs)])
    refused = kit.cli(
        *("--executor", "dask", "--scheduler", "tls://127.0.0.1:8786"),
        *("--cluster-certs", str(cluster_certs)),
    )
    assert refused.returncode == 1
    assert f"would expose {cluster_certs} to the recipe" in refused.stderr


SPEC = CohortSpec(
    hypothesis="b is better",
    primary_outcome="hiddenAcceptancePassRate",
    variants=(VariantSpec("a", "a.yaml", "a" * 64), VariantSpec("b", "b.yaml", "b" * 64)),
    tasks=(TaskSpec("t1", "t1/plan.json", "1" * 64),),
    repetitions=1,
    stop=Stop(),
)


def test_the_report_says_the_cluster_was_insecure_if_any_invocation_was() -> None:
    secure = json.dumps({"startedAt": 1.0, "parallel": 1, "resume": False, "executor": "dask"})
    insecure = json.dumps({"startedAt": 2.0, "executor": "dask", "insecureCluster": True})
    assert not ran_on_insecure_cluster(f"{secure}\n{secure}\n")
    assert ran_on_insecure_cluster(f"{insecure}\n{secure}\n")
    assert not ran_on_insecure_cluster(f'{secure}\n{{"insecureClus')  # cut short by a crash

    report = build_report(SPEC, RunState("complete", insecure_cluster=True), [])
    assert report["seal"]["insecureCluster"] is True
    assert any(note.startswith("Insecure cluster: ") for note in report["notes"])
    assert "WITHOUT TLS (--insecure-cluster)" in render_markdown(SPEC, report, [])
    plain = build_report(SPEC, RunState("complete"), [])
    assert "insecureCluster" not in plain["seal"]
    assert not any("Insecure" in note for note in plain["notes"])
