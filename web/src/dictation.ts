// A dictation take from this page: the microphone's frames out as kind 0, the take's phases,
// levels and partial words in, and its final words landed in the box that began it.
//
// The server allows one take per connection, so the page holds one `Dictation` (per App); each
// box that can take words (the terminal, the browser pane's text box) names itself as the take's
// `surface` and hands over where its words go. A take is busy from the press until its
// `dictate_ended` or `dictate_failed` (or a refusal), so the messages of two takes never mix.
// The composer's take may be stopped with `send`: its words become the agent's next prompt
// (`dictate_ended.prompt`) instead of landing in the box; a refused send lands them in the box.

import type { App, Surface } from "./app";
import { Microphone } from "./mic";
import { DICTATION_FRAME, DICTATION_RATE } from "./pcm";
import { dictationFrame, sameSeat, verbs, type Seat, type ServerMessage } from "./wire";

const VERBS = verbs("dictate_stream", "dictate_stop", "dictate_cancel");
const FRAME_MS = (DICTATION_FRAME * 1000) / DICTATION_RATE;

/** idle; opening the microphone; live (capturing); ending (stopped or cancelled, words due). */
export type TakeState = "idle" | "opening" | "live" | "ending";

/** Where a take's words go: the box that began it. */
export type Land = (text: string) => void;

export interface DictationTestHook {
  state: TakeState;
  box: string | null;
  phase: string | null;
  phases: string[];
  level: number;
  maxLevel: number;
  sentMs: number;
  partial: string;
  landed: string | null;
  /** The uuid of the prompt the last take's words became (a take stopped with `send`). */
  prompt: string | null;
  why: string | null;
}

declare global {
  interface Window {
    forgeDictation?: DictationTestHook;
  }
}

export class Dictation implements Surface {
  state: TakeState = "idle";
  seat: Seat | null = null;
  /** The box that began the take (its `surface`), or the last one's while its words are shown. */
  box: string | null = null;
  phase: string | null = null;
  level = 0;
  partial = "";
  /** Why the last take ended without words (a refusal, the microphone, the server's failure). */
  why: string | null = null;
  private land: Land | null = null;
  /** Stopped with `send`, until the server answers it (a refusal falls back to a plain stop). */
  private sending = false;
  /** The plain stop sent after a refused `send`: the take's words are due whatever it answers. */
  private fellBack = false;
  private mic: Microphone | null = null;
  /** The link (`ForgeSocket.links`) the live take was sent on. */
  private sentOn = 0;
  private readonly listeners = new Set<() => void>();
  private readonly hook: DictationTestHook = {
    state: "idle",
    box: null,
    phase: null,
    phases: [],
    level: 0,
    maxLevel: 0,
    sentMs: 0,
    partial: "",
    landed: null,
    prompt: null,
    why: null,
  };

  constructor(private readonly app: App) {
    window.forgeDictation = this.hook;
    app.addSurface(this);
  }

