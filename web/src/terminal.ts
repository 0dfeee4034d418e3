// One seat's terminal on screen: xterm.js fed the view, then the kind-4 chunks after its seq.

import { FitAddon } from "@xterm/addon-fit";
import { WebglAddon } from "@xterm/addon-webgl";
import { Terminal, type ITheme } from "@xterm/xterm";

import type { App, Surface } from "./app";
import { keySequence, StickyModifiers, type ExtraKey } from "./keys";
import { DiffInput } from "./textinput";
import type { ServerTerminalView } from "./gen/protocol";
import { sameSeat, terminalInput, verbs, type BinaryFrame, type Seat, type ServerMessage } from "./wire";

const FONT_KEY = "forge.fontSize";
const DEFAULT_FONT = 'ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace';
const MIN_FONT = 8;
const MAX_FONT = 32;
/**
 * Each time the page has parsed this many more bytes it tells the server how far it got
 * (`terminal_ack`): a browser reads its socket as fast as bytes arrive and the sockets' buffers
 * hold megabytes, so only the page knows how far behind it is. The controller's acks pace the
 * shell (the server stops reading the PTY while ~512 KiB are sent and not parsed), so what the
 * person types during a flood shows behind at most that much.
 */
export const ACK_EVERY = 64 * 1024;
/**
 * Bytes handed to xterm.js and not parsed yet past which a watcher's page pauses (a watcher
 * never slows the shell) and takes a fresh view once it has caught up.
 */
export const PAUSE_ABOVE = 512 * 1024;
const VERBS = verbs(
  "terminal_view",
  "terminal_resize",
  "terminal_pause",
  "terminal_ack",
  "terminal_control",
  "terminal_close",
  "terminal_detach",
);

export const THEMES: Record<string, ITheme> = {
  dark: { background: "#11151c", foreground: "#d8dee9", cursor: "#f0c674", selectionBackground: "#3b4252" },
  light: {
    background: "#fbfbf8",
    foreground: "#24292f",
    cursor: "#0969da",
    selectionBackground: "#c8d7f0",
    black: "#24292f",
    white: "#6e7781",
    brightWhite: "#8c959f",
  },
};

export type Phase = "opening" | "live" | "gone";

export interface TerminalTestHook {
  term: Terminal;
  surface: TerminalSurface;
}

declare global {
  interface Window {
    forgeTerminal?: TerminalTestHook;
  }
}

export class TerminalSurface implements Surface {
  readonly term: Terminal;
  private readonly fit = new FitAddon();
  readonly sticky = new StickyModifiers();
  private readonly diff = new DiffInput();
  id: number | null = null;
  phase: Phase = "opening";
  why: string | null = null;
  viewer: number | null = null;
  controller: number | null = null;
  viewers = 0;
  private seq = 0;
  private syncing = true;
  /** A view is written and not parsed yet: it must be parsed at the size it was drawn at. */
  private drawingView = false;
  private wantControl = true;
  private sentSize: [number, number] | null = null;
  private remoteSize: [number, number] = [80, 24];
  private paused = false;
  /** Bytes written to xterm.js and not parsed yet. */
  private unparsed = 0;
  /** Bytes parsed since the last `terminal_ack`. */
  private parsedSinceAck = 0;
  /** A watcher that fell behind: paused until all it was handed is parsed, then a fresh view. */
  private catchingUp = false;
  private keyAt: number | null = null;
  private paintFrom: number | null = null;
  private readonly cleanups: (() => void)[] = [];
  private readonly observer: ResizeObserver;
  onChange: () => void = () => undefined;

