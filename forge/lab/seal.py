"""What keeps the answer out of a recipe's reach, as the preview and the report state it.

Two layers: the layout seal (an attempt's trees in a private directory outside `--out`, an
attempt source holding only the base commit and naming no local path) always holds; the
bubblewrap sandbox (`forge.attempt.sandbox`) holds where the platform runs it, and shows a
recipe an allow-list of the machine. The protected paths, which not even a mount may show, are
decided here, once, from the run's paths and the caller's environment.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path

from forge.attempt import sandbox
from forge.attempt.checkouts import SourceFacts
from forge.attempt.cohort import Cohort
from forge.paths import config_file, runtime_dir, state_dir


def hidden_paths(
    *, cohort_dir: Path, out: Path, source: SourceFacts, env: Mapping[str, str]
) -> tuple[str, ...]:
    """The protected paths: `--out`, `--source` with its local origins, its main repository (for
    a linked worktree) and its alternates, the cohort's folder (the hidden acceptance lives
    there) and forge's own directories (its sockets among them). Absent from the sandbox even
    where an allowed folder or a mount holds them."""
    return sandbox.realpaths(
        [
            str(cohort_dir),
            str(out),
            source.toplevel,
            *source.local_origins,
            *source.stores,
            str(state_dir()),
            str(config_file().parent),
            str(runtime_dir()),
            env.get("XDG_RUNTIME_DIR"),
        ]
    )


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _homes(env: Mapping[str, str]) -> list[str]:
    return sorted({os.path.realpath(h) for h in (env.get("HOME"), str(Path.home())) if h})


def check_mounts(cohort: Cohort, hidden: Sequence[str], env: Mapping[str, str]) -> list[str]:
    """Problems with the Formulas' `mounts`: one may sit in the home directory (an interpreter
    installed there), never hold the home itself, nor hold or sit inside a protected path."""
    homes = _homes(env)
    problems = []
    for index, variant in enumerate(cohort.variants):
        for position, mount in enumerate(variant.formula.coding.mounts):
            real = os.path.realpath(mount)
            exposed = [p for p in hidden if _inside(real, p) or _inside(p, real)]
            exposed += [h for h in homes if _inside(h, real)]
            for path in exposed:
                problems.append(
                    f"{variant.spec.formula}: atoms[0].mounts[{position}]: {mount} would "
                    f"expose {path} to the recipe (variants[{index}])"
                )
    return problems


def review_lines(
    cohort: Cohort,
    probe: sandbox.Probe,
    *,
    hidden: Sequence[str],
    origin: str | None,
    binds: Sequence[str] = (),
    search_path: str = os.defpath,
    agent_cli: str | None = None,
) -> list[str]:
    """The seal as the preview states it: exactly what a sandboxed step sees, and a warning for
    each command path it will not see (a program named bare is looked up on `search_path`, the
    caller's PATH, as the attempt will); a `claude-code` variant's step also sees `agent_cli`."""
    lines = [
        "Seal: each attempt works in a private 0700 directory outside --out (removed afterwards "
        "unless --keep-workspaces); its source holds only the base commit, origin "
        + (origin or "none")
        + " (none for a variant with network or egress), no FETCH_HEAD, a fetch refspec that "
        "matches nothing; git runs on the recipe's trees only through a git folder forge made "
        "and the recipe never sees",
    ]
    if probe.program is None:
        lines.append(f"recipe not sandboxed: {probe.reason}; the layout seal alone holds")
        return lines
    system = [
        f"{root} -> {os.readlink(root)}" if os.path.islink(root) else root
        for root in sandbox.SYSTEM
        if os.path.lexists(root)
    ]
    lines += [
        f"Sandbox: {sandbox.NAME} ({probe.program}) for the recipe and, apart, for each "
        "verification view. A step sees only:",
        "  read-only: " + ", ".join(system),
        "  the recipe: its workspace and home (writable), its task file (read-only)",
        "  a verification view: the view and a fresh home (writable), the attempt source's git "
        "folder and the acceptance script (read-only)",
        "  private and empty: " + ", ".join(sandbox.PRIVATE_TMP) + "; /proc, /dev",
    ]
    protected = [
        p
        for p in hidden
        if not any(p != h and _inside(p, h) for h in hidden)
        and any(_inside(p, root) for root in (*sandbox.SYSTEM, *_all_mounts(cohort)))
    ]
    if protected:
        lines.append("  absent although inside a shown folder: " + ", ".join(protected))
    for variant in cohort.variants:
        atom = variant.formula.coding
        network = "network: yes (sealed: no)" if atom.network else "network: no"
        if atom.egress:
            network = f"network: only {', '.join(atom.egress)} through forge's egress proxy"
        lines.append(f"  variant {variant.spec.name}: {network}")
        if atom.pass_env:
            lines.append(f"    the coding step is given the caller's {', '.join(atom.pass_env)}")
        if atom.agent is not None and agent_cli is not None:
            lines.append(f"    the coding step runs the Claude Code CLI {agent_cli} (read-only)")
        for mount in variant.formula.coding.mounts:
            lines.append(f"    mounts {mount} read-only")
        if variant.formula.coding.network:
            lines.append(
                "    warning: with the network, a public fix of the task (a merged pull "
                "request, a later release) is reachable on the internet"
            )
    shown = (*sandbox.SYSTEM, *binds)
    lines += _hidden_commands(cohort, shown, hidden, search_path)
    return lines


def _all_mounts(cohort: Cohort) -> list[str]:
    return [os.path.realpath(m) for v in cohort.variants for m in v.formula.coding.mounts]


def _hidden_commands(
    cohort: Cohort, shown: Sequence[str], hidden: Sequence[str], search_path: str
) -> list[str]:
    """Paths in the commands that the sandbox will not show (unless a mount does): absolute
    arguments, and the program itself where PATH finds it outside what is shown."""
    warnings = []
    for variant in cohort.variants:
        mounts = [os.path.realpath(m) for m in [*variant.formula.coding.mounts, *shown]]
        commands = [("coding command", variant.formula.coding.command)]
        commands += [(f"check {c.id}", c.argv) for c in variant.formula.checks]
        for task in cohort.tasks:
            commands += [(f"{task.spec.name} check {c.id}", c.argv) for c in task.plan.checks]
            commands += [(f"{task.spec.name} setup {c.id}", c.argv) for c in task.plan.setup]
        for what, argv in commands:
            whose = f"  warning: variant {variant.spec.name}'s {what}"
            for arg in argv:
                value = arg.split("=", 1)[1] if "=" in arg else arg
                if not value.startswith("/"):
                    continue
                real = os.path.realpath(value)
                if not _shown(real, hidden, mounts):
                    warnings.append(
                        f"{whose} names {value}, which the sandbox does not show; add "
                        f"{_advice(real)} to the atom's mounts or move it"
                    )
            program = _program(argv)
            found = shutil.which(program, path=search_path) if program else None
            if program and found:
                real = os.path.join(os.path.realpath(os.path.dirname(found)), program)
                if not _shown(real, hidden, mounts):
                    warnings.append(
                        f"{whose} runs {program} from {os.path.dirname(real)} (on PATH), which "
                        f"the sandbox does not show; add {_advice(real)} to the atom's mounts "
                        "or move it"
                    )
    return sorted(set(warnings))


def _shown(real: str, hidden: Sequence[str], mounts: Sequence[str]) -> bool:
    return any(_inside(real, m) for m in mounts) and not any(_inside(real, h) for h in hidden)


_ENV_OPTIONS_WITH_VALUE = frozenset({"-u", "--unset", "-C", "--chdir", "-P"})
"""`env`'s options whose value is the next word (GNU's and the BSDs'), so not the program."""


def _program(argv: Sequence[str]) -> str | None:
    """The program named bare (found on PATH) that `argv` runs, through an `env` in front."""
    rest = list(argv)
    if rest and os.path.basename(rest[0]) == "env":
        rest = _after_env(rest[1:])
    if rest and "/" not in rest[0]:
        return rest[0]
    return None


def _after_env(args: Sequence[str]) -> list[str]:
    """The words from the program `env args...` runs on: past its options, their values and the
    NAME=value assignments (`-S`'s string is split and read on like the words after it). Nothing
    when `-S`'s string is not shell words: `env` refuses it, so it runs nothing."""
    rest = list(args)
    options = True
    while rest:
        word = rest.pop(0)
        if options and word in ("-S", "--split-string") and rest:
            word = "-S" + rest.pop(0)
        elif options and word.startswith("--split-string="):
            word = "-S" + word.split("=", 1)[1]
        if options and word == "--":
            options = False
        elif options and word in _ENV_OPTIONS_WITH_VALUE:
            rest = rest[1:]
        elif options and word.startswith("-S") and len(word) > 2:
            try:
                rest = shlex.split(word[2:]) + rest
            except ValueError:  # an unclosed quote
                return []
        elif not (options and word.startswith("-")) and "=" not in word:
            return [word, *rest]
    return []


def _advice(path: str) -> str:
    """The mounts to add for `path`, as JSON strings: its installation's prefix when it sits in
    a `bin` (a virtualenv's or an interpreter's programs need their `lib` beside them), and for
    a virtualenv the prefix of the interpreter it links to as well (`pyvenv.cfg`'s `home`)."""
    folder = os.path.dirname(path)
    if os.path.basename(folder) != "bin":
        return json.dumps(folder)
    prefix = os.path.dirname(folder)
    mounts = [prefix]
    home = _venv_home(prefix)
    if home is not None:
        base = os.path.realpath(home)
        base = os.path.dirname(base) if os.path.basename(base) == "bin" else base
        if not _inside(base, prefix) and not any(_inside(base, r) for r in sandbox.SYSTEM):
            mounts.append(base)
    return " and ".join(json.dumps(m) for m in mounts)


def _venv_home(prefix: str) -> str | None:
    """The `home` a virtualenv's `pyvenv.cfg` names (its interpreter's folder), if any."""
    try:
        with open(os.path.join(prefix, "pyvenv.cfg"), encoding="utf-8") as config:
            for line in config:
                key, _, value = line.partition("=")
                if key.strip() == "home":
                    return value.strip()
    except OSError:
        return None
    return None
