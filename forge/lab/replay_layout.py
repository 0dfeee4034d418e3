"""How a replayed project is imported, and the path rule that makes a tree's own code the code
under test in every run of its tests.

A project is imported from its **import roots**: the folders its build configuration maps the
packages from (setuptools' `package-dir` or `packages.find.where`, hatch's wheel `packages`,
poetry's `packages[].from`, pdm's `package-dir`, setup.cfg's `package_dir` or `find` `where`),
else `src/` when it holds Python code (the `src` layout), else the repository root (the flat
layout). The rule: every run puts `<tree>/<root>` for each root other than the top level first
on `PYTHONPATH` (the top level is already first: `python -m pytest` puts the working directory
there). That beats any installed copy of the project in the interpreter's environment, editable
or not: `PYTHONPATH` precedes site-packages and every `.pth` entry, and the editable finders of
setuptools and `editables` are appended after the path finder. Replay then checks, from inside
each run, where the project's top-level modules were really imported from.

Everything here is pure: the tree's file list and manifest bytes in, the layout out.
"""

from __future__ import annotations

import configparser
import posixpath
import shlex
import sys
import tomllib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from forge.attempt.fields import clean_path_problem

MAX_NAMES = 200
"""The project's top-level names replay checks the origin of; a larger list is cut (sorted)."""
NAMES_ENV = "FORGE_REPLAY_PROJECT_MODULES"
"""The event plugin reads the names to report on from here (comma-separated identifiers)."""
NOT_PROJECT_MODULES = frozenset({"setup", "conftest", "noxfile", "fabfile", "tasks"})
NOT_SOURCE_FOLDERS = frozenset(
    {"tests", "test", "testing", "docs", "doc", "examples", "example", "benchmarks", "bench"}
    | {"scripts", "tools", "vendor", "_vendor", "vendored", "third_party", "thirdparty"}
)
"""Folders whose packages are not the project's importable code (a vendored copy of a library
shares the installed library's name)."""

Read = Callable[[str], "bytes | None"]
"""A tracked file's bytes at the commit being read, or None when it is absent or not a file."""


@dataclass(frozen=True)
class Layout:
    roots: tuple[str, ...]
    """Import roots relative to the repository root; `.` for a flat layout."""
    found_by: str
    """How the roots were found, in words, for approval.md."""
    names: tuple[str, ...]
    """The project's top-level names (what must come from the tree): the modules and packages
    in its roots, and every package one folder down (`lib/pkg/__init__.py`), so a layout no
    configuration names is still checked."""

    @property
    def kind(self) -> str:
        if self.roots == (".",):
            return "flat"
        return "src" if self.roots == ("src",) else "configured"

    @property
    def path_roots(self) -> tuple[str, ...]:
        """The roots `PYTHONPATH` must carry (the top level is on `sys.path` already)."""
        return tuple(root for root in self.roots if root != ".")

    def pythonpath(self, tree: str) -> str:
        return ":".join(posixpath.join(tree, root) for root in self.path_roots)

    def shell_pythonpath(self) -> str:
        """`PYTHONPATH=...` for a shell whose working directory is the tree, or ''."""
        if not self.path_roots:
            return ""
        joined = ":".join(f'"$PWD"/{shlex.quote(root)}' for root in self.path_roots)
        return f"PYTHONPATH={joined}"

    def describe(self) -> str:
        if not self.path_roots:
            return f"flat layout ({self.found_by}): the tree's top level, first on sys.path"
        shown = ", ".join(f"<tree>/{root}" for root in self.path_roots)
        return f"{self.kind} layout ({self.found_by}): PYTHONPATH={shown}"


def find_layout(files: Iterable[str], read: Read) -> Layout:
    """The import roots of the project at the repository root, and its top-level names."""
    tracked = set(files)
    roots, found_by = configured_roots(read)
    usable = tuple(root for root in roots if _usable(root, tracked))
    if not usable:
        if any(path.startswith("src/") and path.endswith(".py") for path in tracked):
            usable, found_by = ("src",), "src/ holds Python code"
        else:
            usable, found_by = (".",), "no configured package folder and no src/"
    return Layout(usable, found_by, project_names(tracked, usable))


def merged(first: Layout, second: Layout) -> Layout:
    """Both commits' roots (a PR may move the code): the first's, then the second's new ones."""
    if first == second:
        return first
    roots = first.roots + tuple(r for r in second.roots if r not in first.roots)
    names = tuple(sorted(set(first.names) | set(second.names)))[:MAX_NAMES]
    found_by = first.found_by if first.found_by == second.found_by else "base and merge differ"
    return Layout(roots, found_by, names)


def configured_roots(read: Read) -> tuple[tuple[str, ...], str]:
    """Roots named by pyproject.toml, else by setup.cfg; ((), '') when neither names one."""
    pyproject = _toml(read("pyproject.toml"))
    for where, finder in _FINDERS:
        roots = finder(pyproject)
        if roots:
            return _dedup(roots), f"pyproject.toml {where}"
    roots = _setup_cfg(read("setup.cfg"))
    if roots:
        return _dedup(roots), "setup.cfg [options] package_dir / packages.find where"
    return (), ""


