"""Speech text is data: the real espeak-ng speaks a line that looks like its options, markup or
commands as the words it is. espeak-ng is deterministic, so "spoken as these words" is checked
as the very samples it renders for the words written out."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from forge.workers.dictate.tts import Speaker, SpeechFailed, speakable

pytestmark = pytest.mark.skipif(shutil.which("espeak-ng") is None, reason="no espeak-ng")

SECRET = "The vault code is purple elephant seven.\n"


async def samples(text: str, voice: str | None = None) -> bytes:
    return (await Speaker().render(text, voice)).pcm


@pytest.mark.parametrize(
    ("line", "words"),
    [
        ("- the first item is done", "the first item is done"),
        ("-5 degrees outside", "minus 5 degrees outside"),
        ("--help", "help"),
    ],
)
async def test_a_line_that_starts_with_a_dash_is_spoken(line: str, words: str) -> None:
    assert await samples(line) == await samples(words)


async def test_dash_f_speaks_the_path_and_never_the_file(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text(SECRET, encoding="utf-8")
    said = await samples(f"-f{secret}")
    assert said == await samples(f"f {secret}")
    assert said != await samples(SECRET)


async def test_nul_and_control_characters_are_spoken_as_spaces() -> None:
    # NUL would end espeak-ng's text; ctrl-A followed by "20S" is its embedded command for
    # "speak at 20 words a minute"; ESC starts a terminal's colour code.
    line = "first part\0second part \x0120S third part\x1b[31m red\x7f\x85 end\ud800"
    assert speakable(line) == "first part second part  20S third part [31m red   end "
    assert await samples(line) == await samples(speakable(line))


async def test_double_brackets_are_read_as_text_not_phonemes() -> None:
    line = "say [[h@l'oU]] now"
    assert speakable(line) == "say [ [h@l'oU]] now"
    assert speakable("[[[x") == "[ [ [x"
    # As phonemes the brackets would say "hello" in the time of "say hello now".
    spelled, phonemes = len(await samples(line)), len(await samples("say hello now"))
    assert spelled > 1.5 * phonemes


async def test_a_line_of_only_control_characters_is_nothing_to_say() -> None:
    with pytest.raises(SpeechFailed, match="there is nothing to say"):
        await samples("\0\x01\x1b\n")


async def test_a_voice_is_a_name_never_a_file(tmp_path: Path) -> None:
    private = tmp_path / "private.txt"
    private.write_text("hunter2 is the password\n", encoding="utf-8")
    # espeak-ng looks a voice up under .../espeak-ng-data/voices/; this climbs out of it to
    # the root, where it would read the file as a voice and name its lines in its errors.
    climb = "../" * 6 + str(private).lstrip("/")
    for voice in (climb, str(private), "-f/etc/hostname", ".."):
        with pytest.raises(SpeechFailed, match="is not a voice id") as refused:
            await samples("hello", voice)
        assert "hunter2" not in str(refused.value)
    assert await samples("hello", "en-gb") != await samples("hello", "en-us")
