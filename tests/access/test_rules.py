"""The pure rules of access, as tables: the upgrade's token, the throttle, who may ask
`/token-check`, the config's pairs."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from forge.access.throttle import Backoff, Hold, Shed, Throttle, peer_of
from forge.config import ConfigError, load_config
from forge.errors import InternalError
from forge.wire.auth import Verdict, judge, offer, select
from forge.wire.origin import same_origin_or_native

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


RULES = Backoff(first_s=0.25, cap_s=4.0, forget_s=600.0, held=4, peers=3)

# (refusals as (peer, time), the decision on the last one)
REFUSAL_TABLE = [
    ([("a", 0.0)], Hold(1, 0.25)),
    ([("a", 0.0), ("a", 1.0)], Hold(2, 0.5)),
    ([("a", 0.0), ("a", 1.0), ("a", 2.0)], Hold(3, 1.0)),
    ([("a", 10.0 * t) for t in range(5)], Hold(5, 4.0)),
    ([("a", 10.0 * t) for t in range(50)], Hold(50, 4.0)),
    ([("a", 0.0), ("a", 599.0)], Hold(2, 0.5)),
    ([("a", 0.0), ("a", 600.0)], Hold(1, 0.25)),
    ([("a", 0.0), ("b", 0.0)], Hold(1, 0.25)),
    ([("a", 0.0)] * 4, Hold(4, 2.0)),
    ([("a", 0.0)] * 5, Shed(5, 0.25)),
    ([("a", 0.0)] * 5 + [("a", 0.125)], Shed(6, 0.125)),
    ([("a", 0.0)] * 5 + [("a", 0.25)], Hold(6, 4.0)),
    ([("a", 0.0)] * 9 + [("b", 0.0)], Hold(1, 0.25)),
]


@pytest.mark.parametrize(("refusals", "decision"), REFUSAL_TABLE)
def test_refusals(refusals: list[tuple[str, float]], decision: Hold | Shed) -> None:
    throttle = Throttle(RULES)
    made = [throttle.refused(peer, at) for peer, at in refusals]
    assert made[-1] == decision  # every time and delay here is exact in binary


@pytest.mark.parametrize("strikes", [1025, 1100, 2**64, 10**400])
def test_no_count_overflows_the_delay(strikes: int) -> None:
    assert RULES.delay(strikes) == 4.0  # 2.0 ** 1024 and up raised OverflowError


def test_thousands_of_refusals_in_a_row_stay_at_the_cap() -> None:
    throttle = Throttle(RULES)
    made = [throttle.refused("a", 5.0 * t) for t in range(2000)]
    assert made[-1] == Hold(2000, 4.0)
    assert [d.wait_s for d in made[:6] if isinstance(d, Hold)] == [0.25, 0.5, 1.0, 2.0, 4.0, 4.0]


def test_a_flood_gets_its_quota_of_holds_and_the_rest_shed() -> None:
    throttle = Throttle(RULES)
    made = [throttle.refused("a", 0.0) for _ in range(1000)]
    assert [d for d in made if isinstance(d, Hold)] == [
        Hold(n, RULES.delay(n)) for n in (1, 2, 3, 4)
    ]
    assert all(isinstance(d, Shed) and d.retry_s == 0.25 for d in made[4:])
    assert made[-1].strikes == 1000  # a shed refusal is a strike too


def test_no_more_than_the_quota_is_ever_held_at_once() -> None:
    """Refusals at random instants: at any instant at most `held` holds are running, so a
    guesser that reads each answer is answered at most `held` 401s per `cap_s`."""
    throttle = Throttle(RULES)
    moments = sorted(random.Random(6).uniform(0.0, 120.0) for _ in range(5000))
    holds = [
        (at, at + d.wait_s) for at in moments if isinstance(d := throttle.refused("a", at), Hold)
    ]
    for start, _ in holds:
        assert sum(1 for s, e in holds if s <= start < e) <= RULES.held
    late = [s for s, _ in holds if s >= 60.0]
    assert len(late) <= RULES.held * (60.0 / RULES.cap_s + 1)


def test_the_table_of_peers_is_bounded_stalest_first() -> None:
    throttle = Throttle(RULES)
    for index, peer in enumerate("abcd"):
        throttle.refused(peer, float(index))
    assert [throttle.refused(peer, 4.0).strikes for peer in "dcba"] == [2, 2, 2, 1]


@pytest.mark.parametrize(
    ("rules", "wrong"),
    [
        ({"first_s": 0.0}, "0 < first_s"),
        ({"first_s": 5.0}, "first_s <= cap_s"),
        ({"cap_s": 600.0}, "cap_s < forget_s"),
        ({"held": 0}, "held and peers of 1 or more"),
    ],
)
def test_a_backoff_that_cannot_work_is_refused(rules: dict[str, float], wrong: str) -> None:
    with pytest.raises(InternalError, match=wrong):
        Backoff(**rules)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("address", "peer"),
    [
        ("203.0.113.9", "203.0.113.9"),
        ("::ffff:203.0.113.9", "203.0.113.9"),
        ("2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"),
        ("2001:db8:1:2::ffff", "2001:db8:1:2::/64"),
        ("fe80::1%eth0", "fe80::/64"),
        ("::1", "::/64"),
        ("unknown", "unknown"),
    ],
)
def test_a_peer_is_an_ipv4_address_or_an_ipv6_64(address: str, peer: str) -> None:
    assert peer_of(address) == peer


@pytest.mark.parametrize(
    ("origins", "fetch_sites", "hosts", "scheme", "allowed"),
    [
        ([], [], ["127.0.0.1:8790"], "http", True),  # curl, forge's own clients
        ([], ["same-origin"], ["127.0.0.1:8790"], "http", True),  # the page's own fetch
        ([], ["none"], ["127.0.0.1:8790"], "http", True),  # the URL typed in the address bar
        ([], ["cross-site"], ["127.0.0.1:8790"], "http", False),  # an <img> on another site
        ([], ["same-site"], ["127.0.0.1:8790"], "http", False),  # another port of this host
        ([], ["Cross-Site"], ["127.0.0.1:8790"], "http", False),
        ([], ["same-origin", "same-origin"], ["127.0.0.1:8790"], "http", False),
        (["http://127.0.0.1:8790"], [], ["127.0.0.1:8790"], "http", True),
        (["HTTP://127.0.0.1:8790"], [], ["127.0.0.1:8790"], "http", True),
        (["https://box.example:443"], [], ["box.example"], "https", True),
        (["https://evil.example"], [], ["127.0.0.1:8790"], "http", False),
        (["http://localhost:8790"], [], ["127.0.0.1:8790"], "http", False),
        (["http://127.0.0.1:8790"], [], ["127.0.0.1:8790"], "https", False),
        (["http://127.0.0.1:5173"], [], ["127.0.0.1:8790"], "http", False),
        (["null"], [], ["127.0.0.1:8790"], "http", False),
        (["http://127.0.0.1:8790"], [], [], "http", False),
        (["http://127.0.0.1:8790", "http://127.0.0.1:8790"], [], ["127.0.0.1:8790"], "http", False),
        (["http://127.0.0.1:8790"], ["cross-site"], ["127.0.0.1:8790"], "http", False),
    ],
)  # fmt: skip
def test_token_check_callers(
    origins: list[str], fetch_sites: list[str], hosts: list[str], scheme: str, allowed: bool
) -> None:
    assert same_origin_or_native(origins, fetch_sites, hosts, scheme) is allowed


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
