"""The command verb: both variant shapes, and the reply_to rule refused before anything runs."""

from __future__ import annotations

import pytest

from forge.wire.client import Command
from forge.wire.commands import REPLY_COMMANDS, CommandCall, decode_command, reply_channel
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


def test_a_reply_commands_refusal_goes_to_its_reply() -> None:
    """Issue 13 item 5: the four reply commands are refused in their reply, whatever was wrong
    with them; any other command (or an object naming two) is refused as an error."""
    assert reply_channel(Command(command={"biometric_enrol": 3}, reply_to="r")) == "r"
    assert reply_channel(Command(command="vault_enrolment_material", reply_to=2)) == 2
    assert reply_channel(Command(command={"biometric_release": {}})) is None
    assert reply_channel(Command(command={"cancel": {"key": KEY}}, reply_to=1)) is None
    both = {"biometric_enrol": {}, "biometric_rewrite": {}}
    assert reply_channel(Command(command=both, reply_to=1)) is None


@pytest.mark.parametrize("name", ["read_call_output", "dictate_activate", "commit_diff"])
def test_the_seeds_other_commands_are_known(name: str) -> None:
    """Issue 13 item 8: named in the seed, so known (and refused as unserved by the supervisor)."""
    assert decode_command(Command(command={name: {}})) == CommandCall(name, {}, None)
