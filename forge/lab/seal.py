"""What keeps the answer out of a recipe's reach, as the preview and the report state it.

Two layers: the layout seal (an attempt's trees in a private directory outside `--out`, an
attempt source holding only the base commit and naming no local path) always holds; the
bubblewrap sandbox (`forge.attempt.sandbox`) holds where the platform runs it. The paths the
sandbox never mounts are decided here, once, from the run's paths and the caller's environment.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path

from forge.attempt import sandbox
from forge.attempt.cohort import Cohort
from forge.attempt.git import SourceFacts
from forge.paths import config_file, runtime_dir, state_dir


def hidden_paths(
    *, cohort_dir: Path, out: Path, source: SourceFacts, env: Mapping[str, str]
) -> tuple[str, ...]:
    """`--out`, `--source` and its local origins, the cohort's folder (the hidden acceptance
    lives there), the caller's home and forge's own directories (its sockets among them)."""
    return sandbox.realpaths(
        [
            str(cohort_dir),
            str(out),
            source.toplevel,
            *source.local_origins,
            env.get("HOME"),
            str(Path.home()),
            str(state_dir()),
            str(config_file().parent),
            str(runtime_dir()),
            env.get("XDG_RUNTIME_DIR"),
        ]
    )


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def check_mounts(cohort: Cohort, hidden: Sequence[str]) -> list[str]:
    """Problems with the Formulas' `mounts`: one may sit in the home directory (an interpreter
    installed there), never expose or sit inside any other hidden path."""
    home = os.path.realpath(Path.home())
    protected = [path for path in hidden if path != home]
    problems = []
    for index, variant in enumerate(cohort.variants):
        for position, mount in enumerate(variant.formula.coding.mounts):
            real = os.path.realpath(mount)
            for path in protected:
                if _inside(real, path) or _inside(path, real):
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
) -> list[str]:
    """The seal as the preview states it, with a warning for each command path it hides (a
    program named bare is looked up on `search_path`, the caller's PATH, as the attempt will)."""
    lines = [
        "Seal: each attempt works in a private 0700 directory outside --out (removed afterwards "
        "unless --keep-workspaces); its source holds only the base commit, origin "
        + (origin or "none")
        + ", no FETCH_HEAD, a fetch refspec that matches nothing",
    ]
    if probe.program is None:
        lines.append(f"recipe not sandboxed: {probe.reason}; the layout seal alone holds")
    else:
        network = ", ".join(
            f"{v.spec.name} {'on' if v.formula.coding.network else 'off'}" for v in cohort.variants
        )
        lines.append(
            f"Sandbox: {sandbox.NAME} ({probe.program}) for the recipe and the checks: system "
            "read-only, private /tmp and /run, only the attempt's trees and home writable; "
            f"network: {network}"
        )
        outermost = [p for p in hidden if not any(p != h and _inside(p, h) for h in hidden)]
        lines.append("  not mounted: " + ", ".join(outermost))
        for variant in cohort.variants:
            for mount in variant.formula.coding.mounts:
                lines.append(f"  variant {variant.spec.name} mounts {mount} read-only")
        lines += _hidden_commands(cohort, [*hidden, *sandbox.PRIVATE_TMP], binds, search_path)
    return lines


def _hidden_commands(
    cohort: Cohort, hidden: Sequence[str], binds: Sequence[str], search_path: str
) -> list[str]:
    """Paths in the commands that the sandbox will not show (unless a mount does): absolute
    arguments, and the program itself where PATH finds it in a hidden folder."""
    warnings = []
    for variant in cohort.variants:
        mounts = [os.path.realpath(m) for m in [*variant.formula.coding.mounts, *binds]]
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
                        f"{whose} names {value}, which the sandbox hides; add its folder to the "
                        f"atom's mounts ({json.dumps(_mount_for(real))}) or move it"
                    )
            program = _program(argv)
            found = shutil.which(program, path=search_path) if program else None
            if program and found:
                real = os.path.join(os.path.realpath(os.path.dirname(found)), program)
                if not _shown(real, hidden, mounts):
                    warnings.append(
                        f"{whose} runs {program} from {os.path.dirname(real)} (on PATH), which "
                        f"the sandbox hides; add {json.dumps(_mount_for(real))} to the atom's "
                        "mounts or move it"
                    )
    return sorted(set(warnings))


def _shown(real: str, hidden: Sequence[str], mounts: Sequence[str]) -> bool:
    return not any(_inside(real, h) for h in hidden) or any(_inside(real, m) for m in mounts)


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


def _mount_for(path: str) -> str:
    """The folder to mount for `path`: its installation's prefix when it sits in a `bin` (a
    virtualenv's or an interpreter's programs need their `lib` beside them)."""
    folder = os.path.dirname(path)
    return os.path.dirname(folder) if os.path.basename(folder) == "bin" else folder
