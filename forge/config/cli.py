"""`forge config check | show | defaults`: the loader's verdict on a file, without a server.

`check` is how a person learns, before a restart, that an edit would refuse to start (exit code 2
and the loader's message naming line and key), and whether forge's token, TLS key, log or state
folder is open to other users (a warning on stderr per file, naming its mode and the chmod that
closes it; the exit code stays 0). `show` prints the settings document a client would receive;
`defaults` prints a starting forge.toml written from the catalogue.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from forge import filemodes
from forge.config.loader import load_config, require_config_path
from forge.config.template import defaults_toml


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser("config", help="check, show or start a forge.toml")
    actions = parser.add_subparsers(dest="config_action", required=True, metavar="ACTION")
    for name, run, summary in (
        ("check", _check, "load forge.toml and say whether the server would accept it"),
        ("show", _show, "print the settings document (JSON) a client would receive"),
    ):
        action = actions.add_parser(name, help=summary, description=summary)
        action.add_argument(
            "--config", metavar="PATH", help="the file to read (default: $FORGE_CONFIG, then XDG)"
        )
        action.set_defaults(run=run)
    defaults = actions.add_parser("defaults", help="print a forge.toml with every default")
    defaults.set_defaults(run=_defaults)


def _check(args: argparse.Namespace) -> int:
    loaded = load_config(require_config_path(args.config, os.environ))
    state = "loads" if loaded.source.exists() else "is missing: the defaults apply"
    print(f"{loaded.source} {state} (fingerprint {loaded.fingerprint})")
    for path in filemodes.kept_private(loaded.config.server.tls_key):
        warning = filemodes.loose(path)
        if warning is not None:
            print(f"warning: {warning}", file=sys.stderr)
    return 0


def _show(args: argparse.Namespace) -> int:
    loaded = load_config(require_config_path(args.config, os.environ))
    json.dump(loaded.document, sys.stdout, indent=2, ensure_ascii=False)
    print()
    return 0


def _defaults(args: argparse.Namespace) -> int:
    sys.stdout.write(defaults_toml())
    return 0
