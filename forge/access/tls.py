"""TLS for the socket's port: a server context that follows its files, and a self-signed pair.

A phone's browser offers the microphone only in a secure context, so the page must come over
`https://`; the socket then is `wss://` on the same port. Certificates are renewed on disk
(`tailscale cert`, certbot), so the server re-reads the two PEM files at every TLS handshake,
inside OpenSSL's server-name callback (called for every ClientHello, with or without SNI): when
their bytes changed, a new `SSLContext` is loaded and handed to this and later connections, and
open ones keep theirs. Files that do not load (a half-written renewal) keep the old context and
log `tls_reload_failed` once per content.

`forge supervise --tls self-signed` uses `self_signed`: an EC P-256 key and a certificate for the
machine's names and addresses (the `cryptography` package), kept in the state directory and made
again only when a name or address is missing from it or it is about to expire. The same key and
certificate builders make the Lab's Dask cluster CA (`forge.lab.cluster_tls`).
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import ipaddress
import os
import re
import socket
import ssl
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import psutil
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from forge import paths
from forge.errors import UserError
from forge.logs import get_logger

log = get_logger(__name__)

SELF_SIGNED_DAYS = 397
"""The longest validity Apple's platforms accept for a server certificate."""
RENEW_BEFORE_DAYS = 30
_PEM_CERT = re.compile(rb"-----BEGIN CERTIFICATE-----.+?-----END CERTIFICATE-----", re.DOTALL)


@dataclass(frozen=True, slots=True)
class CertPair:
    cert: Path
    key: Path


# Reading certificates.


def leaf_der(pem: bytes) -> bytes:
    """The first certificate of a PEM chain, as DER (the one the server presents)."""
    found = _PEM_CERT.search(pem)
    if found is None:
        raise ValueError("no PEM certificate in the file")
    return ssl.PEM_cert_to_DER_cert(found.group().decode("ascii"))


def fingerprint(der: bytes) -> str:
    """SHA-256 of the certificate, as browsers show it (`AB:CD:...`)."""
    return ":".join(f"{byte:02X}" for byte in hashlib.sha256(der).digest())


def spki_hash(der: bytes) -> str:
    """Base64 SHA-256 of the public key: Chromium's `--ignore-certificate-errors-spki-list`."""
    public = x509.load_der_x509_certificate(der).public_key()
    spki = public.public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return base64.b64encode(hashlib.sha256(spki).digest()).decode("ascii")


def names_of(der: bytes) -> list[str]:
    """The DNS names and IP addresses a certificate is for (its subjectAltName)."""
    cert = x509.load_der_x509_certificate(der)
    try:
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return []
    dns: list[str] = san.get_values_for_type(x509.DNSName)
    ips = [str(address) for address in san.get_values_for_type(x509.IPAddress)]
    return dns + ips


# The server side.


def _server_context(pair: CertPair) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(pair.cert, pair.key)
    return context


def _read(pair: CertPair) -> tuple[bytes, bytes]:
    return pair.cert.read_bytes(), pair.key.read_bytes()


class ServerTls:
    """The listening context; each handshake is served with the newest loadable certificate."""

    def __init__(self, pair: CertPair) -> None:
        self.pair = pair
        try:
            self._loaded = _read(pair)
            self.context = _server_context(pair)
            self.fingerprint = fingerprint(leaf_der(self._loaded[0]))
        except (OSError, ssl.SSLError, ValueError) as error:
            raise UserError(
                f"[server] tls_cert/tls_key: cannot load {pair.cert} and {pair.key}: {error}"
            ) from None
        self._current = self.context
        self._refused: tuple[bytes, bytes] | None = None
        self.context.sni_callback = self._choose

    def _choose(self, connection: ssl.SSLObject, _name: str | None, _ctx: ssl.SSLContext) -> None:
        try:
            self._refresh()
        except Exception:  # a handshake must never fail because a reload did
            log.exception("tls_reload_failed", cert=str(self.pair.cert))
        if self._current is not self.context:
            connection.context = self._current

    def _refresh(self) -> None:
        try:
            files = _read(self.pair)
        except OSError as error:
            files = (b"", str(error).encode())
        if files == self._loaded or files == self._refused:
            return
        try:
            context = _server_context(self.pair)
            print_ = fingerprint(leaf_der(files[0]))
        except (OSError, ssl.SSLError, ValueError) as error:
            self._refused = files
            log.warning("tls_reload_failed", cert=str(self.pair.cert), why=str(error))
            return
        self._loaded, self._current, self._refused = files, context, None
        self.fingerprint = print_
        log.info("tls_reloaded", cert=str(self.pair.cert), fingerprint=print_)


