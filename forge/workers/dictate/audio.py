"""The take's audio as the wire carries it: i16 little-endian mono at 16 kHz, cut into 20 ms frames.

A client's kind-0 frames need not be 20 ms each; `Reframer` turns whatever arrives into whole
20 ms frames (640 bytes) and keeps the remainder for the next push, so the endpointer always sees
the frame size webrtcvad takes.
"""

from __future__ import annotations

import math

import numpy as np

RATE = 16000
FRAME_MS = 20
FRAME_SAMPLES = RATE * FRAME_MS // 1000
FRAME_BYTES = FRAME_SAMPLES * 2
FULL_SCALE = 32768.0


class Reframer:
    """Bytes in, whole 20 ms frames out; an odd byte or a part frame waits for the next push."""

    def __init__(self) -> None:
        self._rest = b""

    def push(self, data: bytes) -> list[bytes]:
        data = self._rest + data
        whole = len(data) - len(data) % FRAME_BYTES
        self._rest = data[whole:]
        return [data[i : i + FRAME_BYTES] for i in range(0, whole, FRAME_BYTES)]

    def flush(self) -> bytes | None:
        """The part frame left at the end of a take (whole samples), None when there is none."""
        rest, self._rest = self._rest, b""
        if len(rest) < 2:
            return None
        return rest[: len(rest) - len(rest) % 2]


def mean_square(frame: bytes) -> float:
    """The frame's mean square, full scale = 1.0 (levels are root-mean-squares of these)."""
    samples = np.frombuffer(frame, dtype="<i2").astype(np.float64) / FULL_SCALE
    return float(np.mean(samples * samples)) if samples.size else 0.0


def dbfs(rms: float) -> float:
    """An RMS as dB below full scale, floored at -100."""
    return max(20.0 * math.log10(rms), -100.0) if rms > 0 else -100.0


def to_float(pcm: bytes) -> np.ndarray:
    """i16 PCM as float32 in [-1, 1), the engine's input."""
    return np.frombuffer(pcm, dtype="<i2").astype(np.float32) / np.float32(FULL_SCALE)


def seconds(pcm: bytes) -> float:
    return len(pcm) / 2 / RATE


def resample(samples: np.ndarray, source: int, target: int) -> np.ndarray:
    """Band-limited resampling of a whole clip: its spectrum cut (or padded) to the new length."""
    length = round(len(samples) * target / source)
    if length == 0:
        return np.zeros(0, dtype=np.int16)
    spectrum = np.fft.rfft(samples.astype(np.float64))
    kept = np.zeros(length // 2 + 1, dtype=complex)
    width = min(len(kept), len(spectrum))
    kept[:width] = spectrum[:width]
    out = np.fft.irfft(kept, n=length) * (length / len(samples))
    return np.clip(np.round(out), -32768, 32767).astype(np.int16)


def resample_to_rate(pcm: bytes, rate: int) -> bytes:
    """i16 PCM at `rate` as i16 PCM at 16 kHz."""
    if rate == RATE:
        return pcm
    return resample(np.frombuffer(pcm, dtype="<i2"), rate, RATE).astype("<i2").tobytes()
