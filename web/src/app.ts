// The page's state and its one socket: subjects held, the seat on screen, the surfaces attached.
//
// Views read this object and re-render on `changed`; surfaces (a terminal, a browser tab)
// register for the messages and frames they draw and are re-attached after a reconnect, in the
// protocol's order: re-subscribe, re-attach what is on screen, re-send `showing`.

import { PerfBatch } from "./perf";
import { agentFromSnapshot, foldAgent, isAgentSession, waitingAsks, withOlder, type AgentState, type Turn } from "./agentwire";
import type { ServerPage, ServerSeatFrames, ServerUpdate } from "./gen/protocol";
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

export type Pane = "agent" | "terminal" | "browser" | "processes" | "changes" | "docs";
export const PANES: Pane[] = ["agent", "terminal", "browser", "processes", "changes", "docs"];
export type Route =
  | { view: "home" }
  | { view: "settings" }
  | { view: "lab"; run: string | null }
  /** `pane` null: the seat's first view (its agent when it has one, else its terminal). */
  | { view: "seat"; seat: Seat; pane: Pane | null };

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
    const [, org = "", project = "", label = "", pane = ""] = parts;
    return {
      view: "seat",
      seat: { org, project, label },
      pane: PANES.includes(pane as Pane) ? (pane as Pane) : null,
    };
  }
  return { view: "home" };
}

