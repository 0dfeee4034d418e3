// The socket's shapes as this page reads and writes them (docs/protocol.md); no I/O here. The
// messages themselves are generated from the server's registry (gen/protocol.ts).

import type { Diff, GitLayer } from "./gitwire";
import type { ClientMessage, ServerBrowserTabs, ServerGreeting, TerminalSummary, Work } from "./gen/protocol";

export type { ClientMessage, ServerMessage, TabRow, TerminalSummary, Work } from "./gen/protocol";

export const PROTOCOL_VERSION = 29;

export interface Seat {
  org: string;
  project: string;
  label: string;
}

export type Subject = "home" | "board" | "usage" | "dictate_models" | "extensions" | "lab" | { session: Seat };

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** The `[client]` keys: the page's look (null: the built-in). */
export interface Look {
  mark: string | null;
  theme: string | null;
  font: string | null;
}

export const BUILT_IN_LOOK: Look = { mark: null, theme: null, font: null };

/** Frame 1, its `settings` read as the look they carry. */
export interface Greeting extends Omit<ServerGreeting, "settings"> {
  settings: Look;
}

export interface ProjectRow {
  project: { name: string; org: string; path: string; sessions: number };
  work: Work | null;
}

export interface AgentRow {
  slot: Seat;
  label: string;
  lifecycle: string;
  has_background: boolean;
  /** An agent seat's oldest pending ask (and how many wait behind it), else null. */
  waiting?: { kind: "permission" | "question"; id: string; behind: number } | null;
  last_active_ms: number | null;
  failed: string | null;
  work: Work | null;
}

export interface WorkerRow {
  name: string;
  kind: string;
  pid: number | null;
  state: string;
  restarts: number;
  last_exit: number | null;
  last_reason: string | null;
}

export interface Home {
  projects: ProjectRow[];
  agents: AgentRow[];
  unseen: Seat[];
  forge_version: string;
  forge_version_short: string;
  boot_id: string;
  service_status: { state: string; reason: string | null } | null;
  fatal_error: { message: string; at_ms: number } | null;
  workers: WorkerRow[];
}

export interface ProcessRow {
  pid: number;
  ppid: number;
  name: string;
  cmdline: string[];
  cpu_percent: number;
  rss_bytes: number;
  started_ms: number;
}

export interface Session {
  slot: Seat;
  header: { session_id: string; seq: number };
  terminal: TerminalSummary | null;
  processes: ProcessRow[] | null;
  work?: Work | null;
  git?: GitLayer | null;
  diff?: Diff | null;
}

/** A profile's tabs, as `browser_tabs` pushes them (and its reply's `tabs`). */
export type Tabs = Omit<ServerBrowserTabs, "kind">;

/** How a key's control is drawn (null: read-only); `bounds` for a number key. */
export interface EditShape {
  kind: "string" | "number" | "bool" | "enum" | "list";
  allowed?: string[];
  required: boolean;
  group?: string;
  bounds?: { integer: boolean; min: number | null; max: number | null; expected: string };
}

export interface SettingsKey {
  path: string;
  leaf: string;
  group: string[];
  pattern: string;
  kind: string;
  value: Json;
  class: string;
  edit: EditShape | null;
  note?: string;
}

export interface SettingsDocument {
  source: string | null;
  fingerprint: string;
  areas: { id: string; name: string; note?: string; keys: SettingsKey[] }[];
}

/** The look a settings document holds (its `client` area), or null when it has none. */
export function lookOf(document: SettingsDocument): Look | null {
  const area = document.areas.find((each) => each.id === "client");
  if (!area) return null;
  const text = (leaf: keyof Look): string | null => {
    const value = area.keys.find((key) => key.path === `client.${leaf}`)?.value;
    return typeof value === "string" ? value : null;
  };
  return { mark: text("mark"), theme: text("theme"), font: text("font") };
}

/** Verbs by kind, each checked against what the page may send; an error's `what` is one of them. */
export function verbs(...kinds: ClientMessage["kind"][]): ReadonlySet<string> {
  return new Set<string>(kinds);
}

export function seatKey(seat: Seat): string {
  return `${seat.org}/${seat.project}/${seat.label}`;
}

export function sameSeat(a: Seat | null | undefined, b: Seat | null | undefined): boolean {
  return !!a && !!b && a.org === b.org && a.project === b.project && a.label === b.label;
}

