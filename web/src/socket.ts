// The one WebSocket to /socket on this page's own origin: dial, probe, redial with backoff.

import { Backoff, Probe } from "./link";
import type { ServerReply } from "./gen/protocol";
import { parseBinary, type BinaryFrame, type ClientMessage, type Greeting, type ServerMessage } from "./wire";

/** A message that is answered through `reply_to`, without it: `request` gives it a fresh one. */
export type Request = ClientMessage extends infer M
  ? M extends { reply_to?: unknown }
    ? Omit<M, "reply_to">
    : never
  : never;

export type LinkState = "connecting" | "open" | "reconnecting" | "unpaired";

export interface SocketHandlers {
  /** The greeting arrived on a new link (frame 1): replay what the page holds. */
  opened(greeting: Greeting, reconnect: boolean): void;
  message(message: ServerMessage): void;
  binary(frame: BinaryFrame): void;
  state(state: LinkState, why: string | null): void;
}

const TOKEN_KEY = "forge.token";
/** The subprotocol the server selects; the token rides beside it as `forge.token.<token>`. */
const SUBPROTOCOL = "forge.v1";
const TOKEN_PREFIX = "forge.token.";

/**
 * The connection token, in one place: taken from the URL fragment `#token=...` (then removed
 * from the address bar), kept in localStorage, and offered on every connect by `subprotocols`
 * (a page cannot set headers on a WebSocket, but it can offer subprotocols).
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

/** Keep a token pasted by the person (the same place the URL fragment's goes). */
export function rememberToken(token: string): void {
  localStorage.setItem(TOKEN_KEY, token.trim());
}

/** "Forget this device": the token goes; the next dial is refused until paired again. */
export function forgetToken(): void {
  localStorage.removeItem(TOKEN_KEY);
}

/** `ws(s)://<this origin>/socket`, with the declared frame formats. */
export function socketUrl(formats: string[]): string {
  const url = new URL("/socket", location.href);
  url.protocol = location.protocol === "https:" ? "wss:" : "ws:";
  if (formats.length) url.searchParams.set("formats", formats.join(","));
  return url.toString();
}

/** What the page offers on the upgrade: `forge.v1`, and the token when it holds one. */
export function subprotocols(token: string | null): string[] {
  return token ? [SUBPROTOCOL, TOKEN_PREFIX + token] : [SUBPROTOCOL];
}

/**
 * Whether the server refuses this token. A failed upgrade cannot say why (every failure is
 * close code 1006), so after a dial that never opened the page asks `/token-check`: 401 is a
 * refusal; anything else (204, 404 when the server asks no token, a network error) is not.
 */
async function tokenRefused(token: string | null): Promise<boolean> {
  try {
    const answer = await fetch("/token-check", {
      headers: token ? { Authorization: `Bearer ${token}` } : {},
      cache: "no-store",
    });
    return answer.status === 401;
  } catch {
    return false;
  }
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
  private greetings = 0;
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

  /** Links greeted so far: which one a message went on, for a surface told of a relink. */
  get links(): number {
    return this.greetings;
  }

  send(message: ClientMessage): boolean {
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
  request(message: Request): Promise<unknown> {
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
    const token = connectionToken();
    const ws = new WebSocket(socketUrl(this.formats), subprotocols(token));
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
        this.greetings += 1;
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
      const why = event.reason || (event.code === 1006 ? "the link dropped" : `closed (${event.code})`);
      if (greeted || event.code !== 1006) {
        this.lost(ws, why);
        return;
      }
      void tokenRefused(token).then((refused) => {
        if (refused) this.unpaired(ws);
        else this.lost(ws, why);
      });
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

  /** The server refused this device's token: no redial loop, the page asks to be paired. */
  private unpaired(ws: WebSocket): void {
    if (this.ws !== ws) return;
    this.ws = null;
    ws.onmessage = null;
    ws.onclose = null;
    this.setState("unpaired", "this device's token was refused");
  }

  /** Dial again now (after the person pasted a token). */
  retry(): void {
    if (this.ws || this.redial !== null) return;
    this.dial();
  }

  private settle(message: ServerReply): boolean {
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
