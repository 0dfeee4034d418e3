// An agent seat's conversation, asks, queue and header as the page holds them, folded from the
// session snapshot, `page` answers and the seat's numbered updates (docs/protocol.md, "Agent
// seats"). Pure: no I/O, so the fold is the same for a live update and one a `seat_range` repaid.

import type { AgentHeader, ContextUsage, PermissionCard, QuestionCard, QueuedPrompt, Turn } from "./gen/protocol";

export type { AgentHeader, PermissionCard, QuestionCard, QueuedPrompt, Turn } from "./gen/protocol";

export type AskCard = PermissionCard | QuestionCard;
export type ChatMessage = Turn["messages"][number];
export type Block = Extract<ChatMessage, { type: "assistant" }>["blocks"][number];
export type Delta = Extract<ChatMessage, { type: "delta" }>;

/** How full the context is (0 to 1), from the header's `context_usage` (null: not known yet). */
export function contextFraction(usage: ContextUsage | null): number | null {
  if (!usage || !Number.isFinite(usage.percentage)) return null;
  return Math.min(1, Math.max(0, usage.percentage / 100));
}

export interface Problem {
  code: string;
  message: string;
}

export interface AgentState {
  header: AgentHeader;
  /** Oldest first: the pages read with `more`, the snapshot's turns, then what was appended. */
  turns: Turn[];
  /** Where `more` reads on (null: the first turn is held). */
  cursor: number | null;
  /** The text and thinking of the model's message in flight, per block index, until its whole
   * block arrives. */
  streaming: Delta[];
  asks: AskCard[];
  queue: QueuedPrompt[];
  problems: Problem[];
  /** The last turn's cost as the CLI reported it (its `result`), when it did. */
  lastCostUsd: number | null;
  slashCommands: string[];
}

/** Whether the session snapshot describes an agent seat (its header names a permission mode). */
export function isAgentSession(data: Record<string, unknown>): boolean {
  const header = data.header as Partial<AgentHeader> | undefined;
  return typeof header?.permission_mode === "string";
}

function slashNames(raw: unknown): string[] {
  if (!Array.isArray(raw)) return [];
  return raw
    .map((entry: unknown) => {
      if (typeof entry === "string") return entry;
      const name = (entry as { name?: unknown } | null)?.name;
      return typeof name === "string" ? name : null;
    })
    .filter((name): name is string => !!name)
    .map((name) => (name.startsWith("/") ? name : `/${name}`));
}

/** The state a session snapshot describes. */
export function agentFromSnapshot(data: Record<string, unknown>): AgentState {
  const conversation = (data.conversation ?? { turns: [], cursor: null }) as { turns: Turn[]; cursor: number | null };
  const state = (data.state ?? {}) as { queue?: QueuedPrompt[] };
  return {
    header: data.header as AgentHeader,
    turns: conversation.turns,
    cursor: conversation.cursor,
    streaming: [],
    asks: (data.pending_asks ?? []) as AskCard[],
    queue: state.queue ?? [],
    problems: [],
    lastCostUsd: null,
    slashCommands: slashNames(data.slash_commands),
  };
}

/** An older page read with `more`, put above what is held. */
export function withOlder(state: AgentState, turns: Turn[], cursor: number | null): AgentState {
  return { ...state, turns: [...turns, ...state.turns], cursor };
}

function appendMessage(state: AgentState, msg: ChatMessage): AgentState {
  if (msg.type === "delta") {
    const streaming = [...state.streaming];
    const at = streaming.findIndex((d) => d.index === msg.index && d.kind === msg.kind);
    const prior = at >= 0 ? streaming[at] : undefined;
    if (prior) streaming[at] = { ...prior, text: prior.text + msg.text };
    else streaming.push(msg);
    return { ...state, streaming };
  }
  if (msg.type === "result") {
    return { ...state, streaming: [], lastCostUsd: msg.cost_usd ?? state.lastCostUsd, turns: pushInto(state.turns, msg) };
  }
  if (msg.type === "user") {
    return { ...state, streaming: [], turns: [...state.turns, { key: msg.uuid, messages: [msg] }] };
  }
  // A whole assistant message replaces what streamed of it; a tool result follows its call.
  return { ...state, streaming: msg.type === "assistant" ? [] : state.streaming, turns: pushInto(state.turns, msg) };
}