  constructor(
    private readonly app: App,
    readonly seat: Seat,
    private readonly host: HTMLElement,
  ) {
    const look = app.look;
    this.term = new Terminal({
      fontSize: fontSize(),
      fontFamily: look.font ?? DEFAULT_FONT,
      theme: THEMES[look.theme ?? "dark"] ?? THEMES.dark,
      scrollback: 5000,
      allowProposedApi: true,
      cursorBlink: false,
    });
    this.term.loadAddon(this.fit);
    this.term.open(host);
    // WebGL where it is available, on desktops: in Chromium's phone emulation at a device pixel
    // ratio of 2 the WebGL renderer drew every glyph at twice its cell (only half the columns
    // showed), while the DOM renderer draws a phone-sized grid correctly at any ratio.
    if (navigator.maxTouchPoints === 0) {
      try {
        const webgl = new WebglAddon();
        webgl.onContextLoss(() => webgl.dispose());
        this.term.loadAddon(webgl);
      } catch {
        // No WebGL here: xterm's DOM renderer draws instead.
      }
    }
    this.term.onData((data) => {
      this.type(this.sticky.apply(data));
    });
    this.term.onBinary((data) => {
      this.type(data);
    });
    this.term.onRender(() => {
      if (this.paintFrom !== null) {
        this.app.perf.add("keystroke_paint", performance.now() - this.paintFrom);
        this.paintFrom = null;
      }
    });
    this.observer = new ResizeObserver(() => {
      this.layout();
    });
    this.observer.observe(host);
    const visibility = () => {
      this.visibility();
    };
    document.addEventListener("visibilitychange", visibility);
    this.cleanups.push(() => {
      document.removeEventListener("visibilitychange", visibility);
    });
    window.forgeTerminal = { term: this.term, surface: this };
    app.addSurface(this);
  }

  /** The look's theme and font (null: the built-in), re-applied when a reload changes them. */
  applyLook(theme: string | null, font: string | null): void {
    this.term.options.theme = THEMES[theme ?? "dark"] ?? THEMES.dark;
    this.term.options.fontFamily = font ?? DEFAULT_FONT;
    this.layout();
  }

  dispose(): void {
    this.app.removeSurface(this);
    if (this.id !== null) this.app.send({ kind: "terminal_detach" });
    this.observer.disconnect();
    for (const cleanup of this.cleanups) cleanup();
    this.term.dispose();
    if (window.forgeTerminal?.surface === this) delete window.forgeTerminal;
  }

  get controls(): boolean {
    return this.viewer !== null && this.controller === this.viewer;
  }

  get mayType(): boolean {
    return this.phase === "live" && (this.controller === null || this.controls);
  }

  // --- attaching -------------------------------------------------------------------------

  /** The link dropped and this page's view with it: nothing goes out as a viewer (the size the
   * reconnecting banner changed, an ack, a pause, a take) until `relink`'s view answers. */
  dropped(): void {
    this.wantControl = this.wantControl || this.controls;
    this.phase = "opening";
    this.syncing = true;
    this.sentSize = null;
    this.onChange();
  }

  relink(bootChanged: boolean): void {
    // After a supervisor restart ids start from 1 again: the seat's terminal is opened anew.
    const id = bootChanged ? null : this.id;
    this.wantControl = this.wantControl || this.controls;
    this.open(id);
  }

  /** Attach to the seat's terminal (`id` null: open it, creating a shell on first use). */
  open(id: number | null): void {
    this.phase = "opening";
    this.syncing = true;
    this.sentSize = null;
    this.paused = false;
    this.catchingUp = false;
    this.onChange();
    this.app.socket
      .request(id === null ? { kind: "terminal_view", seat: this.seat } : { kind: "terminal_view", seat: this.seat, id })
      .then((body) => {
        const answer = body as { ok: boolean; id?: number; why?: string };
        if (answer.ok && typeof answer.id === "number") {
          this.id = answer.id;
        } else if (id !== null) {
          this.open(null); // the terminal we held is gone: the seat's door opens a fresh one
        } else {
          this.gone(answer.why ?? "the terminal could not open");
        }
      })
      .catch(() => undefined); // the link dropped: relink repeats this
  }

  takeControl(take: boolean): void {
    this.wantControl = take;
    if (this.id === null || this.phase !== "live") return; // the view takes it if still wanted
    this.app.send({ kind: "terminal_control", seat: this.seat, id: this.id, take });
  }

  close(): void {
    if (this.id !== null) this.app.send({ kind: "terminal_close", seat: this.seat, id: this.id });
  }

  private gone(why: string): void {
    this.phase = "gone";
    this.why = why;
    this.onChange();
  }

  // --- frames ----------------------------------------------------------------------------

  message(message: ServerMessage): boolean {
    if (message.kind === "error" && VERBS.has(message.what)) {
      const seat = message.seat;
      if (seat && !sameSeat(seat, this.seat)) return false;
      if (message.what === "terminal_view" || message.what === "terminal_close") {
        this.id = null;
        this.gone(message.why);
      } else {
        this.app.notify(message.why);
      }
      return true;
    }
    if (message.kind !== "terminal_view" && message.kind !== "terminal_control") return false;
    if (!sameSeat(message.seat, this.seat)) return false;
    if (message.kind === "terminal_view") this.view(message);
    if (message.kind === "terminal_control" && message.id === this.id) {
      this.controller = message.controller;
      this.layout();
      this.onChange();
    }
    return true;
  }

