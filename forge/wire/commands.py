"""The `command` verb: the Command enum, externally tagged, and its `reply_to` rule.

`{"cancel": {"key": {...}}}` is a struct variant and `"vault_lock"` a unit variant (S13). Exactly
the commands whose outcome rides only the reply must carry `reply_to`, and no other may (S15): both
mismatches are refused before anything runs. Six such commands have names (the biometric four, and
an agent seat's `spawn` and `despawn`: `forge.wire.agent`); the three review-write commands that
also take `reply_to` have none yet, so this server refuses them as unknown commands (O-S10). A
refusal of one of the six sent with `reply_to` is that reply's body (S16): `reply_channel` says
where it goes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from forge.wire.agent import AGENT_COMMANDS, AGENT_REPLY_COMMANDS
from forge.wire.client import Command, ReplyTo
from forge.wire.errors import ClientRefusal

UNIT_COMMANDS = frozenset(
    {
        "dictate_catalogue_check",
        "dictate_bench_stop",
        "voice_bench_start",
        "voice_bench_stop",
        "plugin_update_all",
        "plugin_check_updates",
        "vault_lock",
    }
)
"""The seven unit variants: they cross as the bare name."""

REPLY_COMMANDS = (
    frozenset(
        {"biometric_release", "biometric_enrol", "biometric_rewrite", "vault_enrolment_material"}
    )
    | AGENT_REPLY_COMMANDS
)
"""Commands that must carry `reply_to`, because their outcome arrives only in the reply."""

STRUCT_COMMANDS = (
    frozenset(
        {
            "cancel",
            "respond_settings_write",
            "respond_vault_ask",
            "read_call_output",
            "dictate_activate",
            "commit_diff",
        }
    )
    | REPLY_COMMANDS
    | AGENT_COMMANDS
)
"""The struct variants this server knows (a struct variant not listed is an unknown command)."""

KNOWN_COMMANDS = UNIT_COMMANDS | STRUCT_COMMANDS


@dataclass(frozen=True, slots=True)
class CommandCall:
    """A decoded command: its variant name, its field bag ({} for a unit variant), its reply_to."""

    name: str
    fields: dict[str, Any]
    reply_to: ReplyTo | None


def decode_command(message: Command) -> CommandCall:
    """Read the variant and apply the reply_to rule, or refuse naming `command`."""
    raw = message.command
    if isinstance(raw, str):
        name, fields = raw, {}
        if name in STRUCT_COMMANDS:
            raise ClientRefusal("command", f'{name} carries fields: send {{"{name}": {{...}}}}')
    else:
        if len(raw) != 1:
            raise ClientRefusal("command", "a command names exactly one variant")
        ((name, body),) = raw.items()
        if name in UNIT_COMMANDS:
            raise ClientRefusal("command", f'{name} takes no fields: send "{name}" alone')
        if not isinstance(body, dict):
            raise ClientRefusal("command", f"{name} carries an object of fields")
        fields = body
    if name not in KNOWN_COMMANDS:
        raise ClientRefusal("command", f"unknown command {name}")
    if name in REPLY_COMMANDS and message.reply_to is None:
        raise ClientRefusal(
            "command", f"{name} needs reply_to: its outcome arrives only in the reply"
        )
    if name not in REPLY_COMMANDS and message.reply_to is not None:
        raise ClientRefusal("command", f"{name} sends no reply, so reply_to must be absent or null")
    return CommandCall(name, fields, message.reply_to)


def reply_channel(message: Command) -> ReplyTo | None:
    """Where a refusal of `message` is answered: its `reply_to` when it names one of the reply
    commands (the refusal is the reply's body, S16), else None (an error, like any refusal)."""
    raw = message.command
    name = raw if isinstance(raw, str) else next(iter(raw), None) if len(raw) == 1 else None
    return message.reply_to if name in REPLY_COMMANDS else None
