"""Where the socket departed from the seed (issue 13, items 5, 7, 8, 9), seen on a real socket."""

from __future__ import annotations

from pathlib import Path

import pytest

from forge.testing.supervised import Start, Supervised, ask, quiet

from .test_subjects import SEAT, config_for, start_seat

STRANGER = {"org": "acme", "project": "nope", "label": "lead"}
NOT_SERVED = "is not supported by this server"


@pytest.fixture
async def served(supervise: Start, tmp_path: Path) -> Supervised:
    project = tmp_path / "proj"
    project.mkdir()
    return await supervise(config_for(project))


@pytest.mark.parametrize(
    ("command", "why"),
    [
        ({"biometric_enrol": {}}, "biometric_enrol is not supported by this server"),
        ({"vault_enrolment_material": {}}, f"vault_enrolment_material {NOT_SERVED}"),
        ({"biometric_rewrite": 3}, "biometric_rewrite carries an object of fields"),
        (
            "biometric_release",
            'biometric_release carries fields: send {"biometric_release": {...}}',
        ),
    ],
)
async def test_a_refused_reply_command_is_answered_in_its_reply(
    served: Supervised, command: object, why: str
) -> None:
    """Issue 13 item 5: a command sent with `reply_to` is answered by a `reply` whose body is the
    refusal, never by an `error`: the client waiting on its reply_to always hears it (S16)."""
    client = await served.greeted()
    for reply_to in ("r1", 7):
        sent = {"kind": "command", "command": command, "reply_to": reply_to}
        assert await ask(client, sent) == {
            "kind": "reply",
            "reply_to": reply_to,
            "body": {"ok": False, "why": why},
        }
    await quiet(client)


async def test_commands_that_are_not_the_four_still_refuse_as_errors(served: Supervised) -> None:
    """Issue 13 item 5: only the reply commands answer in a reply; a command that sends no reply
    refuses as an error whether or not a reply was asked for (S15, S16)."""
    client = await served.greeted()
    cancel = {"kind": "command", "command": {"cancel": {"key": SEAT}}, "reply_to": 3}
    refused = await ask(client, cancel)
    assert (refused["kind"], refused["what"]) == ("error", "command")
    both = {"biometric_enrol": {}, "vault_lock": {}}
    refused = await ask(client, {"kind": "command", "command": both, "reply_to": 4})
    assert (refused["kind"], refused["why"]) == ("error", "a command names exactly one variant")


@pytest.mark.parametrize("name", ["dictate_activate", "commit_diff"])
async def test_commands_the_seed_names_are_known_and_not_served(
    served: Supervised, name: str
) -> None:
    """Issue 13 item 8: dictate_activate and commit_diff are the seed's commands: known and not
    served, never "unknown command" (read_call_output is served: tests/supervisor/agent)."""
    client = await served.greeted()
    refused = await ask(client, {"kind": "command", "command": {name: {"key": SEAT}}})
    assert (refused["kind"], refused["what"]) == ("error", "command")
    assert refused["why"] == f"{name} is not supported by this server"


@pytest.mark.parametrize(
    ("message", "what"),
    [
        ({"kind": "more", "conversation": "{seat}", "turns": 5}, "more"),
        ({"kind": "voice_mode", "key": "{seat}", "on": True}, "voice_mode"),
    ],
)
async def test_more_and_voice_mode_refuse_a_seat_that_is_not_there(
    served: Supervised, message: dict[str, object], what: str
) -> None:
    """Issue 13 item 9: `more` and `voice_mode` for a seat of an unknown project, or one never
    started, are refused by name with the seat set: an empty page (cursor null) would tell a
    client the history ended, and `listeners: 0` that a seat exists (S04, D2)."""
    client = await served.greeted()
    field = next(key for key, value in message.items() if value == "{seat}")
    stranger = await ask(client, message | {field: STRANGER})
    assert stranger == {
        "kind": "error",
        "what": what,
        "why": "no project acme/nope is configured",
        "seat": STRANGER,
        "dispatch_id": None,
    }
    unstarted = await ask(client, message | {field: SEAT})
    assert (unstarted["what"], unstarted["seat"]) == (what, SEAT)
    assert unstarted["why"] == "seat acme/proj/lead has not been started"
    await start_seat(client)
    answered = await ask(client, message | {field: SEAT})
    assert answered["kind"] in ("page", "voice_mode_state")


WINDOW = {"by_model": [], "by_project": [], "by_seat": [], "total": None}
"""A usage window with nothing pooled: the seed's fields, and `by_seat` (ours: agent seats)."""


async def test_usage_dictate_models_and_extensions_carry_the_seeds_fields(
    served: Supervised,
) -> None:
    """Issue 13 item 7: the three subjects carry the seed's own field names, empty, and no
    names of ours but usage's `by_seat` (D1)."""
    client = await served.greeted()
    usage = (await ask(client, {"kind": "subscribe", "what": "usage"}))["data"]
    assert usage == {
        "today": WINDOW,
        "week": WINDOW,
        "month": WINDOW,
        "lifetime": WINDOW,
        "pricing_available": False,
    }
    models = (await ask(client, {"kind": "subscribe", "what": "dictate_models"}))["data"]
    assert set(models) == {
        "enabled", "models_dir", "speaking", "in_use", "check", "updates", "rows", "install",
        "activate", "installed", "bench", "results", "speaking_bench", "speaking_results",
        "read_aloud",
    }  # fmt: skip
    assert (models["enabled"], models["in_use"], models["check"]["state"]) == (
        False,
        [],
        "unreachable",  # no model feed is reachable offline: models are found, never fetched
    )
    extensions = (await ask(client, {"kind": "subscribe", "what": "extensions"}))["data"]
    assert extensions == {"snapshot": None, "lsp": [], "update_run": None}
