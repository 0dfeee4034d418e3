"""What the browser tests share: the pages the test serves, frames parsed, events awaited."""

from __future__ import annotations

import asyncio
import io
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from PIL import Image

from forge.wire.binary import BROWSER_AUDIO_HEADER, BROWSER_FRAME_HEADER, Kind
from forge.workers.browser.host import HostEvent

WAIT_S = 30.0
"""A guard against a hung test, never a speed claim: every wait below ends on an event."""

DOWNLOAD_BODY = b"quarterly numbers\n" * 100

PAGES: dict[str, str] = {
    "/canvas": """<body style=margin:0><canvas id=c width=640 height=360></canvas><script>
        let i = 0; const x = document.getElementById('c').getContext('2d');
        function f() { x.fillStyle = `hsl(${i++ % 360},80%,50%)`; x.fillRect(0, 0, 640, 360);
                       requestAnimationFrame(f); }
        f();</script>""",
    "/button": """<body style=margin:0><button id=b style="position:absolute;left:0;top:0;
        width:400px;height:300px;border:0;background:rgb(255,0,0)"
        onclick="this.style.background='rgb(0,0,255)';document.title='clicked'"></button>""",
    "/input": """<body style=margin:0><input id=t style="width:400px;height:100px"
        oninput="document.title='typed:'+this.value">""",
    "/dialogs": """<body style=margin:0><button style="width:400px;height:300px"
        onclick="alert('hello there'); document.title = confirm('sure?') ? 'yes' : 'no'">
        </button>""",
    "/prompt": """<body style=margin:0><button style="width:400px;height:300px"
        onclick="const a = prompt('your name?', 'nobody');
                 document.title = a === null ? 'no name' : 'name:' + a"></button>""",
    "/file": """<body style=margin:0><input type=file multiple id=f
        style="position:absolute;left:0;top:0;width:400px;height:300px"
        onchange="const f = this.files[0]; f.text().then(t =>
            document.title = 'chose:' + this.files.length + ':' + f.name + ':' + t)">""",
    "/download": """<body style=margin:0><a href="/report" download="report.txt"
        style="display:block;width:400px;height:300px;background:#ccc">get</a>""",
    "/popup": """<body style=margin:0><button style="width:400px;height:300px"
        onclick="window.open('/button', '_blank', 'popup')"></button>""",
    "/tone": """<body style=margin:0><button style="position:absolute;left:0;top:0;width:400px;
        height:300px;border:0;background:rgb(255,0,0)" onclick="play(this)"></button><script>
        // #hz=440&gain=0.3&after=0: a sine from a click, silent for `after` s of audio time
        function play(button) {
          const q = new URLSearchParams(location.hash.slice(1));
          const ctx = new AudioContext({sampleRate: 48000});
          const tone = ctx.createOscillator(), level = ctx.createGain();
          tone.frequency.value = Number(q.get('hz') || 440);
          level.gain.setValueAtTime(0, 0);
          level.gain.setValueAtTime(Number(q.get('gain') || 0.3), Number(q.get('after') || 0));
          tone.connect(level).connect(ctx.destination);
          tone.start();
          document.title = 'audio:' + ctx.state;
          ctx.onstatechange = () => { document.title = 'audio:' + ctx.state; };
          button.style.background = button.style.background == 'rgb(0, 0, 255)'
            ? 'rgb(255, 0, 0)' : 'rgb(0, 0, 255)';
        }</script>""",
    "/a": "<title>page a</title><a href=/b>b</a>",
    "/b": "<title>page b</title>",
}


@dataclass(frozen=True)
class Frame:
    profile: int
    tab: int
    seq: int
    width: int
    height: int
    image_format: int
    key: bool
    page_width: int
    page_height: int
    image: bytes

    @classmethod
    def parse(cls, data: bytes) -> Frame:
        kind, *fields = BROWSER_FRAME_HEADER.unpack_from(data)
        assert kind == 1
        fields[6] = bool(fields[6])
        return cls(*fields, image=data[BROWSER_FRAME_HEADER.size :])

    def pixel(self, x: int, y: int) -> tuple[int, ...]:
        with Image.open(io.BytesIO(self.image)) as image:
            rgb = image.convert("RGB").getpixel((x, y))
        assert isinstance(rgb, tuple)
        return rgb

    def decoded_size(self) -> tuple[int, int]:
        with Image.open(io.BytesIO(self.image)) as image:
            image.load()
            return image.size


@dataclass(frozen=True)
class AudioFrame:
    """A kind-2 frame: 20 ms of a tab's sound, i16 interleaved."""

    profile: int
    tab: int
    seq: int
    rate: int
    channels: int
    samples: bytes

    @classmethod
    def parse(cls, data: bytes) -> AudioFrame:
        kind, *fields = BROWSER_AUDIO_HEADER.unpack_from(data)
        assert kind == Kind.BROWSER_AUDIO
        return cls(*fields, samples=data[BROWSER_AUDIO_HEADER.size :])


@dataclass
class Recorder:
    """Everything a host reported, with a way to await the moment something shows up."""

    events: list[HostEvent] = field(default_factory=list)
    frames: list[Frame] = field(default_factory=list)
    audio: list[AudioFrame] = field(default_factory=list)
    _changed: asyncio.Event = field(default_factory=asyncio.Event)

    def event(self, event: HostEvent) -> None:
        self.events.append(event)
        self._changed.set()

    def frame(self, data: bytes) -> None:
        if data[0] == Kind.BROWSER_AUDIO:
            self.audio.append(AudioFrame.parse(data))
        else:
            self.frames.append(Frame.parse(data))
        self._changed.set()

    async def until(self, found: Callable[[], Any]) -> Any:
        async def poll() -> Any:
            while not (result := found()):
                self._changed.clear()
                await self._changed.wait()
            return result

        return await asyncio.wait_for(poll(), WAIT_S)

    def tab_frames(self, tab: int, after: int = 0) -> list[Frame]:
        return [f for f in self.frames if f.tab == tab and f.seq > after]