  subscribe(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Press on a box's microphone: begin a take for it (the person is asked for the mic first). */
  async begin(seat: Seat, box: string, land: Land): Promise<void> {
    if (this.state !== "idle") return;
    this.seat = seat;
    this.box = box;
    this.land = land;
    this.why = null;
    this.partial = "";
    this.phase = null;
    this.level = 0;
    this.sending = false;
    this.fellBack = false;
    Object.assign(this.hook, { phases: [], sentMs: 0, maxLevel: 0, landed: null, prompt: null });
    this.set("opening");
    let mic: Microphone;
    try {
      mic = await Microphone.open((frame) => {
        this.frame(frame);
      });
    } catch (error) {
      this.end(error instanceof Error ? error.message : String(error));
      return;
    }
    if (!this.opening()) {
      mic.close(); // cancelled while the person was asked
      return;
    }
    // The take registers as this message is handled, so the frames behind it find it.
    if (!this.app.send({ kind: "dictate_stream", key: seat, surface: box })) {
      mic.close();
      this.end("not connected to the supervisor");
      return;
    }
    this.sentOn = this.app.socket.links;
    this.mic = mic;
    this.set("live");
  }

  /** Capture ended: the open segment is decoded and the words land, or with `send` (a take
   * begun on the composer) become the seat's agent's next prompt. */
  stop(send = false): void {
    if (this.state === "opening") {
      this.end(null);
      return;
    }
    if (this.state !== "live" || !this.seat) return;
    this.closeMic();
    this.sending = send;
    this.app.send(send ? { kind: "dictate_stop", key: this.seat, send } : { kind: "dictate_stop", key: this.seat });
    this.set("ending");
  }

  /** Drop the take: nothing lands. */
  cancel(): void {
    if (this.state === "opening") {
      this.end(null);
      return;
    }
    if (this.state !== "live" || !this.seat) return;
    this.closeMic();
    this.app.send({ kind: "dictate_cancel", key: this.seat });
    this.land = null;
    this.set("ending");
  }

  /** The box that began the take went away: a live take is dropped, due words find no box. */
  release(box: string): void {
    if (this.box !== box) return;
    if (this.state === "live" || this.state === "opening") this.cancel();
    else this.land = null;
  }

  /** Still opening (not cancelled while the person was asked for the microphone). */
  private opening(): boolean {
    return this.state === "opening";
  }

  // --- the socket ------------------------------------------------------------------------

  private frame(frame: Int16Array): void {
    if (this.state !== "live") return;
    if (this.app.socket.sendBinary(dictationFrame(frame))) this.hook.sentMs += FRAME_MS;
  }

  message(message: ServerMessage): boolean {
    if (message.kind === "error" && VERBS.has(message.what)) {
      if (this.state === "idle") return true;
      if (message.what === "dictate_stop" && this.state === "ending" && (this.sending || this.fellBack)) {
        this.refusedSend(message.why);
        return true;
      }
      this.end(message.why);
      return true;
    }
    switch (message.kind) {
      case "dictate_started":
      case "dictate_phase":
      case "dictate_level":
      case "dictate_partial":
      case "dictate_ended":
      case "dictate_failed":
        break;
      default:
        return false;
    }
    if (!sameSeat(message.key, this.seat)) return false;
    if (this.state === "idle") return true; // a take this page already let go of
    switch (message.kind) {
      case "dictate_phase":
        this.phase = message.phase;
        this.hook.phases.push(this.phase);
        break;
      case "dictate_level":
        this.level = message.rms;
        this.hook.maxLevel = Math.max(this.hook.maxLevel, this.level);
        break;
      case "dictate_partial":
        this.partial = message.text;
        break;
      case "dictate_ended":
        this.sending = false;
        this.fellBack = false;
        this.hook.prompt = message.prompt;
        if (message.prompt === null) this.landWords(message.text);
        else this.hook.landed = message.text;
        this.end(null);
        return true;
      case "dictate_failed":
        this.end(message.cancelled ? null : message.why);
        return true;
      default:
        break;
    }
    this.changed();
    return true;
  }

  binary(): void {
    // Nothing of a take arrives as a binary frame.
  }

  /** A new link: a take of the old one was dropped by the server with it; nothing will land.
   * A take not sent yet goes on the new link, and one sent on it (the person pressed while the
   * page was replaying its surfaces onto a link just greeted) is alive. */
  relink(): void {
    if (this.state === "idle" || this.state === "opening") return;
    if (this.sentOn === this.app.socket.links) return;
    this.closeMic();
    this.end("the link to the supervisor dropped mid-take; nothing landed");
  }

  /** A `send` refused: before the take stopped (it is still live: stop it plainly) or by the
   * agent after (the words follow with no prompt). Either way the words land in the box, and
   * an error for the plain stop means the take was already ending. */
  private refusedSend(why: string): void {
    if (this.sending && this.seat) {
      this.sending = false;
      this.fellBack = true;
      this.why = why;
      this.app.send({ kind: "dictate_stop", key: this.seat });
    }
    this.changed();
  }

  // --- state -----------------------------------------------------------------------------

  private landWords(text: string): void {
    this.hook.landed = text;
    if (!text) {
      this.why = "no words were heard";
      return;
    }
    if (this.land) this.land(text);
    else this.app.notify(`dictated after its box closed: ${text}`);
  }

  private closeMic(): void {
    this.mic?.close();
    this.mic = null;
  }

  private end(why: string | null): void {
    this.closeMic();
    this.land = null;
    this.level = 0;
    if (why !== null) this.why = why;
    this.set("idle");
  }

  private set(state: TakeState): void {
    this.state = state;
    this.changed();
  }

  private changed(): void {
    Object.assign(this.hook, {
      state: this.state,
      box: this.box,
      phase: this.phase,
      level: this.level,
      partial: this.partial,
      why: this.why,
    });
    for (const listener of this.listeners) listener();
  }
}

const services = new WeakMap<App, Dictation>();

/** The page's one dictation (one take per connection). */
export function dictationOf(app: App): Dictation {
  let service = services.get(app);
  if (!service) {
    service = new Dictation(app);
    services.set(app, service);
  }
  return service;
}
