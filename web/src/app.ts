// The page's state and its one socket: subjects held, the seat on screen, the surfaces attached.
//
// Views read this object and re-render on `changed`; surfaces (a terminal, a browser tab)
// register for the messages and frames they draw and are re-attached after a reconnect, in the
// protocol's order: re-subscribe, re-attach what is on screen, re-send `showing`.

import { PerfBatch } from "./perf";
import type { ServerUpdate } from "./gen/protocol";
import { ForgeSocket, type LinkState } from "./socket";
import {
  BUILT_IN_LOOK,
  lookOf,
  PROTOCOL_VERSION,
  sameSeat,
  seatKey,
  updateParts,
  type AgentRow,
  type BinaryFrame,
  type Greeting,
  type Home,
  type Look,
  type Seat,
  type ClientMessage,
  type ServerMessage,
  type Session,
  type SettingsDocument,
  type Subject,
} from "./wire";

export type Pane = "terminal" | "browser" | "processes" | "changes" | "docs";
export const PANES: Pane[] = ["terminal", "browser", "processes", "changes", "docs"];
export type Route =
  | { view: "home" }
  | { view: "settings" }
  | { view: "lab"; run: string | null }
  | { view: "seat"; seat: Seat; pane: Pane };

/** Something on screen that is attached on the socket: a terminal, a browser tab. */
export interface Surface {
  /** A JSON message; true when it was this surface's. */
  message(message: ServerMessage): boolean;
  binary(frame: BinaryFrame): void;
  /** The link is (again) up and home is read: attach, or re-attach what was attached. */
  relink(bootChanged: boolean): void;
  /** The link dropped: nothing is attached any more until `relink` (send nothing as a viewer). */
  dropped?(): void;
}

export interface Notice {
  id: number;
  text: string;
}

const FORMATS_KEY = "forge.formats";
/** A notice floats over the view this long, unless dismissed first. */
const NOTICE_MS = 8000;

