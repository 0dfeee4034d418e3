"""TLS on the socket's port: a pinned wss:// client, a plain client refused cleanly, certificate
files replaced on disk taken without a restart, and the self-signed pair for this machine."""

from __future__ import annotations

import asyncio
import datetime
import io
import json
import ssl
import sys
from pathlib import Path

import pytest
from cryptography import x509
from websockets.asyncio.client import connect

from forge.access.cli import self_signed_overrides
from forge.access.tls import (
    CertPair,
    fingerprint,
    leaf_der,
    machine_names,
    names_of,
    self_signed,
    self_signed_pair,
    trusting,
)
from forge.client.auth import subprotocols
from forge.client.connection import connect as forge_connect
from forge.client.errors import SupervisorUnreachable

from .conftest import Serve, Served

NAMES = ["forge.test", "localhost", "127.0.0.1", "::1"]


def pair_in(folder: Path, names: list[str] = NAMES) -> CertPair:
    pair, made = self_signed(CertPair(folder / "cert.pem", folder / "key.pem"), names)
    assert made
    return pair


def tls_toml(pair: CertPair) -> str:
    return f'[server]\ntls_cert = "{pair.cert}"\ntls_key = "{pair.key}"\n'


async def presented(served: Served, context: ssl.SSLContext) -> str:
    """The fingerprint of the certificate the server presents, read off a greeted connection."""
    async with connect(served.url, ssl=context, subprotocols=subprotocols()) as ws:
        assert '"kind":"greeting"' in str(await ws.recv())
        ssl_object = ws.transport.get_extra_info("ssl_object")
        der = ssl_object.getpeercert(binary_form=True)
    return fingerprint(der)


async def test_a_pinned_wss_client_connects(serve: Serve, tmp_path: Path) -> None:
    pair = pair_in(tmp_path)
    served = await serve(tls_toml(pair))
    assert served.url.startswith("wss://")
    printed = fingerprint(leaf_der(pair.cert.read_bytes()))
    assert await presented(served, trusting(pair.cert)) == printed
    listening = await served.record("socket_listening")
    assert (listening["scheme"], listening["tls_fingerprint"]) == ("wss", printed)
    async with forge_connect(served.url, tls=trusting(pair.cert)) as connection:
        assert connection.greeting.version > 0


async def test_a_client_pinned_to_another_certificate_is_refused(
    serve: Serve, tmp_path: Path
) -> None:
    served = await serve(tls_toml(pair_in(tmp_path / "served")))
    other = pair_in(tmp_path / "other")
    with pytest.raises(ssl.SSLCertVerificationError):
        await connect(served.url, ssl=trusting(other.cert), subprotocols=subprotocols())
    assert not served.records("socket_auth_refused")  # the token never left the client


async def test_a_plain_client_to_the_tls_port_fails_cleanly(serve: Serve, tmp_path: Path) -> None:
    pair = pair_in(tmp_path)
    served = await serve(tls_toml(pair))
    plain = served.url.replace("wss://", "ws://")
    with pytest.raises(SupervisorUnreachable, match="if the supervisor serves TLS, dial wss://"):
        async with forge_connect(plain):
            pass
    assert not served.supervisor.connections
    assert await presented(served, trusting(pair.cert))  # and the port still serves TLS
    text = served.log.read_text(encoding="utf-8")
    assert '"level": "error"' not in text, text


async def test_replaced_certificate_files_are_taken_without_a_restart(
    serve: Serve, tmp_path: Path
) -> None:
    pair = pair_in(tmp_path)
    served = await serve(tls_toml(pair))
    first = fingerprint(leaf_der(pair.cert.read_bytes()))
    held = await connect(served.url, ssl=trusting(pair.cert), subprotocols=subprotocols())
    pair.cert.unlink()
    self_signed(pair, [*NAMES, "renewed.test"])
    second = fingerprint(leaf_der(pair.cert.read_bytes()))
    assert second != first
    assert await presented(served, trusting(pair.cert)) == second
    await served.record("tls_reloaded", fingerprint=second)
    assert '"kind":"greeting"' in str(await held.recv())  # an open connection keeps its own
    await held.close()


async def test_a_certificate_without_its_key_keeps_the_old_one(
    serve: Serve, tmp_path: Path
) -> None:
    pair = pair_in(tmp_path)
    served = await serve(tls_toml(pair))
    before = fingerprint(leaf_der(pair.cert.read_bytes()))
    pinned = trusting(pair.cert)
    stray = pair_in(tmp_path / "stray")
    pair.cert.write_bytes(stray.cert.read_bytes())  # a renewal half written: the key is old
    assert await presented(served, pinned) == before
    assert await presented(served, pinned) == before
    refused = served.records("tls_reload_failed")
    assert len(refused) == 1  # once per content, not once per handshake


def test_the_self_signed_pair_covers_the_machine_and_is_kept(tmp_path: Path) -> None:
    pair = CertPair(tmp_path / "tls" / "c.pem", tmp_path / "tls" / "k.pem")
    names = machine_names()
    assert {"localhost", "127.0.0.1", "::1"} <= set(names)
    made, fresh = self_signed(pair, names)
    assert fresh
    assert pair.key.stat().st_mode & 0o777 == 0o600
    der = leaf_der(pair.cert.read_bytes())
    assert set(names) <= set(names_of(der))
    cert = x509.load_der_x509_certificate(der)
    assert not cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    assert self_signed(pair, names) == (made, False)
    assert self_signed(pair, [*names, "new.test"])[1]
    later = datetime.datetime.now(datetime.UTC) + datetime.timedelta(days=380)
    assert self_signed(pair, [*names, "new.test"], now=later)[1]


def test_supervise_tls_self_signed_prints_the_fingerprint(forge_dirs: dict[str, Path]) -> None:
    out = io.StringIO()
    overrides = self_signed_overrides(out)
    pair = self_signed_pair()
    assert overrides == {"server.tls_cert": str(pair.cert), "server.tls_key": str(pair.key)}
    assert pair.cert.is_relative_to(forge_dirs["state"])
    shown = fingerprint(leaf_der(pair.cert.read_bytes()))
    assert f"SHA-256 {shown}" in out.getvalue()
    assert "made the self-signed certificate" in out.getvalue()
    again = io.StringIO()
    self_signed_overrides(again)
    assert "using the self-signed certificate" in again.getvalue()


async def test_forge_status_dials_wss_with_the_token_and_the_configured_certificate(
    serve: Serve, tmp_path: Path
) -> None:
    pair = pair_in(tmp_path)
    served = await serve(tls_toml(pair))
    config = tmp_path / "status.toml"
    config.write_text(tls_toml(pair) + f"port = {served.port}\n", encoding="utf-8")
    status = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "forge.cli", "status", "--json", "--config", str(config),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await status.communicate()
    assert status.returncode == 0, err.decode()
    assert json.loads(out)["url"] == f"wss://127.0.0.1:{served.port}/socket"
    assert not served.records("socket_auth_refused")
