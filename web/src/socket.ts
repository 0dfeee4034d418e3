// The one WebSocket to /socket on this page's own origin: dial, probe, redial with backoff.

import { Backoff, Probe } from "./link";
import { parseBinary, type BinaryFrame, type Greeting, type ServerMessage } from "./wire";

export type LinkState = "connecting" | "open" | "reconnecting";

export interface SocketHandlers {
  /** The greeting arrived on a new link (frame 1): replay what the page holds. */
  opened(greeting: Greeting, reconnect: boolean): void;
  message(message: ServerMessage): void;
  binary(frame: BinaryFrame): void;
  state(state: LinkState, why: string | null): void;
}

const TOKEN_KEY = "forge.token";

/**
 * The connection token (issue #20), in one place: taken from the URL fragment `#token=...`
 * (then removed from the address bar), kept in localStorage, and sent on every connect by
 * `socketUrl`. A server that reads no token ignores the parameter.
 */
export function connectionToken(): string | null {
  const match = /(?:^#|&)token=([^&]+)/.exec(location.hash);
  if (match?.[1]) {
    localStorage.setItem(TOKEN_KEY, decodeURIComponent(match[1]));
    const rest = location.hash.replace(/(?:^#|&)token=[^&]+/, "").replace(/^&/, "");
    history.replaceState(null, "", `${location.pathname}${location.search}${rest ? `#${rest}` : ""}`);
  }
  return localStorage.getItem(TOKEN_KEY);
}

/** `ws(s)://<this origin>/socket`, with the declared frame formats and the token. */
export function socketUrl(formats: string[], token: string | null): string {
  const url = new URL("/socket", location.href);
  url.protocol = location.protocol === "https:" ? "wss:" : "ws:";
  if (formats.length) url.searchParams.set("formats", formats.join(","));
  if (token) url.searchParams.set("token", token);
  return url.toString();
}

interface Pending {
  resolve(body: unknown): void;
  reject(error: Error): void;
}

export class ForgeSocket {
  private ws: WebSocket | null = null;
  private readonly backoff = new Backoff();
  private probe = new Probe(0);
  private ticker: number | null = null;
  private redial: number | null = null;
  private opened = false;
  private replies = new Map<number, Pending>();
  private nextReply = 1;
  formats: string[] = [];
  state: LinkState = "connecting";

  constructor(private readonly handlers: SocketHandlers) {}

  start(): void {
    this.dial();
    this.ticker = window.setInterval(() => {
      this.tick();
    }, 1000);
  }

  /** Drop the link and dial again at once (a changed `formats` choice). */
  redialNow(): void {
    if (this.ws) {
      const ws = this.ws;
      ws.close(1000, "formats changed");
      this.lost(ws, "formats changed");
    }
  }

  send(message: Record<string, unknown>): boolean {
    if (this.ws?.readyState !== WebSocket.OPEN) return false;
    this.ws.send(JSON.stringify(message));
    return true;
  }

  sendBinary(frame: Uint8Array<ArrayBuffer>): boolean {
    if (this.ws?.readyState !== WebSocket.OPEN) return false;
    this.ws.send(frame);
    return true;
  }

  /** Send with a fresh `reply_to` and resolve with the reply's body (or the error's why). */
  request(message: Record<string, unknown>): Promise<unknown> {
    const id = this.nextReply++;
    return new Promise((resolve, reject) => {
      if (!this.send({ ...message, reply_to: id })) {
        reject(new Error("not connected"));
        return;
      }
      this.replies.set(id, { resolve, reject });
    });
  }

  private dial(): void {
    this.setState(this.opened ? "reconnecting" : "connecting", null);
    const ws = new WebSocket(socketUrl(this.formats, connectionToken()));
    ws.binaryType = "arraybuffer";
    this.ws = ws;
    let greeted = false;
    ws.onmessage = (event: MessageEvent) => {
      this.probe.heard(performance.now());
      if (typeof event.data !== "string") {
        this.handlers.binary(parseBinary(event.data as ArrayBuffer));
        return;
      }
      const message = JSON.parse(event.data) as ServerMessage;
      if (!greeted && message.kind === "greeting") {
        greeted = true;
        const reconnect = this.opened;
        this.opened = true;
        this.backoff.reset();
        this.setState("open", null);
        this.handlers.opened(message as unknown as Greeting, reconnect);
        return;
      }
      if (message.kind === "reply" && this.settle(message)) return;
      if (message.kind === "pong") return;
      this.handlers.message(message);
    };
    ws.onopen = () => {
      this.probe = new Probe(performance.now());
    };
    ws.onclose = (event: CloseEvent) => {
      this.lost(ws, event.reason || (event.code === 1006 ? "the link dropped" : `closed (${event.code})`));
    };
  }

  /** The link is gone (closed, or silent past the probe's deadline): redial after the backoff. */
  private lost(ws: WebSocket, why: string): void {
    if (this.ws !== ws) return;
    this.ws = null;
    ws.onmessage = null;
    ws.onclose = null;
    for (const pending of this.replies.values()) pending.reject(new Error("link lost"));
    this.replies.clear();
    this.setState("reconnecting", why);
    this.redial = window.setTimeout(() => {
      this.redial = null;
      this.dial();
    }, this.backoff.delay());
  }

  private settle(message: ServerMessage): boolean {
    const id = message.reply_to;
    if (typeof id !== "number") return false;
    const pending = this.replies.get(id);
    if (!pending) return false;
    this.replies.delete(id);
    pending.resolve(message.body);
    return true;
  }

  private tick(): void {
    if (this.ws?.readyState !== WebSocket.OPEN) return;
    const action = this.probe.tick(performance.now());
    if (action === "ping") this.send({ kind: "ping" });
    if (action === "dead") {
      const ws = this.ws;
      ws.close(4000, "no answer to a ping");
      this.lost(ws, "no answer to a ping");
    }
  }

  private setState(state: LinkState, why: string | null): void {
    this.state = state;
    this.handlers.state(state, why);
  }

  stop(): void {
    if (this.ticker !== null) window.clearInterval(this.ticker);
    if (this.redial !== null) window.clearTimeout(this.redial);
  }
}