/** An update's variant and body: `{"name": {...}}` or the bare name of a unit variant. */
export function updateParts(update: unknown): [string, Record<string, unknown>] {
  if (typeof update === "string") return [update, {}];
  if (update && typeof update === "object") {
    const entries = Object.entries(update as Record<string, unknown>);
    const first = entries[0];
    if (first) return [first[0], (first[1] ?? {}) as Record<string, unknown>];
  }
  return ["", {}];
}

// Binary frames: the first byte is the kind; integers are little-endian.

export const KIND_DICTATION = 0;
export const KIND_BROWSER_FRAME = 1;
export const KIND_BROWSER_AUDIO = 2;
export const KIND_TERMINAL_OUTPUT = 4;
export const KIND_TERMINAL_INPUT = 5;
export const BROWSER_HEADER_BYTES = 19;
export const AUDIO_HEADER_BYTES = 14;
export const TERMINAL_HEADER_BYTES = 7;
export const FORMAT_WEBP = 1;
export const FORMAT_JPEG = 2;

export interface TerminalChunk {
  type: "terminal";
  terminal: number;
  seq: number;
  data: Uint8Array<ArrayBuffer>;
}

export interface BrowserFrame {
  type: "browser";
  profile: number;
  tab: number;
  seq: number;
  width: number;
  height: number;
  format: number;
  key: boolean;
  pageWidth: number;
  pageHeight: number;
  image: Uint8Array<ArrayBuffer>;
}

/** Kind 2: 20 ms of a tab's sound, i16 interleaved (little-endian, as every browser's memory). */
export interface AudioFrame {
  type: "audio";
  profile: number;
  tab: number;
  seq: number;
  rate: number;
  channels: number;
  samples: Int16Array<ArrayBuffer>;
}

export type BinaryFrame = TerminalChunk | BrowserFrame | AudioFrame | { type: "other"; tag: number };

export function parseBinary(buffer: ArrayBuffer): BinaryFrame {
  const view = new DataView(buffer);
  const tag = buffer.byteLength > 0 ? view.getUint8(0) : -1;
  if (tag === KIND_TERMINAL_OUTPUT && buffer.byteLength >= TERMINAL_HEADER_BYTES) {
    return {
      type: "terminal",
      terminal: view.getUint16(1, true),
      seq: view.getUint32(3, true),
      data: new Uint8Array(buffer, TERMINAL_HEADER_BYTES),
    };
  }
  if (tag === KIND_BROWSER_FRAME && buffer.byteLength >= BROWSER_HEADER_BYTES) {
    return {
      type: "browser",
      profile: view.getUint16(1, true),
      tab: view.getUint16(3, true),
      seq: view.getUint32(5, true),
      width: view.getUint16(9, true),
      height: view.getUint16(11, true),
      format: view.getUint8(13),
      key: view.getUint8(14) === 1,
      pageWidth: view.getUint16(15, true),
      pageHeight: view.getUint16(17, true),
      image: new Uint8Array(buffer, BROWSER_HEADER_BYTES),
    };
  }
  if (tag === KIND_BROWSER_AUDIO && buffer.byteLength >= AUDIO_HEADER_BYTES) {
    return {
      type: "audio",
      profile: view.getUint16(1, true),
      tab: view.getUint16(3, true),
      seq: view.getUint32(5, true),
      rate: view.getUint32(9, true),
      channels: view.getUint8(13),
      samples: new Int16Array(buffer.slice(AUDIO_HEADER_BYTES, buffer.byteLength - ((buffer.byteLength - AUDIO_HEADER_BYTES) % 2))),
    };
  }
  return { type: "other", tag };
}

/** Kind 0: one frame of the take's audio, i16 mono 16 kHz. */
export function dictationFrame(samples: Int16Array): Uint8Array<ArrayBuffer> {
  const frame = new Uint8Array(1 + samples.byteLength);
  frame[0] = KIND_DICTATION;
  frame.set(new Uint8Array(samples.buffer, samples.byteOffset, samples.byteLength), 1);
  return frame;
}

const encoder = new TextEncoder();

/** Kind 5: the terminal's id, then the keystrokes as UTF-8. */
export function terminalInput(terminal: number, keys: string): Uint8Array<ArrayBuffer> {
  const body = encoder.encode(keys);
  const frame = new Uint8Array(3 + body.length);
  frame[0] = KIND_TERMINAL_INPUT;
  new DataView(frame.buffer).setUint16(1, terminal, true);
  frame.set(body, 3);
  return frame;
}
