"""The greeting's `settings` block: the client's look and the dictation defaults (G02, G04, G05)."""

from __future__ import annotations

from typing import Any

from forge.config.model import ForgeConfig


def greeting_settings(config: ForgeConfig) -> dict[str, Any]:
    """`{mark, theme, font, dictate{styling, structure, context}}`; null means the built-in.

    The browser's idle clocks are the server's and are not carried here (G04).
    """
    return {
        "mark": config.client.mark,
        "theme": config.client.theme,
        "font": config.client.font,
        "dictate": {
            "styling": config.dictate.styling,
            "structure": config.dictate.structure,
            "context": config.dictate.context,
        },
    }
