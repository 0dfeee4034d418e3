"""Replay's layout rules, pure: which folders a project is imported from, the names that must come
from the tree, and the path rule written into the task's files (issue #41)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from forge.lab.replay_layout import (
    Layout,
    find_layout,
    foreign_imports,
    merged,
    project_names,
)


def layout(files: list[str], manifests: dict[str, str] | None = None) -> Layout:
    texts = {name: text.encode() for name, text in (manifests or {}).items()}
    return find_layout([*files, *texts], texts.get)


@pytest.mark.parametrize(
    ("manifest", "text", "root"),
    [
        ("pyproject.toml", "[tool.setuptools.package-dir]\n'' = 'lib'\n", "lib"),
        ("pyproject.toml", "[tool.setuptools.packages.find]\nwhere = ['lib']\n", "lib"),
        ("pyproject.toml", "[tool.hatch.build.targets.wheel]\npackages = ['lib/pkg']\n", "lib"),
        ("pyproject.toml", "[tool.poetry]\npackages = [{include = 'pkg', from = 'lib'}]\n", "lib"),
        ("pyproject.toml", "[tool.pdm.build]\npackage-dir = 'lib'\n", "lib"),
        ("setup.cfg", "[options]\npackage_dir =\n    =lib\n", "lib"),
        ("setup.cfg", "[options.packages.find]\nwhere = lib\n", "lib"),
    ],
)
def test_each_build_backend_names_its_package_folder(manifest: str, text: str, root: str) -> None:
    found = layout(["lib/pkg/__init__.py", "src/other.py"], {manifest: text})
    assert found.roots == (root,)
    assert found.found_by.startswith(manifest)
    assert "pkg" in found.names


def test_without_configuration_src_then_the_top_level() -> None:
    src = layout(["src/pkg/__init__.py", "tests/test_pkg.py"], {"pyproject.toml": "[project]\n"})
    assert (src.roots, src.kind, src.names) == (("src",), "src", ("pkg",))
    assert src.pythonpath("/t") == "/t/src"
    flat = layout(
        ["pkg/__init__.py", "mod.py", "setup.py", "conftest.py", "tests/__init__.py", "types.py"]
    )
    assert (flat.roots, flat.kind, flat.path_roots) == ((".",), "flat", ())
    assert flat.names == ("mod", "pkg")
    assert flat.shell_pythonpath() == ""


def test_a_root_that_is_not_a_clean_folder_of_the_tree_is_never_used() -> None:
    """A pyproject is the repository's text: a root leaving the tree, naming another path list,
    or holding nothing is ignored, and the structural rule decides."""
    for bad in ("../../etc", "/usr/lib", "a:b", "missing"):
        text = f"[tool.setuptools.package-dir]\n'' = '{bad}'\n"
        found = layout(["src/pkg/__init__.py", "a:b/x.py"], {"pyproject.toml": text})
        assert found.roots == ("src",), bad


def test_the_shell_rule_quotes_a_hostile_folder_name(tmp_path: Path) -> None:
    """The roots go into acceptance.sh and the check's `sh -c`: a folder named to run a command
    is a literal path, and nothing runs."""
    name = "src$(touch pwned)'`touch pwned2`"
    found = layout(
        [f"{name}/pkg/__init__.py"],
        {"pyproject.toml": f'[tool.pdm.build]\npackage-dir = "{name}"\n'},
    )
    assert found.roots == (name,)
    script = f"{found.shell_pythonpath()} exec printenv PYTHONPATH"
    run = subprocess.run(
        ["sh", "-c", script], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    assert run.stdout == f"{tmp_path}/{name}\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_packages_one_folder_down_are_the_projects_unless_vendored_or_tests() -> None:
    files = {
        "lib/gadget/__init__.py",
        "vendor/requests/__init__.py",
        "tests/helpers/__init__.py",
        "pkg/__init__.py",
        "pkg/sub/__init__.py",
        "docs/conf.py",
    }
    assert project_names(files, (".",)) == ("gadget", "pkg")


def test_a_pr_that_moves_the_code_keeps_both_roots() -> None:
    base = layout(["pkg/__init__.py"])
    merge = layout(["src/pkg/__init__.py"])
    both = merged(base, merge)
    assert both.roots == (".", "src")
    assert both.path_roots == ("src",)


def test_only_modules_from_outside_the_tree_are_foreign() -> None:
    imported = {
        "inside": "/w/base/src/inside/__init__.py",
        "prefix": "/w/base-other/prefix.py",
        "installed": "/venv/site-packages/installed/__init__.py",
        "namespace": None,
    }
    assert foreign_imports(imported, "/w/base") == [
        ("installed", "/venv/site-packages/installed/__init__.py"),
        ("prefix", "/w/base-other/prefix.py"),
    ]