function pushInto(turns: Turn[], msg: ChatMessage): Turn[] {
  const last = turns[turns.length - 1];
  if (!last) return [{ key: null, messages: [msg] }];
  return [...turns.slice(0, -1), { ...last, messages: [...last.messages, msg] }];
}

/** One numbered update of the seat folded in; the same state back for a variant it ignores. */
export function foldAgent(state: AgentState, variant: string, body: Record<string, unknown>): AgentState {
  switch (variant) {
    case "chat_appended":
      return appendMessage(state, body.msg as ChatMessage);
    case "prompt_queued":
      return { ...state, queue: [...state.queue, body.prompt as QueuedPrompt] };
    case "prompt_lifecycle": {
      if (body.phase !== "started") return state;
      return { ...state, queue: state.queue.filter((prompt) => prompt.uuid !== body.uuid) };
    }
    case "ask_pending": {
      const ask = body.ask as AskCard;
      return { ...state, asks: [...state.asks.filter((other) => other.id !== ask.id), ask] };
    }
    case "ask_resolved":
      return { ...state, asks: state.asks.filter((ask) => ask.id !== body.id) };
    case "agent_header":
      return { ...state, header: { ...state.header, ...(body.header as AgentHeader) } };
    case "agent_problem":
      return { ...state, problems: [...state.problems.slice(-4), { code: String(body.code), message: String(body.message) }] };
    case "slash_commands_changed":
      return { ...state, slashCommands: slashNames(body.slash_commands ?? body.commands) };
    default:
      return state;
  }
}

/** Tool results by the id of the call they answer, so a call's row can show its output. */
export function resultsByCall(turns: Turn[]): Map<string, Extract<ChatMessage, { type: "tool_result" }>> {
  const found = new Map<string, Extract<ChatMessage, { type: "tool_result" }>>();
  for (const turn of turns) {
    for (const msg of turn.messages) if (msg.type === "tool_result") found.set(msg.tool_use_id, msg);
  }
  return found;
}

/** How many asks wait across home's rows (each row's oldest, and those behind it). */
export function waitingAsks(rows: { waiting?: { behind: number } | null }[]): number {
  return rows.reduce((sum, row) => sum + (row.waiting ? 1 + row.waiting.behind : 0), 0);
}

/** The slash commands that complete what is typed (only while it is one `/word`). */
export function slashMatches(commands: string[], typed: string): string[] {
  if (!/^\/\S*$/.test(typed)) return [];
  return commands.filter((name) => name.startsWith(typed) && name !== typed).slice(0, 8);
}

/** An Edit's old and new strings as one hunk: the unchanged lines around the change as context. */
export function editHunk(oldText: string, newText: string) {
  const before = oldText.split("\n");
  const after = newText.split("\n");
  let head = 0;
  while (head < before.length && head < after.length && before[head] === after[head]) head++;
  let tail = 0;
  while (
    tail < before.length - head &&
    tail < after.length - head &&
    before[before.length - 1 - tail] === after[after.length - 1 - tail]
  ) {
    tail++;
  }
  type Kind = "context" | "added" | "removed";
  const lines: { kind: Kind; old: number | null; new: number | null; text: string }[] = [];
  before.slice(0, head).forEach((text, i) => lines.push({ kind: "context", old: i + 1, new: i + 1, text }));
  before.slice(head, before.length - tail).forEach((text, i) => lines.push({ kind: "removed", old: head + i + 1, new: null, text }));
  after.slice(head, after.length - tail).forEach((text, i) => lines.push({ kind: "added", old: null, new: head + i + 1, text }));
  before.slice(before.length - tail).forEach((text, i) => {
    lines.push({ kind: "context", old: before.length - tail + i + 1, new: after.length - tail + i + 1, text });
  });
  return { old_start: 1, old_count: before.length, new_start: 1, new_count: after.length, section: "", lines };
}
