"""TLS for `--executor dask`: `forge evaluate cluster-certs DIR`, and the client's side of it.

A Dask scheduler runs whatever function a connected client submits, on its workers, outside forge's
sandbox. Over plain `tcp://` anyone who reaches its port is such a client: a recipe with
`network: true` on a worker's machine among them. distributed's own TLS closes that door: the
scheduler, the workers and forge each present a certificate of one CA and accept a peer only if it
presents one too (Dask checks no host name, only the CA). Dask does not tell the roles apart: any
certificate of the CA is admitted as a client, so every key is as powerful as the client's.

`cluster-certs` makes the CA and one certificate per role in a new 0700 folder (keys 0600), then
drops the CA's key: nothing more can be issued from it, and a new set replaces the whole set.
A `tcp://` scheduler is refused unless `--insecure-cluster`, which the run's report then states.
"""

from __future__ import annotations

import argparse
import datetime
import os
import shlex
import socket
import ssl
import sys
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID

from forge.access.tls import cert_pem, certificate, key_pem, new_key, replace_file
from forge.attempt.errors import LabRefusal

CA_FILE = "ca.pem"
ROLES = {"scheduler": "the scheduler's", "worker": "every worker's", "client": "forge evaluate's"}
"""Each role's certificate and key: `<role>.pem`, `<role>.key`."""
CERT_DAYS = 365
SCHEDULER_PORT = 8786
"""`dask scheduler`'s default port."""
SECURE_SCHEME = "tls://"
MAKE_CERTS = "forge evaluate cluster-certs DIR"


def cert_file(folder: Path, role: str) -> Path:
    return folder / f"{role}.pem"


def key_file(folder: Path, role: str) -> Path:
    return folder / f"{role}.key"


def dask_tls_options(folder: Path, role: str) -> list[str]:
    """The `dask scheduler` / `dask worker` options that give `role` its files in `folder`."""
    return [
        *("--tls-ca-file", str(folder / CA_FILE)),
        *("--tls-cert", str(cert_file(folder, role))),
        *("--tls-key", str(key_file(folder, role))),
    ]


# Making the certificates.