# The client side.


def trusting(cert: Path) -> ssl.SSLContext:
    """A client context that trusts exactly the certificate `cert` starts with, by any name.

    forge's own clients dial the supervisor on loopback, where a tailnet's or a self-signed
    certificate's names do not match; trusting that one certificate (not its issuer) pins it.
    """
    try:
        der = leaf_der(cert.read_bytes())
    except (OSError, ValueError) as error:
        raise UserError(f"[server] tls_cert: cannot read {cert}: {error}") from None
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_flags |= ssl.VERIFY_X509_PARTIAL_CHAIN
    context.load_verify_locations(cadata=der)
    return context


# A self-signed pair for this machine.


def self_signed_pair() -> CertPair:
    folder = paths.tls_dir()
    return CertPair(folder / "self-signed.pem", folder / "self-signed.key")


def machine_names(extra: Iterable[str] = ()) -> list[str]:
    """This machine's host names and interface addresses, loopback included, `extra` first."""
    names = [*extra, socket.gethostname(), socket.getfqdn(), "localhost"]
    for addresses in psutil.net_if_addrs().values():
        for address in addresses:
            if address.family in (socket.AF_INET, socket.AF_INET6) and "%" not in address.address:
                names.append(address.address)
    names += ["127.0.0.1", "::1"]
    return list(dict.fromkeys(name for name in names if name))


def self_signed(
    pair: CertPair, names: list[str], *, now: datetime.datetime | None = None
) -> tuple[CertPair, bool]:
    """The pair at `pair`, made (again) unless it covers `names` and is not about to expire.

    Returns the pair and whether it was made now.
    """
    now = now or datetime.datetime.now(datetime.UTC)
    if _still_good(pair, names, now):
        return pair, False
    key = new_key()
    cert = certificate(
        names[0],
        key.public_key(),
        signer=key,
        issuer=None,
        now=now,
        days=SELF_SIGNED_DAYS,
        extensions=[
            (x509.SubjectAlternativeName([_general_name(n) for n in names]), False),
            (x509.BasicConstraints(ca=False, path_length=None), True),
            (x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), False),
        ],
    )
    pair.cert.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    replace_file(pair.key, key_pem(key), 0o600)
    replace_file(pair.cert, cert_pem(cert), 0o644)
    return pair, True


# Making keys and certificates (the self-signed pair above, the Lab's Dask cluster CA).


def new_key() -> ec.EllipticCurvePrivateKey:
    """An EC P-256 key: every TLS stack forge's certificates meet accepts it."""
    return ec.generate_private_key(ec.SECP256R1())


def certificate(
    subject: str,
    public_key: ec.EllipticCurvePublicKey,
    *,
    signer: ec.EllipticCurvePrivateKey,
    issuer: x509.Certificate | None,
    now: datetime.datetime,
    days: int,
    extensions: Sequence[tuple[x509.ExtensionType, bool]],
) -> x509.Certificate:
    """A certificate for `public_key` named `subject` (its first 64 characters), valid from a day
    before `now` for `days` days: self-signed when `issuer` is None, else issued by that CA (its
    key `signer`). Each extension comes with whether it is critical."""
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject[:64])])
    builder = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name if issuer is None else issuer.subject)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=days))
    )
    for extension, critical in extensions:
        builder = builder.add_extension(extension, critical)
    return builder.sign(signer, hashes.SHA256())


def key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def cert_pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _general_name(name: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(name))
    except ValueError:
        return x509.DNSName(name)


def _still_good(pair: CertPair, names: list[str], now: datetime.datetime) -> bool:
    try:
        der = leaf_der(pair.cert.read_bytes())
        pair.key.stat()
    except (OSError, ValueError):
        return False
    cert = x509.load_der_x509_certificate(der)
    fresh = cert.not_valid_after_utc - now > datetime.timedelta(days=RENEW_BEFORE_DAYS)
    covered = {_canonical(name) for name in names_of(der)}
    return fresh and all(_canonical(name) in covered for name in names)


def _canonical(name: str) -> str:
    try:
        return str(ipaddress.ip_address(name))
    except ValueError:
        return name.lower()


def replace_file(path: Path, data: bytes, mode: int) -> None:
    """Replace `path` by rename, so a server re-reading it never sees half a file; the new file
    has `mode` from its creation (a key is never readable by others, even for a moment)."""
    temporary = path.with_name(f".{path.name}.new")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(descriptor, "wb") as file:
        file.write(data)
    os.replace(temporary, path)
