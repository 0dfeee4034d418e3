"""Voice through a real socket: listeners counted by connection, previews refused in words when
nobody listens, clips numbered per seat to the seat's subscribers, `forge say` from the CLI."""

from __future__ import annotations

import asyncio
import base64
import os
import sys
from pathlib import Path

import pytest

from forge.workers.dictate.audio import resample_to_rate
from forge.workers.dictate.tts import Speaker

from .harness import OTHER, SEAT, Client, Served

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.timeout(300)]


async def listeners_seen(client: Client, count: int) -> None:
    await client.until(
        lambda: any(f["listeners"] == count for f in client.of_kind("voice_mode_state"))
    )


async def test_listeners_count_connections_and_fall_when_one_closes(served: Served) -> None:
    phone, desk = await Client.open(served.url), await Client.open(served.url)
    await phone.send({"kind": "voice_mode", "key": SEAT, "on": True})  # starts the seat
    assert (await phone.next_of_kind("voice_mode_state"))["listeners"] == 1
    for client in (phone, desk):
        await client.send({"kind": "subscribe", "what": {"session": SEAT}})
        await client.next_of_kind("snapshot")
    assert desk.of_kind("snapshot")[0]["data"]["state"]["voice_listeners"] == 1
    await desk.send({"kind": "voice_mode", "key": SEAT, "on": True})
    await listeners_seen(phone, 2)
    late = await Client.open(served.url)
    await late.send({"kind": "subscribe", "what": {"session": SEAT}})
    snapshot = await late.next_of_kind("snapshot")
    assert snapshot["data"]["state"]["voice_listeners"] == 2
    await phone.close()
    await listeners_seen(late, 1)
    await desk.send({"kind": "voice_mode", "key": SEAT, "on": False, "explicit": True})
    await listeners_seen(late, 0)
    assert served.service.speech.room.listeners(served_seat()) == 0
    await desk.close()
    await late.close()


async def test_a_preview_needs_a_listener_and_reaches_every_subscriber(served: Served) -> None:
    asker, listener = await Client.open(served.url), await Client.open(served.url)
    await asker.send({"kind": "voice_preview", "key": SEAT, "voice": "en-gb"})
    refused = await asker.next_of_kind("error")
    assert refused["what"] == "voice_preview"
    assert "turn the speaker on" in refused["why"]
    await asker.send({"kind": "subscribe", "what": {"session": SEAT}})
    await asker.next_of_kind("snapshot")
    await listener.send({"kind": "voice_mode", "key": SEAT, "on": True})
    await listeners_seen(asker, 1)
    for voice in ("en-gb", None):
        await asker.send({"kind": "voice_preview", "key": SEAT, "voice": voice})
    await asker.until(lambda: len(asker.of_kind("voice_audio")) == 2)
    await listener.until(lambda: len(listener.of_kind("voice_audio")) == 2)
    clips = asker.of_kind("voice_audio")
    assert [c["seq"] for c in clips] == sorted(c["seq"] for c in clips)
    assert clips[1]["seq"] == clips[0]["seq"] + 1
    assert clips[0]["sample_rate"] == 22050
    assert len(base64.b64decode(clips[0]["pcm"])) > 22050
    assert listener.of_kind("voice_audio") == clips
    assert [f["what"] for f in listener.of_kind("error")] == []
    await asker.close()
    await listener.close()


async def test_forge_say_speaks_through_the_running_supervisor(served: Served) -> None:
    listener = await Client.open(served.url)
    seat = "/".join(SEAT.values())
    said = await _forge("say", "--url", served.url, seat, "The build is green.")
    assert said.returncode == 1
    assert b"no client has voice on" in said.stderr
    await listener.send({"kind": "voice_mode", "key": SEAT, "on": True})
    await listeners_seen(listener, 1)
    said = await _forge("say", "--url", served.url, seat, "The build is green.")
    assert said.returncode == 0, said.stderr
    assert b"said on acme/proj/a" in said.stdout
    clip = await listener.next_of_kind("voice_audio")
    assert clip["key"] == SEAT
    other = "/".join(OTHER.values())
    unheard = await _forge("say", "--url", served.url, other, "Nobody hears this.")
    assert unheard.returncode == 1
    await listener.close()