export function parseRoute(hash: string): Route {
  const parts = hash.replace(/^#\/?/, "").split("/").map(decodeURIComponent);
  if (parts[0] === "settings") return { view: "settings" };
  if (parts[0] === "lab") return { view: "lab", run: parts[1] || null };
  if (parts[0] === "seat" && parts.length >= 4) {
    const [, org = "", project = "", label = "", pane = "terminal"] = parts;
    return {
      view: "seat",
      seat: { org, project, label },
      pane: PANES.includes(pane as Pane) ? (pane as Pane) : "terminal",
    };
  }
  return { view: "home" };
}

export function routeHash(route: Route): string {
  if (route.view === "settings") return "#/settings";
  if (route.view === "home") return "#/";
  if (route.view === "lab") return route.run ? `#/lab/${encodeURIComponent(route.run)}` : "#/lab";
  const { org, project, label } = route.seat;
  return `#/seat/${[org, project, label, route.pane].map(encodeURIComponent).join("/")}`;
}

export class App {
  link: LinkState = "connecting";
  linkWhy: string | null = null;
  greeting: Greeting | null = null;
  /** The build that served this page's bundle: the first greeting's. */
  pageBuild: string | null = null;
  settings: SettingsDocument | null = null;
  /** The greeting's theme, font and mark, then each settings push's (a reload changes them). */
  look: Look = BUILT_IN_LOOK;
  home: Home | null = null;
  session: Session | null = null;
  route: Route = parseRoute(location.hash);
  notices: Notice[] = [];
  lowLatency = localStorage.getItem(FORMATS_KEY) === "webp,jpeg";
  readonly socket: ForgeSocket;
  readonly perf: PerfBatch;
  private readonly listeners = new Set<() => void>();
  private readonly surfaces = new Set<Surface>();
  private heldSeat: Seat | null = null;
  private nextSeq: number | null = null;
  /** The held seat's subscribe was refused (not started yet); its start re-asks it. */
  private sessionWaiting = false;
  private bootId: string | null = null;
  private replaying = false;
  private droppedAt: number | null = null;
  private noticeIds = 1;

  constructor() {
    this.socket = new ForgeSocket({
      opened: (greeting, reconnect) => {
        this.opened(greeting, reconnect);
      },
      message: (message) => {
        this.message(message);
      },
      binary: (frame) => {
        for (const surface of this.surfaces) surface.binary(frame);
      },
      state: (state, why) => {
        this.link = state;
        this.linkWhy = why;
        if (state === "reconnecting") {
          this.droppedAt ??= performance.now();
          this.heldSeat = null;
          for (const surface of this.surfaces) surface.dropped?.();
        }
        this.changed();
      },
    });
    this.socket.formats = this.lowLatency ? ["webp", "jpeg"] : [];
    this.perf = new PerfBatch((records) => this.socket.send({ kind: "client_perf", records }));
    window.addEventListener("hashchange", () => {
      this.route = parseRoute(location.hash);
      this.routeChanged();
    });
  }

  start(): void {
    this.socket.start();
  }

  // --- views -----------------------------------------------------------------------------

  subscribe(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  changed(): void {
    for (const listener of this.listeners) listener();
  }

  go(route: Route): void {
    location.hash = routeHash(route);
  }

  notify(text: string): void {
    const notice = { id: this.noticeIds++, text };
    this.notices = [...this.notices.slice(-4), notice];
    window.setTimeout(() => {
      this.dismiss(notice.id);
    }, NOTICE_MS);
    this.changed();
  }

  dismiss(id: number): void {
    this.notices = this.notices.filter((notice) => notice.id !== id);
    this.changed();
  }

  get buildChanged(): boolean {
    return !!this.greeting && !!this.pageBuild && this.greeting.forge_version !== this.pageBuild;
  }

  get protocolSkew(): boolean {
    return !!this.greeting && this.greeting.version !== PROTOCOL_VERSION;
  }

  setLowLatency(on: boolean): void {
    this.lowLatency = on;
    localStorage.setItem(FORMATS_KEY, on ? "webp,jpeg" : "webp");
    this.socket.formats = on ? ["webp", "jpeg"] : [];
    this.socket.redialNow();
  }

  agent(seat: Seat): AgentRow | undefined {
    return this.home?.agents.find((row) => sameSeat(row.slot, seat));
  }

  unseen(seat: Seat): boolean {
    return !!this.home?.unseen.some((other) => sameSeat(other, seat));
  }

  // --- surfaces --------------------------------------------------------------------------

  addSurface(surface: Surface): void {
    this.surfaces.add(surface);
    if (this.link === "open" && !this.replaying) surface.relink(false);
  }

  removeSurface(surface: Surface): void {
    this.surfaces.delete(surface);
  }

  send(message: ClientMessage): boolean {
    return this.socket.send(message);
  }

  // --- the link --------------------------------------------------------------------------

  private opened(greeting: Greeting, reconnect: boolean): void {
    this.greeting = greeting;
    const { mark, theme, font } = greeting.settings;
    this.look = { mark, theme, font };
    this.pageBuild ??= greeting.forge_version;
    if (reconnect && this.droppedAt !== null) {
      this.perf.add("reconnect", performance.now() - this.droppedAt);
    }
    this.droppedAt = null;
    this.replaying = true;
    this.subscribe_("home");
    this.changed();
  }

  /** After home's snapshot on a new link: the seat on screen, its surfaces, `showing`. */
  private replay(bootChanged: boolean): void {
    this.replaying = false;
    if (bootChanged) {
      // What was on screen is drawn afresh: say why it starts over rather than let it look kept.
      this.notify("forge supervise restarted: its shells and browser tabs ended with it; these are new ones.");
    }
    this.holdSeat();
    for (const surface of this.surfaces) surface.relink(bootChanged);
    this.perf.flush();
  }

  private routeChanged(): void {
    this.holdSeat();
    this.changed();
  }

  /** Hold the session of the seat on screen (and only it), and say it is showing. */
  private holdSeat(): void {
    const seat = this.route.view === "seat" ? this.route.seat : null;
    if (this.link !== "open" || this.replaying) return;
    if (sameSeat(seat, this.heldSeat)) return;
    if (this.heldSeat) this.send({ kind: "unsubscribe", what: { session: this.heldSeat } });
    this.heldSeat = seat;
    this.session = null;
    this.sessionWaiting = false;
    this.nextSeq = null;
    if (seat) this.subscribe_({ session: seat });
    this.send({ kind: "showing", seat });
  }

  private subscribe_(what: Subject): void {
    this.send({ kind: "subscribe", what });
  }

  private message(message: ServerMessage): void {
    for (const surface of this.surfaces) {
      if (surface.message(message)) return;
    }
    switch (message.kind) {
      case "settings":
        this.settings = message.document as unknown as SettingsDocument;
        this.look = lookOf(this.settings) ?? this.look;
        break;
      case "snapshot":
        this.snapshot(message.subject, message.data);
        break;
      case "update":
        this.update(message);
        break;
      case "error":
        if (message.what === "subscribe" && sameSeat(message.seat, this.heldSeat)) {
          this.sessionWaiting = true; // not started yet: held once home says it started
          return;
        }
        this.notify(`${message.what}: ${message.why}`);
        return;
      default:
        return;
    }
    this.changed();
  }

  private snapshot(subject: Subject, data: unknown): void {
    if (subject === "home") {
      const home = data as Home;
      const bootChanged = this.bootId !== null && this.bootId !== home.boot_id;
      this.home = home;
      this.bootId = home.boot_id;
      if (this.replaying) this.replay(bootChanged);
      return;
    }
    if (typeof subject === "object" && sameSeat(subject.session, this.heldSeat)) {
      this.session = data as Session;
      this.nextSeq = this.session.header.seq;
    }
  }

  private update(message: ServerUpdate): void {
    const [variant, body] = updateParts(message.update);
    const key = body.key as Seat | undefined;
    if (key && typeof message.seq === "number" && sameSeat(key, this.heldSeat)) {
      if (this.nextSeq !== null && message.seq > this.nextSeq) {
        this.refreshSession();
        return;
      }
      this.nextSeq = message.seq + 1;
    }
    const home = this.home;
    switch (variant) {
      case "seat_changed": {
        if (!home || !key) break;
        const row = body.row as AgentRow;
        const agents = home.agents.filter((other) => !sameSeat(other.slot, key));
        this.home = { ...home, agents: [...agents, row] };
        if (this.sessionWaiting && sameSeat(key, this.heldSeat)) {
          this.sessionWaiting = false;
          this.subscribe_({ session: key });
        }
        break;
      }
      case "workers_changed":
        if (home) this.home = { ...home, workers: body.workers as Home["workers"] };
        break;
      case "fatal_error":
        if (home) this.home = { ...home, fatal_error: body.error as Home["fatal_error"] };
        break;
      case "service_status_changed":
        if (home) this.home = { ...home, service_status: body.status as Home["service_status"] };
        break;
      case "terminal_changed":
        if (this.session && key && sameSeat(key, this.session.slot)) {
          this.session = { ...this.session, terminal: body.terminal as Session["terminal"] };
        }
        break;
      case "work_changed": {
        const work = body.work as Session["work"];
        if (this.session && key && sameSeat(key, this.session.slot)) {
          this.session = { ...this.session, work, git: body.git as Session["git"] };
        }
        if (home && key) {
          const agents = home.agents.map((row) => (sameSeat(row.slot, key) ? { ...row, work: work ?? null } : row));
          this.home = { ...home, agents };
        }
        break;
      }
      case "processes_changed":
        if (this.session && key && sameSeat(key, this.session.slot)) {
          this.session = { ...this.session, processes: body.processes as Session["processes"] };
        }
        break;
      default:
        break;
    }
  }

  /** Read the held seat whole again (a second hold, then let one go): after a seq gap, or for
   * what is never pushed (its diff). */
  refreshSession(): void {
    const seat = this.heldSeat;
    if (!seat) return;
    this.nextSeq = null;
    this.subscribe_({ session: seat });
    this.send({ kind: "unsubscribe", what: { session: seat } });
  }
}

export function seatTitle(seat: Seat): string {
  return seatKey(seat);
}
