// The viewed tab's sound: kind-2 frames played through the `forge-player` AudioWorklet (a 60 ms
// jitter buffer, bounded at 200 ms: when behind, the newest sound wins), and a speaker toggle
// per tab that sends `browser_audio{on}`.
//
// The server's switch is the connection's; the page keeps one per tab (on unless turned off)
// and sends the viewed tab's whenever the view moves, so each tab keeps its own.

import type { App, Surface } from "./app";
import type { BrowserSurface } from "./browser";
import type { PlayerReport } from "./worklet";
import type { AudioFrame, BinaryFrame } from "./wire";

export interface SoundTestHook {
  on: boolean;
  /** Frames of the viewed tab received, and those received after an off was answered. */
  framesIn: number;
  framesAfterOff: number;
  offAnswered: boolean;
  samplesPlayed: number;
  level: number;
  maxLevel: number;
  buffered: number;
  dropped: number;
  underruns: number;
  state: string;
}

declare global {
  interface Window {
    forgeSound?: SoundTestHook;
  }
}

const OFF_KEY = "forge.tabSoundOff";

/** Tabs whose sound the person turned off, kept across reloads ("<profile>:<tab>"). */
function offTabs(): Set<string> {
  try {
    return new Set(JSON.parse(localStorage.getItem(OFF_KEY) ?? "[]") as string[]);
  } catch {
    return new Set();
  }
}

class Player {
  private context: AudioContext | null = null;
  private node: AudioWorkletNode | null = null;
  private loading = false;

  constructor(private readonly report: (report: PlayerReport | null, state: string) => void) {}

  feed(frame: AudioFrame): void {
    const context = this.context;
    if (context?.sampleRate !== frame.rate) {
      this.start(frame.rate);
      return; // the frames that arrive while the worklet loads are not played
    }
    if (context.state === "suspended") void context.resume();
    this.node?.port.postMessage(frame.samples, [frame.samples.buffer]);
  }

  clear(): void {
    this.node?.port.postMessage("clear");
  }

  /** The page's first gesture may let a context the browser held back start. */
  resume(): void {
    if (this.context?.state === "suspended") void this.context.resume();
  }

  private start(rate: number): void {
    if (this.loading) return;
    this.close();
    this.loading = true;
    const context = new AudioContext({ sampleRate: rate, latencyHint: "interactive" });
    this.context = context;
    context.onstatechange = () => this.report(null, context.state);
    void context.audioWorklet
      .addModule(FORGE_WORKLET_URL)
      .then(() => {
        if (this.context !== context) return;
        const node = new AudioWorkletNode(context, "forge-player", { outputChannelCount: [2] });
        node.port.onmessage = (event: MessageEvent) => this.report(event.data as PlayerReport, context.state);
        node.connect(context.destination);
        this.node = node;
      })
      .catch(() => this.report(null, "failed"))
      .finally(() => {
        this.loading = false;
      });
  }

  close(): void {
    this.node?.disconnect();
    this.node = null;
    void this.context?.close();
    this.context = null;
  }
}

export class TabSound implements Surface {
  private readonly off = offTabs();
  private viewed: string | null = null;
  /** The off for the viewed tab was answered: any frame after it is the server's mistake. */
  private offAnswered = false;
  private readonly player: Player;
  private readonly hook: SoundTestHook = {
    on: true,
    framesIn: 0,
    framesAfterOff: 0,
    offAnswered: false,
    samplesPlayed: 0,
    level: 0,
    maxLevel: 0,
    buffered: 0,
    dropped: 0,
    underruns: 0,
    state: "idle",
  };
  private readonly gesture = () => this.player.resume();
  onChange: () => void = () => undefined;

  constructor(
    private readonly app: App,
    private readonly browser: BrowserSurface,
  ) {
    this.player = new Player((report, state) => {
      this.reported(report, state);
    });
    window.forgeSound = this.hook;
    document.addEventListener("pointerdown", this.gesture);
    document.addEventListener("keydown", this.gesture);
    app.addSurface(this);
  }

  dispose(): void {
    this.app.removeSurface(this);
    document.removeEventListener("pointerdown", this.gesture);
    document.removeEventListener("keydown", this.gesture);
    this.player.close();
    if (window.forgeSound === this.hook) delete window.forgeSound;
  }

  get on(): boolean {
    return this.viewed === null || !this.off.has(this.viewed);
  }

  /** Why the viewed profile's sound cannot reach this page (null: it can). */
  get why(): string | null {
    return this.browser.tabs?.audio_off ?? null;
  }

  /** The browser pane's view moved: the server's switch follows the new tab's. */
  follow(): void {
    const { profileId, tab } = this.browser;
    const viewed = profileId === null || tab === null ? null : `${profileId}:${tab}`;
    if (viewed === this.viewed) return;
    this.viewed = viewed;
    this.player.clear();
    this.tell();
  }

  /** The tab's speaker toggle, pressed (a gesture: the player may start now). */
  toggle(): void {
    if (this.viewed === null) return;
    if (this.on) this.off.add(this.viewed);
    else this.off.delete(this.viewed);
    localStorage.setItem(OFF_KEY, JSON.stringify([...this.off]));
    if (!this.on) this.player.clear();
    this.player.resume();
    this.tell();
  }

  private tell(): void {
    const on = this.on;
    this.offAnswered = false;
    this.hook.offAnswered = false;
    this.hook.on = on;
    this.onChange();
    this.app.socket
      .request({ kind: "browser_audio", on })
      .then(() => {
        if (this.on !== on) return;
        this.offAnswered = !on;
        this.hook.offAnswered = !on;
      })
      .catch(() => undefined); // the link dropped: relink says it again
  }

  // --- the socket ------------------------------------------------------------------------

  message(): boolean {
    return false;
  }

  binary(frame: BinaryFrame): void {
    if (frame.type !== "audio") return;
    if (frame.profile !== this.browser.profileId || frame.tab !== this.browser.tab) return;
    this.hook.framesIn += 1;
    if (this.offAnswered) this.hook.framesAfterOff += 1;
    if (this.on) this.player.feed(frame);
  }

  /** A new link hears by default: a tab turned off says so again. */
  relink(): void {
    if (!this.on) this.tell();
  }

  private reported(report: PlayerReport | null, state: string): void {
    this.hook.state = state;
    if (report) {
      Object.assign(this.hook, {
        samplesPlayed: report.played,
        level: report.level,
        maxLevel: Math.max(this.hook.maxLevel, report.level),
        buffered: report.buffered,
        dropped: report.dropped,
        underruns: report.underruns,
      });
    }
  }
}
