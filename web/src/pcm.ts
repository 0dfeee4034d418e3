// Sound as numbers (pure, shared by the page and its AudioWorklet): the microphone's samples cut
// into 16 kHz i16 frames for dictation, and the tab sound's jitter buffer.

/** Dictation's rate and frame: 16 kHz mono, 20 ms (320 samples, 640 bytes) a frame. */
export const DICTATION_RATE = 16000;
export const DICTATION_FRAME = 320;

/** Full scale float to i16, clipped. */
export function toI16(sample: number): number {
  const clipped = Math.max(-1, Math.min(1, sample));
  return Math.round(clipped < 0 ? clipped * 32768 : clipped * 32767);
}

/**
 * Resamples mono float audio from the context's rate down to 16 kHz and cuts it into 20 ms
 * i16 frames. Each output sample is the mean of the input samples since the last one (a box
 * filter as wide as the ratio): enough anti-aliasing for speech, at any input rate (48 kHz,
 * 44.1 kHz), with no state but a running sum.
 */
export class Downsampler {
  private sum = 0;
  private count = 0;
  private phase = 0;
  private frame = new Int16Array(DICTATION_FRAME);
  private filled = 0;

  constructor(
    private readonly inRate: number,
    private readonly outRate: number = DICTATION_RATE,
  ) {}

  /** Feed input samples; returns the frames completed by them (often none). */
  push(input: Float32Array): Int16Array[] {
    const done: Int16Array[] = [];
    for (const sample of input) {
      this.sum += sample;
      this.count += 1;
      this.phase += this.outRate;
      if (this.phase < this.inRate) continue;
      this.phase -= this.inRate;
      this.frame[this.filled++] = toI16(this.sum / this.count);
      this.sum = 0;
      this.count = 0;
      if (this.filled === DICTATION_FRAME) {
        done.push(this.frame);
        this.frame = new Int16Array(DICTATION_FRAME);
        this.filled = 0;
      }
    }
    return done;
  }
}

/** The RMS of i16 samples, full scale 1.0. */
export function rmsI16(samples: Int16Array): number {
  if (samples.length === 0) return 0;
  let total = 0;
  for (const sample of samples) total += sample * sample;
  return Math.sqrt(total / samples.length) / 32768;
}

/**
 * A tab sound's jitter buffer: interleaved i16 frames in, float samples per channel out.
 *
 * Playback starts once `target` frames (per channel) wait, so a late packet finds sound still
 * queued; when the buffer runs dry it plays silence and waits for `target` again (a pause in
 * arrivals is silence, a player restarts its buffer). It never grows past `limit`: when a burst
 * overflows it, the oldest samples go and `target` of the newest stay, so sound that fell behind
 * catches up rather than staying late.
 */
export class JitterBuffer {
  private readonly ring: Float32Array;
  private read = 0;
  private size = 0;
  private playing = false;
  dropped = 0;
  underruns = 0;

  constructor(
    readonly channels: number,
    private readonly target: number,
    private readonly limit: number,
  ) {
    this.ring = new Float32Array(limit * channels);
  }

  /** Frames (per channel) waiting. */
  get buffered(): number {
    return this.size;
  }

  push(interleaved: Int16Array): void {
    const frames = Math.floor(interleaved.length / this.channels);
    if (this.size + frames > this.limit) {
      const keep = Math.max(0, Math.min(this.target, this.limit - frames));
      const drop = this.size - Math.min(this.size, keep);
      this.read = (this.read + drop) % this.limit;
      this.size -= drop;
      this.dropped += drop;
    }
    const skip = Math.max(0, frames - this.limit); // a push larger than the whole buffer
    let write = (this.read + this.size) % this.limit;
    for (let frame = skip; frame < frames; frame++) {
      const at = write * this.channels;
      for (let channel = 0; channel < this.channels; channel++) {
        this.ring[at + channel] = (interleaved[frame * this.channels + channel] ?? 0) / 32768;
      }
      write = (write + 1) % this.limit;
    }
    this.size += frames - skip;
    this.dropped += skip;
  }

  /** Fill `outputs` (one array per channel, equal lengths); returns the frames that were sound. */
  pull(outputs: Float32Array[]): number {
    const length = outputs[0]?.length ?? 0;
    if (!this.playing && this.size >= this.target) this.playing = true;
    const take = this.playing ? Math.min(length, this.size) : 0;
    for (let channel = 0; channel < outputs.length; channel++) {
      const out = outputs[channel];
      if (!out) continue;
      const from = Math.min(channel, this.channels - 1);
      for (let i = 0; i < take; i++) out[i] = this.ring[((this.read + i) % this.limit) * this.channels + from] ?? 0;
      out.fill(0, take);
    }
    this.read = (this.read + take) % this.limit;
    this.size -= take;
    if (this.playing && take < length) {
      this.playing = false;
      this.underruns += 1;
    }
    return take;
  }

  clear(): void {
    this.read = 0;
    this.size = 0;
    this.playing = false;
  }
}