def make_cluster_certs(folder: Path, *, now: datetime.datetime) -> None:
    """A CA and a certificate and key per role in `folder`, which must be absent or empty."""
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise LabRefusal(
            f"cluster-certs: {folder} is not an empty directory; "
            "name a new one (a new CA replaces every certificate of the old one)"
        )
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    folder.chmod(0o700)
    ca_key = new_key()
    ca = certificate(
        "forge Dask cluster CA",
        ca_key.public_key(),
        signer=ca_key,
        issuer=None,
        now=now,
        days=CERT_DAYS,
        extensions=[
            (x509.BasicConstraints(ca=True, path_length=0), True),
            (_key_usage(cert_sign=True), True),
            (x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), False),
        ],
    )
    replace_file(folder / CA_FILE, cert_pem(ca), 0o644)
    for role in ROLES:
        key = new_key()
        cert = certificate(
            f"forge Dask {role}",
            key.public_key(),
            signer=ca_key,
            issuer=ca,
            now=now,
            days=CERT_DAYS,
            extensions=[
                (x509.BasicConstraints(ca=False, path_length=None), True),
                (_key_usage(cert_sign=False), True),
                # A scheduler and a worker both serve and connect.
                (
                    x509.ExtendedKeyUsage(
                        [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
                    ),
                    False,
                ),
                (x509.SubjectKeyIdentifier.from_public_key(key.public_key()), False),
                (
                    x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
                    False,
                ),
            ],
        )
        replace_file(key_file(folder, role), key_pem(key), 0o600)
        replace_file(cert_file(folder, role), cert_pem(cert), 0o644)


def _key_usage(*, cert_sign: bool) -> x509.KeyUsage:
    """A CA signs certificates; a TLS peer signs handshakes."""
    return x509.KeyUsage(
        digital_signature=not cert_sign,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=cert_sign,
        crl_sign=cert_sign,
        encipher_only=False,
        decipher_only=False,
    )


def instructions(folder: Path, host: str) -> str:
    """What `cluster-certs` prints: the files, then the exact command line of each part."""
    scheduler = f"{SECURE_SCHEME}{host}:{SCHEDULER_PORT}"
    lines = [
        f"Made a CA and certificates for a Dask cluster in {folder} "
        f"(keys 0600, the folder 0700; valid {CERT_DAYS} days):",
        f"  {CA_FILE:<29} the cluster's CA (its key was not kept: nothing more can be issued)",
        *(f"  {f'{role}.pem, {role}.key':<29} {whose}" for role, whose in ROLES.items()),
        "Any certificate of this CA may submit work: give each machine only ca.pem and its own "
        "role's pair, at the same path, readable only by the user that runs it.",
        "",
        f"The scheduler (it listens on tls:// on every interface, port {SCHEDULER_PORT}):",
        "  " + shlex.join(["dask", "scheduler", *dask_tls_options(folder, "scheduler")]),
        "Each worker:",
        "  " + shlex.join(["dask", "worker", scheduler, *dask_tls_options(folder, "worker")]),
        "forge evaluate, with the cohort's other options:",
        "  "
        + shlex.join(
            ["--executor", "dask", "--scheduler", scheduler, "--cluster-certs", str(folder)]
        ),
    ]
    return "\n".join(lines) + "\n"


def cluster_certs_command(args: argparse.Namespace) -> int:
    """`forge evaluate cluster-certs DIR [--host NAME]`."""
    folder = Path(os.path.abspath(os.path.expanduser(args.certs_dir)))
    make_cluster_certs(folder, now=datetime.datetime.now(datetime.UTC))
    sys.stdout.write(instructions(folder, args.host or socket.gethostname()))
    return 0


# The client's side: forge evaluate's flags and files.


@dataclass(frozen=True)
class ClientTls:
    """The files `Security(tls_ca_file=..., tls_client_cert=..., tls_client_key=...)` takes."""

    ca: Path
    cert: Path
    key: Path

    @property
    def folder(self) -> Path:
        return self.cert.parent


def client_tls(folder: Path) -> ClientTls:
    """The client's files in `folder`, loaded once to check them (LabRefusal says what is wrong)."""
    files = ClientTls(folder / CA_FILE, cert_file(folder, "client"), key_file(folder, "client"))
    missing = [path.name for path in (files.ca, files.cert, files.key) if not path.is_file()]
    if missing:
        raise LabRefusal(
            f"--cluster-certs {folder}: no {', '.join(missing)} there "
            f"(the folder `{MAKE_CERTS}` made, or one holding the same files)"
        )
    try:
        context = ssl.create_default_context(cafile=files.ca)
        context.load_cert_chain(files.cert, files.key)
    except (OSError, ssl.SSLError) as error:
        raise LabRefusal(
            f"--cluster-certs {folder}: {CA_FILE}, client.pem and client.key do not load: {error}"
        ) from None
    return files


def scheduler_problems(args: argparse.Namespace) -> list[str]:
    """What is wrong with `--scheduler`, `--cluster-certs` and `--insecure-cluster` together."""
    problems = []
    if args.executor != "dask":
        problems += [
            f"{flag} is only meaningful with --executor dask"
            for flag, given in (
                ("--scheduler", args.scheduler),
                ("--cluster-certs", args.cluster_certs),
                ("--insecure-cluster", args.insecure_cluster),
            )
            if given
        ]
        return problems
    address = args.scheduler
    if not address:
        return [
            "--executor dask needs --scheduler ADDRESS (tls://HOST:PORT, with --cluster-certs DIR)"
        ]
    if address.startswith(SECURE_SCHEME):
        if args.cluster_certs is None:
            problems.append(
                f"--scheduler {address} needs --cluster-certs DIR: the folder with the client's "
                f"certificate ({CA_FILE}, client.pem, client.key; `{MAKE_CERTS}` makes them)"
            )
        if args.insecure_cluster:
            problems.append(f"--insecure-cluster contradicts the TLS scheduler {address}")
        return problems
    if args.cluster_certs is not None:
        problems.append(f"--cluster-certs needs a {SECURE_SCHEME} scheduler, got {address}")
    if not args.insecure_cluster:
        problems.append(
            f"--scheduler {address} is not TLS: a Dask scheduler runs any function from anyone "
            "who connects to it, on its workers, outside the sandbox. Start the cluster with TLS "
            f"(`{MAKE_CERTS}` makes the certificates and prints its commands) and pass "
            "--scheduler tls://HOST:PORT --cluster-certs DIR, or pass --insecure-cluster to run "
            "on it anyway (the report will say so)"
        )
    return problems
