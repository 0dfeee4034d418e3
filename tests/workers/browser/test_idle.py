"""The idle clock over a real socket: a host without viewers or calls closes, and comes back."""

from __future__ import annotations

import pytest

from .socket_harness import SEAT, client, records, serving


async def test_an_idle_host_closes_and_the_next_attach_starts_it(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    async with serving(tmp_path_factory.mktemp("idle"), "[browser]\nidle_close_s = 1\n") as served:
        a = await client(served)
        assert (await a.ask({"kind": "browser_view", "seat": SEAT}))["ok"]
        tabs = await a.ask({"kind": "browser_tabs", "seat": SEAT})
        assert tabs["tabs"]["up"]
        assert tabs["tabs"]["closing_at_ms"] is not None
        await a.send({"kind": "browser_detach"})
        closed = await a.until(lambda: [t for t in a.kinds("browser_tabs") if not t["up"]])
        assert (closed[0]["closing_at_ms"], closed[0]["rows"]) == (None, [])
        assert records(served, "browser_host_idle_closed")
        assert (await a.ask({"kind": "browser_view", "seat": SEAT}))["ok"]
        await a.until(lambda: a.kinds("browser_tabs")[-1]["up"])
        await a.close()
