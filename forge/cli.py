"""`forge`: one entry point; each area registers its own verbs.

Each area's `register(subparsers)` adds its parsers and sets `run=callable(args) -> int`, so this
module knows only the list of areas. A `UserError` anywhere becomes its message on stderr and
the error's exit code, never a traceback; a reader that goes away (`forge status --json | head -1`)
ends the output quietly, with the exit status a Unix tool killed by SIGPIPE has (141).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Callable, Sequence

from forge import __version__
from forge.errors import UserError

Register = Callable[["argparse._SubParsersAction[argparse.ArgumentParser]"], None]


def _areas() -> list[Register]:
    """Imported lazily so `forge health` never pays for the supervisor's imports."""
    registers: list[Register] = []
    from forge.config.cli import register as register_config

    registers.append(register_config)
    from forge.health.cli import register as register_health

    registers.append(register_health)
    from forge.supervisor.cli import register as register_supervisor

    registers.append(register_supervisor)
    from forge.client.cli import run_evaluate
    from forge.lab.cli import register as register_lab

    registers.append(lambda subparsers: register_lab(subparsers, run_evaluate))
    from forge.client.cli import register as register_client

    registers.append(register_client)
    from forge.client.agent_cli import register as register_agent

    registers.append(register_agent)
    from forge.access.cli import register as register_access

    registers.append(register_access)
    return registers


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="forge",
        description="Serve this workstation's terminals and browser tabs to your phone and "
        "desktop, watch the forge's health, and evaluate coding-agent recipes.",
    )
    parser.add_argument("--version", action="version", version=f"forge {__version__}")
    subparsers = parser.add_subparsers(dest="verb", required=True, metavar="VERB")
    for register in _areas():
        register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    run: Callable[[argparse.Namespace], int] = args.run
    try:
        code = run(args)
        sys.stdout.flush()  # a closed pipe shows here, not as a traceback at interpreter exit
        return code
    except BrokenPipeError:
        # Nothing more can be written; the devnull stops the exit flush from failing again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + signal.SIGPIPE
    except UserError as error:
        print(f"forge: {error}", file=sys.stderr)
        return error.exit_code
    except KeyboardInterrupt:
        return 130


def health_main(argv: Sequence[str] | None = None) -> int:
    """The `forge-health` console script: `forge health` under its own name."""
    return main(["health", *(sys.argv[1:] if argv is None else argv)])


def queue_main(argv: Sequence[str] | None = None) -> int:
    """The `forge-queue` console script: `forge queue` under its own name."""
    return main(["queue", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    sys.exit(main())
