// The page's AudioWorklet processors, bundled on their own (build.mjs) and served from /assets/
// like the page's script, so the strict CSP (`script-src 'self'`) admits them as they are.
//
// `forge-capture`: the microphone's samples resampled to 16 kHz i16 and posted in 20 ms frames
// (the page sends each as a kind-0 frame). `forge-player`: a tab's kind-2 frames, posted in by
// the page, played through a jitter buffer; it posts its counters back about every 50 ms.

import { Downsampler, JitterBuffer } from "./pcm";

// The AudioWorkletGlobalScope's names (TypeScript's DOM library does not describe that scope).
declare class AudioWorkletProcessor {
  readonly port: MessagePort;
}
declare function registerProcessor(name: string, processor: new () => AudioWorkletProcessor): void;
declare const sampleRate: number;

const QUANTUM = 128;
const REPORT_EVERY = 20; // render quanta: ~53 ms at 48 kHz
const JITTER_MS = 60;
const LIMIT_MS = 200;

class CaptureProcessor extends AudioWorkletProcessor {
  private readonly down = new Downsampler(sampleRate);
  private readonly silence = new Float32Array(QUANTUM);
  private running = true;

  constructor() {
    super();
    this.port.onmessage = () => {
      this.running = false;
    };
  }

  process(inputs: Float32Array[][]): boolean {
    // An input with no channels (a track that ended) is silence: the take's clock goes on.
    const samples = inputs[0]?.[0] ?? this.silence;
    for (const frame of this.down.push(samples)) this.port.postMessage(frame, [frame.buffer]);
    return this.running;
  }
}

export interface PlayerReport {
  played: number;
  level: number;
  buffered: number;
  dropped: number;
  underruns: number;
}

class PlayerProcessor extends AudioWorkletProcessor {
  private readonly buffer = new JitterBuffer(
    2,
    Math.round((sampleRate * JITTER_MS) / 1000),
    Math.round((sampleRate * LIMIT_MS) / 1000),
  );
  private played = 0;
  private squares = 0;
  private counted = 0;
  private quanta = 0;

  constructor() {
    super();
    this.port.onmessage = (event: MessageEvent) => {
      if (event.data instanceof Int16Array) this.buffer.push(event.data);
      else this.buffer.clear();
    };
  }

  process(_inputs: Float32Array[][], outputs: Float32Array[][]): boolean {
    const out = outputs[0];
    if (!out) return true;
    const sound = this.buffer.pull(out);
    this.played += sound;
    const left = out[0];
    if (left) {
      for (let i = 0; i < sound; i++) this.squares += (left[i] ?? 0) ** 2;
      this.counted += sound;
    }
    this.quanta += 1;
    if (this.quanta >= REPORT_EVERY) this.report();
    return true;
  }

  private report(): void {
    const report: PlayerReport = {
      played: this.played,
      level: this.counted ? Math.sqrt(this.squares / this.counted) : 0,
      buffered: this.buffer.buffered,
      dropped: this.buffer.dropped,
      underruns: this.buffer.underruns,
    };
    this.port.postMessage(report);
    this.quanta = 0;
    this.squares = 0;
    this.counted = 0;
  }
}

registerProcessor("forge-capture", CaptureProcessor);
registerProcessor("forge-player", PlayerProcessor);
