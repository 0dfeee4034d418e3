"""The pure rules of access, as tables: the upgrade's token, the backoff, the config's pairs."""

from __future__ import annotations

from pathlib import Path

import pytest

from forge.access.throttle import Backoff, Throttle
from forge.config import ConfigError, load_config
from forge.wire.auth import Verdict, judge, offer, select

TOKEN = "t" * 43


@pytest.mark.parametrize(
    ("offered", "verdict"),
    [
        ([], Verdict.MISSING),
        (["forge.v1"], Verdict.MISSING),
        (["chat", "forge.v1"], Verdict.MISSING),
        (["forge.v1", f"forge.token.{TOKEN}"], Verdict.ACCEPTED),
        ([f"forge.token.{TOKEN}"], Verdict.ACCEPTED),
        (["forge.v1", "forge.token."], Verdict.WRONG),
        (["forge.v1", f"forge.token.{TOKEN[:-1]}"], Verdict.WRONG),
        (["forge.v1", f"forge.token.{TOKEN}x"], Verdict.WRONG),
        (["forge.v1", f"forge.token.{TOKEN.upper()}"], Verdict.WRONG),
        ([f"forge.token.{TOKEN}", f"forge.token.{TOKEN}"], Verdict.WRONG),
        ([f"forge.token.{TOKEN}", "forge.token.other"], Verdict.WRONG),
        (["forge.v1", "forge.token.caf\udce9"], Verdict.WRONG),
    ],
)
def test_judge(offered: list[str], verdict: Verdict) -> None:
    assert judge(offered, TOKEN) is verdict


def test_offer_and_select() -> None:
    assert offer(None) == ["forge.v1"]
    assert offer(TOKEN) == ["forge.v1", f"forge.token.{TOKEN}"]
    assert select(offer(TOKEN)) == "forge.v1"
    assert select([f"forge.token.{TOKEN}"]) is None
    assert select([]) is None


RULES = Backoff(first_s=0.25, cap_s=4.0, forget_s=600.0, peers=3)

# (events, peer asked, time asked, expected wait); an event is ("fail" | "ok", peer, time).
BACKOFF_TABLE = [
    ([], "a", 0.0, 0.0),
    ([("fail", "a", 0.0)], "a", 0.0, 0.25),
    ([("fail", "a", 0.0)], "a", 0.1, 0.15),
    ([("fail", "a", 0.0)], "a", 0.25, 0.0),
    ([("fail", "a", 0.0)], "b", 0.0, 0.0),
    ([("fail", "a", 0.0), ("fail", "a", 0.25)], "a", 0.25, 0.5),
    ([("fail", "a", t) for t in (0, 1, 2)], "a", 2.0, 1.0),
    ([("fail", "a", float(t)) for t in range(10)], "a", 9.0, 4.0),
    ([("fail", "a", float(t)) for t in range(50)], "a", 49.0, 4.0),
    ([("fail", "a", float(t)) for t in range(50)], "a", 53.0, 0.0),
    ([("fail", "a", 0.0), ("fail", "a", 1.0), ("ok", "a", 2.0)], "a", 2.0, 0.0),
    ([("fail", "a", 0.0), ("fail", "a", 1.0)], "a", 601.0, 0.0),
    ([("fail", "a", 0.0), ("fail", "a", 600.0)], "a", 600.0, 0.25),
]


@pytest.mark.parametrize(("events", "peer", "now", "wait"), BACKOFF_TABLE)
def test_backoff(events: list[tuple[str, str, float]], peer: str, now: float, wait: float) -> None:
    throttle = Throttle(RULES)
    for kind, who, at in events:
        if kind == "fail":
            throttle.failed(who, at)
        else:
            throttle.succeeded(who)
    assert throttle.wait(peer, now) == pytest.approx(wait)


def test_the_table_of_peers_is_bounded_stalest_first() -> None:
    throttle = Throttle(RULES)
    for index, peer in enumerate("abcd"):
        throttle.failed(peer, float(index))
    assert [throttle.strikes(peer, 4.0) for peer in "abcd"] == [0, 1, 1, 1]


@pytest.mark.parametrize(
    ("text", "overrides", "key", "why"),
    [
        ('[server]\nbind = "0.0.0.0"\nauth = "none"\n', {}, "server.auth",
         '"none" is allowed only with a loopback bind, and server.bind is "0.0.0.0"'),
        ('[server]\nbind = "::"\nauth = "none"\n', {}, "server.auth", "server.bind is \"::\""),
        ('[server]\nauth = "none"\n', {"server.bind": "192.168.1.5"}, "server.auth",
         'server.bind is "192.168.1.5"'),
        ('[server]\nauth = "password"\n', {}, "server.auth",
         'expected one of "token", "none", got "password"'),
        ('[server]\ntls_cert = "cert.pem"\n', {}, "server.tls_cert",
         "set together with server.tls_key"),
        ('[server]\ntls_key = "key.pem"\n', {}, "server.tls_key",
         "set together with server.tls_cert"),
    ],
)  # fmt: skip
def test_access_rules_refuse_at_load_naming_the_key(
    tmp_path: Path, text: str, overrides: dict[str, str], key: str, why: str
) -> None:
    config = tmp_path / "forge.toml"
    config.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as refused:
        load_config(config, overrides=overrides)
    assert refused.value.key == key
    assert key in str(refused.value)
    assert why in str(refused.value)


@pytest.mark.parametrize("bind", ["127.0.0.1", "127.0.0.2", "::1", "localhost"])
def test_auth_none_on_loopback_loads(tmp_path: Path, bind: str) -> None:
    config = tmp_path / "forge.toml"
    config.write_text(f'[server]\nbind = "{bind}"\nauth = "none"\n', encoding="utf-8")
    assert load_config(config).config.server.auth == "none"


def test_tls_paths_are_read_from_the_config_folder(tmp_path: Path) -> None:
    config = tmp_path / "conf" / "forge.toml"
    config.parent.mkdir()
    config.write_text('[server]\ntls_cert = "tls/c.pem"\ntls_key = "~/k.pem"\n', encoding="utf-8")
    server = load_config(config).config.server
    assert server.auth == "token"
    assert server.tls_cert == tmp_path / "conf" / "tls" / "c.pem"
    assert server.tls_key == Path.home() / "k.pem"
