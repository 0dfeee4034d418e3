// The seat's speaker switch: `voice_mode` on and off, and its `voice_audio` clips played in
// order through WebAudio, one after another, never two at once.
//
// The switch is this connection's, per seat: turned on, it stays wanted for that seat; leaving
// the seat pauses it (`explicit: false`, the server then puts no note to the agent) and coming
// back resumes it. Clips reach every subscriber of the seat, so they are played only while this
// page's own switch is on for the seat they are for.

import type { App, Surface } from "./app";
import { sameSeat, seatKey, type Seat, type ServerMessage } from "./wire";

export interface VoiceTestHook {
  on: boolean;
  listeners: number | null;
  clips: number;
  played: number;
  lastSeq: number;
  why: string | null;
}

declare global {
  interface Window {
    forgeVoice?: VoiceTestHook;
  }
}

interface Clip {
  seq: number;
  rate: number;
  samples: Float32Array<ArrayBuffer>;
}

/** A clip's base64 mono i16 little-endian samples as floats. */
export function clipSamples(pcm: string): Float32Array<ArrayBuffer> {
  const bytes = Uint8Array.from(atob(pcm), (char) => char.charCodeAt(0));
  const view = new DataView(bytes.buffer);
  const samples = new Float32Array(bytes.length >> 1);
  for (let i = 0; i < samples.length; i++) samples[i] = view.getInt16(i * 2, true) / 32768;
  return samples;
}

export class Speaker implements Surface {
  seat: Seat | null = null;
  listeners: number | null = null;
  why: string | null = null;
  private readonly wanted = new Set<string>();
  private queue: Clip[] = [];
  private playing: AudioBufferSourceNode | null = null;
  private context: AudioContext | null = null;
  private readonly subscribers = new Set<() => void>();
  private readonly hook: VoiceTestHook = { on: false, listeners: null, clips: 0, played: 0, lastSeq: 0, why: null };

  constructor(private readonly app: App) {
    window.forgeVoice = this.hook;
    app.addSurface(this);
  }

  subscribe(listener: () => void): () => void {
    this.subscribers.add(listener);
    return () => this.subscribers.delete(listener);
  }

  get on(): boolean {
    return !!this.seat && this.wanted.has(seatKey(this.seat));
  }

  /** The seat on screen changed (null: none): pause the old seat's voice, resume the new one's. */
  show(seat: Seat | null): void {
    if (sameSeat(seat, this.seat) || (!seat && !this.seat)) return;
    if (this.on && this.seat) this.app.send({ kind: "voice_mode", key: this.seat, on: false, explicit: false });
    this.silence();
    this.seat = seat;
    this.listeners = null;
    this.why = null;
    if (this.on && seat) this.app.send({ kind: "voice_mode", key: seat, on: true });
    this.changed();
  }

  /** The switch, pressed (a user gesture, so the sound may start). */
  toggle(): void {
    const seat = this.seat;
    if (!seat) return;
    const key = seatKey(seat);
    const on = !this.wanted.has(key);
    if (on) {
      this.wanted.add(key);
      this.audio();
    } else {
      this.wanted.delete(key);
      this.silence();
    }
    this.why = null;
    this.app.send({ kind: "voice_mode", key: seat, on });
    this.changed();
  }

  // --- the socket ------------------------------------------------------------------------

  message(message: ServerMessage): boolean {
    if (message.kind === "error" && (message.what === "voice_mode" || message.what === "voice_preview")) {
      const seat = message.seat;
      if (seat && !sameSeat(seat, this.seat)) return true;
      if (message.what === "voice_mode" && this.seat) this.wanted.delete(seatKey(this.seat));
      this.why = message.why;
      this.changed();
      return true;
    }
    if (message.kind === "voice_mode_state") {
      if (sameSeat(message.key, this.seat)) {
        this.listeners = message.listeners;
        this.changed();
      }
      return true;
    }
    if (message.kind === "voice_audio") {
      if (this.on && sameSeat(message.key, this.seat)) {
        this.enqueue({
          seq: message.seq,
          rate: message.sample_rate,
          samples: clipSamples(message.pcm),
        });
      }
      return true;
    }
    return false;
  }

  binary(): void {
    // Speech arrives as JSON (`voice_audio`), never as a binary frame.
  }

  /** A new link knows no switch: turn this seat's on again. */
  relink(): void {
    if (this.on && this.seat) this.app.send({ kind: "voice_mode", key: this.seat, on: true });
  }

  // --- playing ---------------------------------------------------------------------------

  private audio(): AudioContext {
    this.context ??= new AudioContext();
    if (this.context.state === "suspended") void this.context.resume();
    return this.context;
  }

  /** Clips wait in seq order; the next starts when the one playing ends. */
  private enqueue(clip: Clip): void {
    this.hook.clips += 1;
    const at = this.queue.findIndex((waiting) => waiting.seq > clip.seq);
    if (at < 0) this.queue.push(clip);
    else this.queue.splice(at, 0, clip);
    if (!this.playing) this.next();
  }

  private next(): void {
    const clip = this.queue.shift();
    if (!clip) return;
    const context = this.audio();
    const buffer = context.createBuffer(1, Math.max(1, clip.samples.length), clip.rate);
    buffer.copyToChannel(clip.samples, 0);
    const source = context.createBufferSource();
    source.buffer = buffer;
    source.connect(context.destination);
    source.onended = () => {
      if (this.playing !== source) return;
      this.playing = null;
      this.hook.played += 1;
      this.hook.lastSeq = clip.seq;
      this.next();
    };
    this.playing = source;
    source.start();
  }

  private silence(): void {
    this.queue = [];
    const playing = this.playing;
    this.playing = null;
    if (playing) {
      playing.onended = null;
      playing.stop();
    }
  }

  private changed(): void {
    Object.assign(this.hook, { on: this.on, listeners: this.listeners, why: this.why });
    for (const listener of this.subscribers) listener();
  }
}

const speakers = new WeakMap<App, Speaker>();

/** The page's one speaker switch (it follows the seat on screen). */
export function speakerOf(app: App): Speaker {
  let speaker = speakers.get(app);
  if (!speaker) {
    speaker = new Speaker(app);
    speakers.set(app, speaker);
  }
  return speaker;
}
