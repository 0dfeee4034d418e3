"""The `dictate_models` subject's snapshot, built from the config and what the worker said. Pure.

Field names are the protocol's (docs/protocol.md, "Dictation and voice"). This machine reaches no
model feed, so `check` is always `unreachable`, `rows`/`updates` are empty and nothing is installed
from a feed (`installed` lists the model in use when it came from `[dictate] models_dir`). `in_use`
has the dictation row (its preflight state) and, when `[tts]` is on, the speaking row (pending or
ready).
"""

from __future__ import annotations

from typing import Any

from forge.config import ForgeConfig
from forge.workers.dictate.protocol import ModelState, SpeakingState

UNREACHABLE = "no model feed is reachable from this machine; models are found, never fetched"
IDLE = {"state": "idle"}


def view(
    config: ForgeConfig,
    model: ModelState,
    speaking: SpeakingState | None,
    *,
    preview_error: str | None,
    bench: dict[str, Any] | None,
    results: list[dict[str, Any]],
    speaking_bench: dict[str, Any] | None,
    speaking_results: list[dict[str, Any]],
) -> dict[str, Any]:
    in_use = [dictation_row(config, model)] if config.dictate.enabled else []
    if config.tts.enabled:
        in_use.append(speaking_row(config, speaking))
    models_dir = config.dictate.models_dir
    return {
        "enabled": config.dictate.enabled,
        "models_dir": str(models_dir) if models_dir else None,
        "speaking": speaking_view(config, speaking, preview_error),
        "in_use": in_use,
        "check": {"state": "unreachable", "error": UNREACHABLE},
        "updates": [],
        "rows": [],
        "install": IDLE,
        "activate": IDLE,
        "installed": installed(model),
        "bench": bench,
        "results": results,
        "speaking_bench": speaking_bench,
        "speaking_results": speaking_results,
        "read_aloud": {
            "recordings": [],
            "recording": False,
            "passage": None,
            "terms": None,
            "error": None,
        },
    }


def dictation_row(config: ForgeConfig, model: ModelState) -> dict[str, Any]:
    return {
        "role": "dictation",
        "file": model.path,
        "size": model.size,
        "sha256": model.sha256,
        "state": model.state,
        "error": model.error,
        "facts": model.facts,
        "catalogue": None,
        "from": model.origin,
        "at": model.at_ms,
    }


def speaking_row(config: ForgeConfig, speaking: SpeakingState | None) -> dict[str, Any]:
    piper = config.tts.piper_model
    return {
        "role": "speaking",
        "file": str(piper) if config.tts.engine == "piper" and piper else config.tts.engine,
        "size": None,
        "sha256": None,
        "state": "ready" if speaking is not None and speaking.state == "ready" else "pending",
        "facts": {"runtime": config.tts.engine},
        "catalogue": None,
        "from": "[tts] engine",
        "at": None,
    }


def speaking_view(
    config: ForgeConfig, speaking: SpeakingState | None, preview_error: str | None
) -> dict[str, Any]:
    name = speaking.model if speaking is not None else config.tts.engine
    row = speaking_row(config, speaking)
    return {
        "enabled": config.tts.enabled,
        "models_dir": str(config.tts.piper_model.parent) if config.tts.piper_model else None,
        "speaking_model": name,
        "snapshot": row,
        "active": {
            "variant": name,
            "file": row["file"],
            "quant": None,
            "size": None,
            "installed": row["state"] == "ready",
            "active": True,
        },
        "from": "[tts] engine",
        "variants": [],
        "voices": speaking.voices if speaking is not None else [],
        "voice": config.tts.voice,
        "preview_error": preview_error,
    }


def installed(model: ModelState) -> list[dict[str, Any]]:
    if model.origin != "[dictate] models_dir" or model.path is None:
        return []
    return [
        {
            "variant": model.name,
            "file": model.path,
            "url": None,
            "size": model.size,
            "facts": None,
            "at": model.at_ms,
        }
    ]