  private view(message: ServerTerminalView): void {
    this.id = message.id;
    this.seq = message.seq;
    this.viewer = message.viewer;
    this.viewers = message.viewers;
    this.controller = message.controller;
    this.remoteSize = [message.cols, message.rows];
    this.term.reset();
    this.term.resize(...this.remoteSize);
    // xterm parses a write later: resized to this page's fit before then, the view (cursor moves
    // that paint rows without clearing them) landed on rows a narrower grid had wrapped, and
    // left their tails beside the prompt (a phone attaching after a desktop saw `#nupg`).
    this.drawingView = true;
    this.term.write(message.screen, () => {
      this.drawingView = false;
      this.layout();
    });
    this.syncing = false;
    this.phase = "live";
    this.why = null;
    // This page acks from its first view on, so a flood is paced from its first byte.
    this.parsedSinceAck = 0;
    this.app.send({ kind: "terminal_ack", seq: this.seq });
    if (this.controller === null && this.wantControl) this.takeControl(true);
    this.onChange();
  }

  binary(frame: BinaryFrame): void {
    if (frame.type !== "terminal" || frame.terminal !== this.id || this.syncing || this.paused) return;
    if (this.catchingUp) return; // a fresh view replaces what was on its way
    if (frame.seq <= this.seq) return;
    if (frame.seq !== this.seq + 1) {
      this.resync(); // a gap: frames were dropped for us; a fresh view continues the stream
      return;
    }
    this.seq = frame.seq;
    const keyAt = this.keyAt;
    this.keyAt = null;
    const size = frame.data.length;
    this.unparsed += size;
    this.term.write(frame.data, () => {
      if (keyAt !== null) this.paintFrom = keyAt;
      this.parsed(frame.terminal, frame.seq, size);
    });
    if (!this.controls && this.unparsed > PAUSE_ABOVE) {
      this.catchingUp = true;
      this.app.send({ kind: "terminal_pause", paused: true });
    }
  }

  private parsed(id: number, seq: number, size: number): void {
    this.unparsed -= size;
    this.parsedSinceAck += size;
    const current = id === this.id && this.phase === "live" && !this.syncing;
    if (current && !this.catchingUp && this.parsedSinceAck >= ACK_EVERY) {
      this.parsedSinceAck = 0;
      this.app.send({ kind: "terminal_ack", seq });
    }
    if (this.catchingUp && this.unparsed === 0) {
      this.catchingUp = false; // all parsed: the fresh view lands on a terminal at rest
      if (this.paused) return; // hidden meanwhile: the return asks for the view
      this.syncing = true;
      this.app.send({ kind: "terminal_pause", paused: false });
    }
  }

  private resync(): void {
    this.syncing = true;
    this.app.send({ kind: "terminal_pause", paused: true });
    this.app.send({ kind: "terminal_pause", paused: false });
  }

  /** A session update moved the terminal (its size, its state): keep a watcher's grid in step. */
  summaryChanged(cols: number, rows: number): void {
    this.remoteSize = [cols, rows];
    this.layout();
  }

  // --- input -----------------------------------------------------------------------------

  type(data: string): void {
    if (!data || this.id === null) return;
    if (!this.mayType) {
      this.app.notify("watching: take control to type");
      return;
    }
    this.keyAt ??= performance.now();
    this.app.socket.sendBinary(terminalInput(this.id, data));
  }

  extraKey(key: ExtraKey): void {
    this.type(this.sticky.apply(keySequence(key, this.term.modes.applicationCursorKeysMode)));
  }

  /** Text from the phone's own input element, sent as a diff (never twice, see textinput). */
  phoneInput(element: HTMLTextAreaElement, event: Event): void {
    if (event.type === "compositionstart") {
      this.diff.compositionStart();
      return;
    }
    const data =
      event.type === "compositionend" ? this.diff.compositionEnd(element.value) : this.diff.changed(element.value);
    if (data) this.type(this.sticky.apply(data));
    if (!this.diff.composing && (element.value.length > 64 || element.value.includes("\n"))) {
      element.value = "";
      this.diff.reset();
    }
    this.onChange();
  }

