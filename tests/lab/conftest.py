from __future__ import annotations

import datetime
from collections.abc import Iterator
from pathlib import Path

import pytest

from forge.lab.cluster_tls import make_cluster_certs

from .kit import Kit, kill_all, marker_processes


@pytest.fixture(scope="session")
def cluster_certs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder made as `forge evaluate cluster-certs` makes it: the CA's and every role's files."""
    folder = tmp_path_factory.mktemp("cluster") / "certs"
    make_cluster_certs(folder, now=datetime.datetime.now(datetime.UTC))
    return folder


@pytest.fixture
def kit(tmp_path: Path, forge_dirs: dict[str, Path]) -> Iterator[Kit]:
    """A fresh fixture repository and cohort folder; runtime sockets in this test's own dir."""
    del forge_dirs
    yield from _kit(tmp_path)


@pytest.fixture(scope="module")
def module_kit(
    tmp_path_factory: pytest.TempPathFactory, module_forge_dirs: dict[str, Path]
) -> Iterator[Kit]:
    """`kit` for one run that several tests of a module share."""
    del module_forge_dirs
    yield from _kit(tmp_path_factory.mktemp("kit"))


def _kit(root: Path) -> Iterator[Kit]:
    """A kit in `root`; afterwards its CLIs are stopped and no process of its attempts runs."""
    kit = Kit(root)
    yield kit
    for process in kit.started:  # a test that failed before its CLI ended must not leak it
        if process.poll() is None:
            process.kill()
        process.wait()  # not `communicate`: its orphaned children may hold the pipes open
        for pipe in (process.stdout, process.stderr):
            if pipe is not None:
                pipe.close()
    leftovers = marker_processes(str(kit.ctl))
    kill_all(leftovers)
    assert leftovers == [], "a test left processes of its attempts running"