def project_names(files: set[str], roots: Iterable[str]) -> tuple[str, ...]:
    """Packages and modules directly in each root, and top-level packages one folder down
    (outside tests, docs, vendored code); tests, tooling and standard library names left out."""
    names: set[str] = set()
    for path in files:
        parts = path.split("/")
        if (
            len(parts) == 3
            and parts[2] == "__init__.py"
            and parts[0] not in NOT_SOURCE_FOLDERS
            and f"{parts[0]}/__init__.py" not in files
            and parts[1].isidentifier()
            and not _never_judged(parts[1])
        ):
            names.add(parts[1])
    for root in roots:
        prefix = "" if root == "." else f"{root}/"
        for path in files:
            if not path.startswith(prefix) or not path.endswith(".py"):
                continue
            first, _, rest = path[len(prefix) :].partition("/")
            name = first if rest else first.removesuffix(".py")
            if rest and root == "." and f"{first}/__init__.py" not in files:
                continue  # at the top level only a real package: docs/conf.py is not one
            if name.isidentifier() and not _never_judged(name):
                names.add(name)
    return tuple(sorted(names))[:MAX_NAMES]


def foreign_imports(imported: Mapping[str, str | None], tree: str) -> list[tuple[str, str]]:
    """(name, location) of every project module a run imported from outside `tree` (both
    resolved paths); a module with no location (a namespace package) is not judged."""
    prefix = tree.rstrip("/") + "/"
    return sorted(
        (name, location)
        for name, location in imported.items()
        if location is not None and not location.startswith(prefix)
    )


def _never_judged(name: str) -> bool:
    """Tests and tooling modules, and a standard library name (the interpreter may have imported
    its own `types` or `code` before any test ran: that is not a shadowing copy of the project)."""
    return (
        name in NOT_PROJECT_MODULES
        or name in sys.stdlib_module_names
        or name in ("test", "tests", "testing")
        or name.startswith("test_")
        or name.endswith("_test")
    )


def _usable(root: str, files: set[str]) -> bool:
    """A clean relative folder the tree holds files under, and no `PYTHONPATH` separator."""
    if root == ".":
        return True
    return (
        clean_path_problem(root) is None
        and ":" not in root
        and any(path.startswith(f"{root}/") for path in files)
    )


def _dedup(roots: Iterable[str]) -> tuple[str, ...]:
    seen: list[str] = []
    for root in roots:
        normal = posixpath.normpath(root.strip().rstrip("/") or ".")
        if normal not in seen:
            seen.append(normal)
    return tuple(seen)


def _toml(raw: bytes | None) -> dict[str, Any]:
    if raw is None:
        return {}
    try:
        return tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError):
        return {}


def _get(document: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(document, dict):
            return None
        document = document.get(key)
    return document


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [item for item in value if isinstance(item, str)]
    return []


def _setuptools(pyproject: dict[str, Any]) -> list[str]:
    package_dir = _get(pyproject, "tool", "setuptools", "package-dir")
    if isinstance(package_dir, dict) and isinstance(package_dir.get(""), str):
        return [package_dir[""]]
    return _strings(_get(pyproject, "tool", "setuptools", "packages", "find", "where"))


def _hatch(pyproject: dict[str, Any]) -> list[str]:
    packages = _strings(_get(pyproject, "tool", "hatch", "build", "targets", "wheel", "packages"))
    return [posixpath.dirname(package.rstrip("/")) or "." for package in packages]


def _poetry(pyproject: dict[str, Any]) -> list[str]:
    packages = _get(pyproject, "tool", "poetry", "packages")
    if not isinstance(packages, list):
        return []
    return [
        item.get("from", ".") if isinstance(item.get("from", "."), str) else "."
        for item in packages
        if isinstance(item, dict)
    ]


def _pdm(pyproject: dict[str, Any]) -> list[str]:
    return _strings(_get(pyproject, "tool", "pdm", "build", "package-dir"))


_FINDERS: tuple[tuple[str, Callable[[dict[str, Any]], list[str]]], ...] = (
    ("[tool.setuptools] package-dir / packages.find where", _setuptools),
    ("[tool.hatch.build.targets.wheel] packages", _hatch),
    ("[tool.poetry] packages[].from", _poetry),
    ("[tool.pdm.build] package-dir", _pdm),
)


def _setup_cfg(raw: bytes | None) -> list[str]:
    if raw is None:
        return []
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(raw.decode("utf-8"))
    except (UnicodeDecodeError, configparser.Error):
        return []
    package_dir = parser.get("options", "package_dir", fallback="")
    for line in package_dir.splitlines():
        key, sep, value = line.partition("=")
        if sep and not key.strip():
            return [value.strip()]
    where = parser.get("options.packages.find", "where", fallback="").strip()
    return [where] if where else []