  phoneKey(element: HTMLTextAreaElement, event: KeyboardEvent): void {
    if (event.isComposing || this.diff.composing) return;
    const special: Record<string, ExtraKey> = {
      Escape: "Escape",
      Tab: "Tab",
      ArrowUp: "ArrowUp",
      ArrowDown: "ArrowDown",
      ArrowLeft: "ArrowLeft",
      ArrowRight: "ArrowRight",
    };
    const extra = special[event.key];
    if (extra) {
      event.preventDefault();
      this.extraKey(extra);
    } else if (event.key === "Enter") {
      event.preventDefault();
      this.type("\r");
      element.value = "";
      this.diff.reset();
    } else if (event.key === "Backspace" && element.value === "") {
      event.preventDefault();
      this.type("\x7f");
    } else if ((event.ctrlKey || event.altKey) && event.key.length === 1) {
      event.preventDefault();
      if (event.ctrlKey) this.sticky.ctrl = true;
      if (event.altKey) this.sticky.alt = true;
      this.type(this.sticky.apply(event.key));
    }
  }

  async paste(): Promise<void> {
    try {
      const text = await navigator.clipboard.readText();
      if (text) this.term.paste(text);
    } catch {
      this.app.notify("the browser did not hand over the clipboard (use the keyboard's paste)");
    }
  }

  /** The selection, or with none the rows on screen, to the clipboard (a phone cannot select). */
  async copy(): Promise<void> {
    const text = this.term.hasSelection() ? this.term.getSelection() : visibleText(this.term);
    try {
      await navigator.clipboard.writeText(text);
      this.app.notify(this.term.hasSelection() ? "copied the selection" : "copied the screen");
    } catch {
      this.app.notify("the browser did not take the clipboard (select and use the keyboard's copy)");
    }
  }

  scrollBy(lines: number): void {
    this.term.scrollLines(lines);
  }

  // --- size and visibility ---------------------------------------------------------------

  setFontSize(delta: number): void {
    const size = Math.max(MIN_FONT, Math.min(MAX_FONT, fontSize() + delta));
    localStorage.setItem(FONT_KEY, String(size));
    this.term.options.fontSize = size;
    this.layout();
  }

  /** The controller (or, with nobody holding it, any viewer) lays out from its fitted size;
   * a watcher draws the grid the terminal has. */
  layout(): void {
    if (!this.host.isConnected || this.drawingView) return;
    const watching = this.controller !== null && !this.controls;
    if (watching) {
      const [cols, rows] = this.remoteSize;
      if (this.term.cols !== cols || this.term.rows !== rows) this.term.resize(cols, rows);
      return;
    }
    const dims = this.fit.proposeDimensions();
    if (!dims || !Number.isFinite(dims.cols) || !Number.isFinite(dims.rows)) return;
    const cols = Math.max(2, Math.min(500, dims.cols));
    const rows = Math.max(1, Math.min(300, dims.rows));
    if (this.term.cols !== cols || this.term.rows !== rows) this.term.resize(cols, rows);
    if (this.id === null || this.phase !== "live") return;
    if (this.sentSize?.[0] === cols && this.sentSize[1] === rows) return;
    this.sentSize = [cols, rows];
    this.app.send({ kind: "terminal_resize", seat: this.seat, id: this.id, cols, rows });
  }

  private visibility(): void {
    if (this.id === null || this.phase !== "live") return;
    const hidden = document.visibilityState === "hidden";
    if (hidden === this.paused) return;
    this.paused = hidden;
    if (!hidden && this.catchingUp) return; // its catch-up asks for the fresh view
    if (!hidden) this.syncing = true; // the resume is answered with a fresh view
    this.app.send({ kind: "terminal_pause", paused: hidden });
  }
}

function fontSize(): number {
  const stored = Number(localStorage.getItem(FONT_KEY));
  return stored >= MIN_FONT && stored <= MAX_FONT ? stored : 14;
}

/** The rows in the viewport, trailing blanks trimmed. */
function visibleText(term: Terminal): string {
  const buffer = term.buffer.active;
  const rows: string[] = [];
  for (let y = buffer.viewportY; y < buffer.viewportY + term.rows; y++) {
    rows.push(buffer.getLine(y)?.translateToString(true) ?? "");
  }
  return rows.join("\n").trimEnd();
}
