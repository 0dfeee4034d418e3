"""`forge token show | rotate` and `forge pair`: the token and the pairing URL, from a terminal.

Imports beyond argparse stay inside the run functions, so registering costs other verbs nothing.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TextIO


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    token = subparsers.add_parser(
        "token",
        help="show or rotate the socket's token",
        description="Every connection to the socket shows forge's token, kept (0600) in forge's "
        "state directory. `show` prints it (made on first use); `rotate` replaces it: the "
        "running supervisor refuses the old one at once and closes the connections that used "
        "it within a second (each device must be paired again).",
    )
    token.add_argument("action", choices=("show", "rotate"))
    token.set_defaults(run=run_token)

    pair = subparsers.add_parser(
        "pair",
        help="print the URL a phone opens, with the token, as a QR code",
        description="Print the page's URL with the token in its fragment (#token=...), as a QR "
        "code and as text. The host is the certificate's name, else [server] bind, else this "
        "machine's first LAN address; --host or --url choose another (a reverse proxy's).",
    )
    pair.add_argument("--config", metavar="PATH", help="the forge.toml the supervisor reads")
    where = pair.add_mutually_exclusive_group()
    where.add_argument("--host", help="the host name or address the phone opens")
    where.add_argument("--url", help="the page's address, e.g. https://forge.example.net/")
    pair.set_defaults(run=run_pair)


def run_token(args: argparse.Namespace) -> int:
    from forge.access.token import ensure_token, fingerprint, rotate_token, token_path

    if args.action == "show":
        print(ensure_token())
        return 0
    token = rotate_token()
    print(
        f"rotated the token in {token_path()} (now {fingerprint(token)}): a running supervisor "
        "refuses the old one and closes its connections; pair each device again (`forge pair`)"
    )
    return 0


def run_pair(args: argparse.Namespace) -> int:
    from forge.access.pairing import page_url, print_pairing, reach_of
    from forge.config import load_config, resolve_config_path
    from forge.errors import UserError

    server = load_config(resolve_config_path(args.config, os.environ)).config.server
    if server.auth == "none":
        raise UserError('[server] auth = "none": there is no token to pair with')
    page = args.url or (page_url(reach_of(server), args.host) if args.host else None)
    print_pairing(sys.stdout, server, page=page)
    return 0


def self_signed_overrides(out: TextIO) -> dict[str, str]:
    """`forge supervise --tls self-signed`: make (or keep) the pair, print its fingerprint, and
    name it as `[server] tls_cert`/`tls_key`."""
    from forge.access.tls import fingerprint, leaf_der, machine_names, self_signed, self_signed_pair

    pair, made = self_signed(self_signed_pair(), machine_names())
    print_ = fingerprint(leaf_der(pair.cert.read_bytes()))
    out.write(
        f"TLS: {'made' if made else 'using'} the self-signed certificate {pair.cert}\n"
        f"  SHA-256 {print_}\n"
        "  (a browser warns once; compare this fingerprint with the one it shows)\n"
    )
    out.flush()
    return {"server.tls_cert": str(pair.cert), "server.tls_key": str(pair.key)}