export function routeHash(route: Route): string {
  if (route.view === "settings") return "#/settings";
  if (route.view === "home") return "#/";
  if (route.view === "lab") return route.run ? `#/lab/${encodeURIComponent(route.run)}` : "#/lab";
  const { org, project, label } = route.seat;
  const parts = route.pane ? [org, project, label, route.pane] : [org, project, label];
  return `#/seat/${parts.map(encodeURIComponent).join("/")}`;
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
  /** The held seat's agent (null for a seat without one), folded from its updates. */
  seatAgent: AgentState | null = null;
  /** A `more` is out for the held seat's older turns. */
  agentMoreAsked = false;
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
  /** The held seat's epoch and next seq the agent state has folded up to: a fresh snapshot of the
   * same epoch after a drop keeps the state and repairs the gap with `seat_range`. */
  private agentEpoch: string | null = null;
  private agentNext: number | null = null;
  /** Live updates held back while a `seat_range` repair is out (applied after its frames). */
  private agentHeld: { seq: number; span: number; update: ServerUpdate["update"] }[] | null = null;
  /** The last number the `seat_range` repair out asked for (its frames end there). */
  private agentRepairTo = 0;
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
    if (!sameSeat(seat, this.session?.slot ?? null)) this.forgetAgent();
    this.heldSeat = seat;
    this.session = null;
    this.sessionWaiting = false;
    this.nextSeq = null;
    if (seat) this.subscribe_({ session: seat });
    this.send({ kind: "showing", seat });
  }

  /** A seat is held as an answering client: this page puts an agent's asks in front of a person
   * who answers them (a connection that did not say so has its answers refused). */
  private subscribe_(what: Subject): void {
    this.send(typeof what === "object" ? { kind: "subscribe", what, answering: true } : { kind: "subscribe", what });
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
      case "page":
        this.page(message);
        break;
      case "seat_frames":
        this.seatFrames(message);
        break;
      case "error":
        if (message.what === "subscribe" && sameSeat(message.seat, this.heldSeat)) {
          this.sessionWaiting = true; // not started yet: held once home says it started
          return;
        }
        if (message.what === "seat_range" && this.agentHeld) {
          this.agentGapUnrepaired();
          break;
        }
        if (message.what === "more") this.agentMoreAsked = false;
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
      this.homeChanged();
      this.bootId = home.boot_id;
      if (this.replaying) this.replay(bootChanged);
      return;
    }
    if (typeof subject === "object" && sameSeat(subject.session, this.heldSeat)) {
      this.session = data as Session;
      this.nextSeq = this.session.header.seq;
      this.agentSnapshot(data as Record<string, unknown>);
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
      // A frame of folded token appends stands for `span` numbers.
      const span = Math.max(1, message.span);
      this.nextSeq = message.seq + span;
      this.agentUpdate(message.seq, span, message.update);
    }
    const home = this.home;
    switch (variant) {
      case "seat_changed": {
        if (!home || !key) break;
        const row = body.row as AgentRow;
        const agents = home.agents.filter((other) => !sameSeat(other.slot, key));
        this.home = { ...home, agents: [...agents, row] };
        this.homeChanged();
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

  // --- the held seat's agent --------------------------------------------------------------

  private forgetAgent(): void {
    this.seatAgent = null;
    this.agentEpoch = null;
    this.agentNext = null;
    this.agentHeld = null;
    this.agentMoreAsked = false;
  }

  /** A session snapshot of the held seat: the agent's state from it, unless it is a re-read of
   * the epoch already folded (after a drop or a gap), whose missing frames `seat_range` reads. */
  private agentSnapshot(data: Record<string, unknown>): void {
    const header = data.header as { session_id: string; seq: number };
    if (!isAgentSession(data)) {
      this.forgetAgent();
      return;
    }
    const held = this.seatAgent && this.agentEpoch === header.session_id && this.agentNext !== null;
    if (held && this.agentNext === header.seq) return; // nothing was missed: keep what streamed
    if (held && this.agentNext !== null && this.agentNext < header.seq && this.heldSeat) {
      this.agentHeld = [];
      this.agentRepairTo = header.seq - 1;
      this.send({
        kind: "seat_range",
        slot: this.heldSeat,
        epoch: header.session_id,
        from: this.agentNext,
        to: header.seq - 1,
      });
      return;
    }
    this.seatAgent = agentFromSnapshot(data);
    this.agentEpoch = header.session_id;
    this.agentNext = header.seq;
  }

  private agentUpdate(seq: number, span: number, update: ServerUpdate["update"]): void {
    if (!this.seatAgent && updateParts(update)[0] === "agent_header") {
      this.refreshSession(); // an agent was started on the seat held: read it as an agent seat
      return;
    }
    if (!this.seatAgent || this.agentNext === null) return;
    if (this.agentHeld) {
      this.agentHeld.push({ seq, span, update });
      return;
    }
    this.agentApply(seq, span, update);
  }

  /** The next numbered frame folded in: an older seq was folded already, and a newer one waits
   * for the repair its gap started (the frames between come from `seat_range`). */
  private agentApply(seq: number, span: number, update: ServerUpdate["update"]): void {
    if (!this.seatAgent || this.agentNext === null || seq !== this.agentNext) return;
    const [variant, body] = updateParts(update);
    this.seatAgent = foldAgent(this.seatAgent, variant, body);
    this.agentNext = seq + span;
  }

  private seatFrames(message: ServerSeatFrames): void {
    if (!this.agentHeld || !sameSeat(message.slot, this.heldSeat) || message.epoch !== this.agentEpoch) return;
    const held = this.agentHeld;
    this.agentHeld = null;
    // A repaired frame carries no span (S23), so the range's own frames are taken in order and
    // the next number is the one after the range asked for; the held live frames follow.
    for (const frame of message.frames) {
      if (this.agentNext !== null && frame.seq >= this.agentNext) {
        this.agentNext = frame.seq;
        this.agentApply(frame.seq, 1, frame.update);
      }
    }
    this.agentNext = this.agentRepairTo + 1;
    for (const frame of held) this.agentApply(frame.seq, frame.span, frame.update);
  }

  /** The window no longer holds the frames missed: start over from a fresh snapshot. */
  private agentGapUnrepaired(): void {
    this.forgetAgent();
    this.refreshSession();
  }

  /** Ask for the turns above those held (`more`), once at a time. */
  moreTurns(): void {
    const seat = this.heldSeat;
    if (!seat || !this.seatAgent || this.seatAgent.cursor === null || this.agentMoreAsked) return;
    this.agentMoreAsked = true;
    this.send({ kind: "more", conversation: seat, before: this.seatAgent.cursor, turns: 20 });
    this.changed();
  }

  private page(message: ServerPage): void {
    if (!sameSeat(message.conversation, this.heldSeat) || !this.seatAgent) return;
    this.agentMoreAsked = false;
    this.seatAgent = withOlder(this.seatAgent, message.turns as Turn[], message.cursor);
  }

  /** Send one of the agent seat's commands (`prompt`, `answer`, `cancel`...) for `seat`. */
  command(name: string, fields: Record<string, unknown>): boolean {
    return this.send({ kind: "command", command: { [name]: fields } });
  }

  /** How many asks wait on every seat (home's rows): the tab's title counts them. */
  get waitingAsks(): number {
    return waitingAsks(this.home?.agents ?? []);
  }

  /** Home moved: the title's count, and a system notification for a seat that began to wait. */
  private homeChanged(): void {
    const count = this.waitingAsks;
    document.title = count > 0 ? `(${count}) forge` : "forge";
    this.onHome?.();
  }

  /** Set by the notifier: called after each change to home. */
  onHome: (() => void) | null = null;

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
