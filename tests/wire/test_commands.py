"""The command verb: both variant shapes, and the reply_to rule refused before anything runs."""

from __future__ import annotations

import pytest

from forge.wire.client import Command
from forge.wire.commands import REPLY_COMMANDS, CommandCall, decode_command
from forge.wire.errors import ClientRefusal

KEY = {"org": "acme", "project": "proj", "label": "lead"}


def test_struct_and_unit_variants_decode() -> None:
    assert decode_command(Command(command={"cancel": {"key": KEY}})) == CommandCall(
        "cancel", {"key": KEY}, None
    )
    assert decode_command(Command(command="vault_lock")) == CommandCall("vault_lock", {}, None)


def test_a_reply_command_with_reply_to_decodes() -> None:
    call = decode_command(Command(command={"biometric_release": {}}, reply_to="r1"))
    assert call.reply_to == "r1"


def why(command: Command) -> str:
    with pytest.raises(ClientRefusal) as caught:
        decode_command(command)
    assert caught.value.what == "command"
    return caught.value.why


@pytest.mark.parametrize("name", sorted(REPLY_COMMANDS))
def test_reply_to_is_required_on_the_reply_commands(name: str) -> None:
    assert "reply_to" in why(Command(command={name: {}}))


def test_reply_to_is_refused_where_no_reply_comes() -> None:
    assert "reply_to" in why(Command(command="vault_lock", reply_to=4))
    assert "reply_to" in why(Command(command={"cancel": {"key": KEY}}, reply_to=4))


def test_shape_and_name_refusals() -> None:
    assert why(Command(command={"warp": {}})) == "unknown command warp"
    assert "exactly one variant" in why(Command(command={"cancel": {}, "vault_lock": {}}))
    assert "takes no fields" in why(Command(command={"vault_lock": {}}))
    assert "carries fields" in why(Command(command="cancel"))
    assert "object of fields" in why(Command(command={"cancel": 3}))