async def test_forge_say_speaks_lines_that_look_like_options_as_words(
    served: Served, tmp_path: Path
) -> None:
    """The attack: `forge say SEAT -- "-f<path>"` spoke the file to every listener, and an
    ordinary line starting with a dash failed. Each clip is the samples of the words written
    out, and the one-line secret is not in what the dictation model hears."""
    secret = tmp_path / "secret.txt"
    secret.write_text("The vault code is purple elephant seven.\n", encoding="utf-8")
    listener = await Client.open(served.url)
    await listener.send({"kind": "voice_mode", "key": SEAT, "on": True})
    await listeners_seen(listener, 1)
    seat = "/".join(SEAT.values())
    lines = {
        f"-f{secret}": f"f {secret}",
        "- the first item is done": "the first item is done",
        "-5 degrees outside": "minus 5 degrees outside",
        "--help": "help",
    }
    clips = {}
    for line, words in lines.items():
        mark = len(listener.frames)
        said = await _forge("say", "--url", served.url, seat, "--", line)
        assert said.returncode == 0, said.stderr
        clip = await listener.next_of_kind("voice_audio", after=mark)
        clips[line] = base64.b64decode(clip["pcm"])
        assert clips[line] == (await Speaker().render(words)).pcm, line

    async def heard(pcm: bytes) -> str:
        ended = await listener.take(resample_to_rate(pcm, 22050), pace=None)
        return str(ended["raw"]).lower()

    assert "elephant" in await heard((await Speaker().render(secret.read_text())).pcm)
    assert "elephant" not in await heard(clips[f"-f{secret}"])
    assert "first item is done" in await heard(clips["- the first item is done"])
    await listener.close()


async def test_the_models_page_reads_what_runs(served: Served) -> None:
    client = await Client.open(served.url)
    await client.send({"kind": "subscribe", "what": "dictate_models"})
    data = (await client.next_of_kind("snapshot"))["data"]
    assert data["enabled"] is True
    assert data["models_dir"] is None
    (dictation, speaking) = data["in_use"]
    assert (dictation["role"], dictation["state"], dictation["from"]) == (
        "dictation",
        "ready",
        "the compiled pin",
    )
    assert dictation["sha256"].startswith("1a5afae0")
    assert dictation["size"] > 70_000_000
    assert (speaking["role"], speaking["file"]) == ("speaking", "espeak-ng")
    assert data["check"]["state"] == "unreachable"
    assert data["speaking"]["enabled"] is True
    assert "en-us" in data["speaking"]["voices"]
    assert (data["bench"], data["installed"], data["rows"]) == (None, [], [])
    assert set(data) >= {"results", "speaking_bench", "speaking_results", "install", "activate"}
    mark = len(client.frames)
    await client.send({"kind": "subscribe", "what": "home"})
    home = (await client.next_of_kind("snapshot", after=mark))["data"]
    assert home["dictate"]["state"] == "ready"
    assert home["voice"]["engine"] == "espeak-ng"
    await client.close()


def served_seat() -> object:
    from forge.wire.seats import Seat

    return Seat(**SEAT)


class _Ran:
    def __init__(self, returncode: int, stdout: bytes, stderr: bytes) -> None:
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


async def _forge(*argv: str) -> _Ran:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "forge.cli", *argv, env=dict(os.environ),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await process.communicate()
    assert process.returncode is not None
    return _Ran(process.returncode, out, err)


async def test_forge_dictate_bench_lands_its_run_on_the_models_page(served: Served) -> None:
    watcher = await Client.open(served.url)
    await watcher.send({"kind": "subscribe", "what": "dictate_models"})
    await watcher.next_of_kind("snapshot")
    ran = await _forge(
        "dictate", "bench", "--url", served.url, "--clip", "flite-6", "--clip", "silence"
    )
    assert ran.returncode == 0, ran.stderr
    assert b"dictation: tiny.en, 2 clips" in ran.stdout
    assert b"speaking: espeak-ng, 1 lines" in ran.stdout

    def landed() -> bool:
        views = [
            u["update"]["dictate_models_changed"]
            for u in watcher.of_kind("update")
            if isinstance(u["update"], dict) and "dictate_models_changed" in u["update"]
        ]
        return any(v["bench"] is None and v["results"] for v in views)

    await watcher.until(landed)
    run = served.service.page.results[-1]
    assert (run["clips"], run["wer"], run["tier"]) == (2, 0.0, "local")
    assert [row["name"] for row in run["rows"]] == ["flite-6", "silence"]
    assert served.service.page.speaking_results[-1]["clips"] == 1
    await watcher.close()
