// The Agent pane: an agent seat's conversation as it streams, the asks that hold it pinned above
// the composer, and the composer (prompt, queue, interrupt, model and permission mode). A seat
// without an agent offers to start one. State comes folded from `App.agent` (agentwire.ts).

import "./agent.css";

import { useEffect, useLayoutEffect, useMemo, useRef, useState } from "preact/hooks";

import {
  contextFraction,
  editHunk,
  resultsByCall,
  slashMatches,
  type AgentState,
  type AskCard,
  type Block,
  type ChatMessage,
  type Delta,
  type PermissionCard,
  type QuestionCard,
  type Turn,
} from "./agentwire";
import { routeHash, type App } from "./app";
import { FileDiff } from "./diff";
import { markdownHtml } from "./markdown";
import { MicButton, SpeakerSwitch } from "./soundviews";
import { seatKey, type Seat } from "./wire";

export const PERMISSION_MODES = ["default", "acceptEdits", "plan", "bypassPermissions", "dontAsk", "auto"] as const;

/** Where each seat's conversation was scrolled, so a pane switch and back lands on the same spot. */
const scrollKept = new Map<string, number | "bottom">();

type ToolResult = ReturnType<typeof resultsByCall> extends Map<string, infer R> ? R : never;

/** Rendered again only when its text changes: every delta re-renders the conversation, and
 * parsing and sanitizing each of its turns' markdown each time is what made a long one slow. */
function Markdown({ text }: { text: string }) {
  const html = useMemo(() => markdownHtml(text), [text]);
  return <div class="md" dangerouslySetInnerHTML={{ __html: html }} />;
}

/** While the pane is up the shell is as tall as the visual viewport, so an on-screen keyboard
 * shortens the conversation rather than covering the composer. */
function useVisualViewport(): void {
  useEffect(() => {
    const viewport = window.visualViewport;
    if (!viewport) return;
    const root = document.documentElement;
    const fit = () => root.style.setProperty("--vvh", `${viewport.height}px`);
    fit();
    root.classList.add("vv");
    viewport.addEventListener("resize", fit);
    return () => {
      viewport.removeEventListener("resize", fit);
      root.classList.remove("vv");
    };
  }, []);
}

export function AgentPane({ app, seat }: { app: App; seat: Seat }) {
  useVisualViewport();
  const agent = app.seatAgent;
  if (!app.session) return <p class="muted pad">Reading the seat…</p>;
  if (!agent) return <SpawnForm app={app} seat={seat} />;
  return (
    <div class="agentpane" data-agent-pane>
      <AgentHeaderBar app={app} seat={seat} agent={agent} />
      <Conversation app={app} seat={seat} agent={agent} />
      <div class="agentfoot">
        {agent.asks.map((ask) => (
          <Ask app={app} seat={seat} ask={ask} key={ask.id} />
        ))}
        <Composer app={app} seat={seat} agent={agent} />
      </div>
    </div>
  );
}

// --- starting one --------------------------------------------------------------------------

/** "Start an agent": `spawn` with `reply_to`; a refusal is shown in its words. Home uses it too. */
export async function spawnAgent(app: App, seat: Seat, fields: Record<string, unknown> = {}): Promise<string | null> {
  try {
    const body = (await app.socket.request({ kind: "command", command: { spawn: { key: seat, ...fields } } })) as {
      ok: boolean;
      why?: string;
    };
    if (!body.ok) return body.why ?? "the agent did not start";
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
  app.refreshSession();
  return null;
}

function SpawnForm({ app, seat }: { app: App; seat: Seat }) {
  const [model, setModel] = useState("");
  const [mode, setMode] = useState("default");
  const [why, setWhy] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  return (
    <form
      class="pad spawn"
      data-spawn
      onSubmit={(event) => {
        event.preventDefault();
        setBusy(true);
        setWhy(null);
        const fields: Record<string, unknown> = { permission_mode: mode };
        if (model.trim()) fields.model = model.trim();
        void spawnAgent(app, seat, fields).then((refused) => {
          setBusy(false);
          setWhy(refused);
        });
      }}
    >
      <p>No agent works on {seatKey(seat)}.</p>
      <label>
        model <input value={model} placeholder="the CLI's default" onInput={(event) => setModel(event.currentTarget.value)} />
      </label>
      <label>
        permission mode{" "}
        <select value={mode} onChange={(event) => setMode(event.currentTarget.value)}>
          {PERMISSION_MODES.map((name) => (
            <option key={name}>{name}</option>
          ))}
        </select>
      </label>
      <button type="submit" class="primary" disabled={busy}>
        {busy ? "Starting…" : "Start an agent"}
      </button>
      {why ? (
        <p class="refusal" role="alert" data-refusal>
          {why}
        </p>
      ) : null}
    </form>
  );
}

// --- the header ----------------------------------------------------------------------------

function AgentHeaderBar({ app, seat, agent }: { app: App; seat: Seat; agent: AgentState }) {
  const header = agent.header;
  const [model, setModel] = useState(header.model ?? "");
  useEffect(() => setModel(header.model ?? ""), [header.model]);
  const full = contextFraction(header.context_usage);
  return (
    <div class="toolbar agenthead" data-turn={header.turn_in_flight ? "running" : "idle"}>
      <span class={`state ${header.turn_in_flight ? "state-running" : ""}`} data-turn-state>
        {header.turn_in_flight ? "working" : "idle"}
      </span>
      <form
        class="modelpick"
        onSubmit={(event) => {
          event.preventDefault();
          app.command("set_model", { key: seat, model: model.trim() || null });
        }}
      >
        <input aria-label="model" value={model} placeholder="model" size={12} onInput={(event) => setModel(event.currentTarget.value)} />
      </form>
      <select
        aria-label="permission mode"
        value={header.permission_mode ?? "default"}
        onChange={(event) => app.command("set_permission_mode", { key: seat, mode: event.currentTarget.value })}
      >
        {PERMISSION_MODES.map((name) => (
          <option key={name}>{name}</option>
        ))}
      </select>
      {header.effort ? <span class="muted" data-effort>effort {header.effort}</span> : null}
      {full !== null ? (
        <meter class="context" aria-label="context used" min={0} max={1} value={full} title={`context ${Math.round(full * 100)}% used`} />
      ) : null}
      {agent.lastCostUsd !== null ? <span class="muted" data-cost>${agent.lastCostUsd.toFixed(4)}</span> : null}
    </div>
  );
}

// --- the conversation ----------------------------------------------------------------------

function Conversation({ app, seat, agent }: { app: App; seat: Seat; agent: AgentState }) {
  const box = useRef<HTMLDivElement>(null);
  const key = seatKey(seat);
  const stick = useRef(true);
  const firstKey = agent.turns[0]?.key ?? null;
  const above = useRef<{ first: string | null; height: number }>({ first: firstKey, height: 0 });
  // Back on the pane: where it was left.
  useLayoutEffect(() => {
    const el = box.current;
    if (!el) return;
    const kept = scrollKept.get(key);
    if (kept === undefined || kept === "bottom") el.scrollTop = el.scrollHeight;
    else {
      el.scrollTop = kept;
      stick.current = false;
    }
  }, [key]);
  // New text at the bottom follows while the person is at the bottom; older turns read above
  // keep what is on screen where it was.
  useLayoutEffect(() => {
    const el = box.current;
    if (!el) return;
    if (above.current.first !== firstKey) el.scrollTop += el.scrollHeight - above.current.height;
    else if (stick.current) el.scrollTop = el.scrollHeight;
    above.current = { first: firstKey, height: el.scrollHeight };
  });
  const results = resultsByCall(agent.turns);
  return (
    <div
      class="convo"
      ref={box}
      role="log"
      aria-label="conversation"
      onScroll={(event) => {
        const el = event.currentTarget;
        stick.current = el.scrollTop + el.clientHeight >= el.scrollHeight - 24;
        scrollKept.set(key, stick.current ? "bottom" : el.scrollTop);
        if (el.scrollTop < 200) app.moreTurns();
      }}
    >
      {agent.cursor !== null ? (
        <button type="button" class="older" onClick={() => app.moreTurns()} disabled={app.agentMoreAsked}>
          {app.agentMoreAsked ? "Reading older turns…" : "Older turns"}
        </button>
      ) : null}
      {agent.turns.map((turn, index) => (
        <TurnView turn={turn} seat={seat} results={results} key={turn.key ?? `t${index}`} />
      ))}
      {agent.streaming.length ? <Streaming deltas={agent.streaming} /> : null}
      {agent.problems.map((problem, index) => (
        <p class="agentproblem" role="alert" data-problem={problem.code} key={index}>
          {problem.message}
        </p>
      ))}
    </div>
  );
}

function TurnView({ turn, seat, results }: { turn: Turn; seat: Seat; results: Map<string, ToolResult> }) {
  return (
    <section class="turn" data-turn-key={turn.key ?? ""}>
      {turn.messages.map((msg, index) => (
        <MessageView msg={msg} seat={seat} results={results} key={index} />
      ))}
    </section>
  );
}

function MessageView({ msg, seat, results }: { msg: ChatMessage; seat: Seat; results: Map<string, ToolResult> }) {
  switch (msg.type) {
    case "user":
      return (
        <div class="msg user" data-msg="user">
          {msg.text}
        </div>
      );
    case "assistant":
      return (
        <>
          {msg.blocks.map((block, index) => (
            <BlockView block={block} seat={seat} result={block.type === "tool_use" ? results.get(block.id) : undefined} key={index} />
          ))}
        </>
      );
    case "result":
      return msg.is_error ? (
        <p class="agentproblem" role="alert" data-msg="result-error">
          {resultWords(msg.subtype)}
          {msg.text ? `: ${msg.text}` : "."}
        </p>
      ) : null;
    default:
      return null; // tool results show inside their call's row; deltas in the streaming block
  }
}

/** A failed turn's end in words (the CLI's `result` subtypes). */
function resultWords(subtype: string): string {
  if (subtype === "error_during_execution") return "The turn stopped before it finished (interrupted, or Claude Code met an error)";
  if (subtype === "error_max_turns") return "The turn stopped at its limit of turns";
  if (subtype === "error_max_budget_usd") return "The turn stopped at its cost budget";
  return `The turn failed (${subtype})`;
}

function BlockView({ block, seat, result }: { block: Block; seat: Seat; result: ToolResult | undefined }) {
  if (block.type === "text") {
    return (
      <div class="msg assistant" data-msg="assistant">
        <Markdown text={block.text} />
      </div>
    );
  }
  if (block.type === "thinking") {
    return (
      <details class="thinking" data-msg="thinking">
        <summary>thinking</summary>
        <p>{block.thinking}</p>
      </details>
    );
  }
  return <ToolRow name={block.name} input={block.input} seat={seat} result={result} />;
}

/** A tool call's one-line summary: the command, the file, the address. */
function toolSummary(name: string, input: Record<string, unknown>): string {
  const field = (key: string) => (typeof input[key] === "string" ? (input[key]) : "");
  return field("command") || field("file_path") || field("url") || field("pattern") || field("description") || "";
}

function ToolRow({
  name,
  input,
  seat,
  result,
}: {
  name: string;
  input: Record<string, unknown>;
  seat: Seat;
  result: ToolResult | undefined;
}) {
  const status = result ? (result.is_error ? "error" : "done") : "running";
  return (
    <details class={`toolrow tool-${status}`} data-tool={name} data-tool-status={status}>
      <summary>
        <span class="toolname">{name}</span> <code class="toolsum">{toolSummary(name, input)}</code>
      </summary>
      <ToolInput name={name} input={input} seat={seat} />
      {result ? (
        <pre class={`tooloutput ${result.is_error ? "bad" : ""}`} data-tool-output>
          {result.text}
        </pre>
      ) : null}
    </details>
  );
}

/** A tool's input as a person judges it: a command, a diff, a path, else its fields. */
function ToolInput({ name, input, seat }: { name: string; input: Record<string, unknown>; seat: Seat }) {
  const text = (key: string) => (typeof input[key] === "string" ? (input[key]) : null);
  const path = text("file_path");
  if (name === "Bash" && text("command") !== null) return <pre class="toolcmd">$ {text("command")}</pre>;
  if ((name === "Edit" || name === "Write") && path) {
    const hunk = editHunk(name === "Edit" ? (text("old_string") ?? "") : "", text(name === "Edit" ? "new_string" : "content") ?? "");
    const file = {
      path,
      old_path: null,
      status: name === "Write" ? ("added" as const) : ("modified" as const),
      binary: false,
      submodule: false,
      truncated: false,
      hunks: [hunk],
    };
    return <FileDiff file={file} />;
  }
  if (name === "Read" && path) {
    return (
      <p class="toolpath">
        <code>{path}</code> · <a href={routeHash({ view: "seat", seat, pane: "docs" })}>Docs</a>
      </p>
    );
  }
  if (text("url")) return <p class="toolpath">{text("url")}</p>;
  return <pre class="toolcmd">{JSON.stringify(input, null, 2)}</pre>;
}

function Streaming({ deltas }: { deltas: Delta[] }) {
  return (
    <div class="streaming" data-streaming>
      {deltas.map((delta) =>
        delta.kind === "thinking" ? (
          <details class="thinking" key={`k${delta.index}`}>
            <summary>thinking…</summary>
            <p>{delta.text}</p>
          </details>
        ) : (
          <div class="msg assistant" data-msg="assistant" key={`t${delta.index}`}>
            <Markdown text={delta.text} />
          </div>
        ),
      )}
    </div>
  );
}

// --- asks ----------------------------------------------------------------------------------

function Ask({ app, seat, ask }: { app: App; seat: Seat; ask: AskCard }) {
  return ask.kind === "permission" ? <PermissionAsk app={app} seat={seat} ask={ask} /> : <QuestionAsk app={app} seat={seat} ask={ask} />;
}

function PermissionAsk({ app, seat, ask }: { app: App; seat: Seat; ask: PermissionCard }) {
  const [reason, setReason] = useState("");
  const answer = (value: unknown) => app.command("answer", { key: seat, id: ask.id, answer: value });
  return (
    <div class="ask" role="alertdialog" aria-label={`${ask.tool_name} asks to run`} data-ask={ask.id} data-ask-kind="permission">
      <p class="asktitle">
        <strong>{ask.tool_name}</strong> {ask.title ?? "wants to run"}
        {ask.decision_reason ? <span class="muted"> · {ask.decision_reason}</span> : null}
      </p>
      <div class="askinput">
        <ToolInput name={ask.tool_name} input={ask.input} seat={seat} />
      </div>
      <div class="askbuttons">
        <button type="button" class="primary" onClick={() => answer("allow_once")}>
          Allow once
        </button>
        <button type="button" onClick={() => answer("allow_always")}>
          Always allow
        </button>
        <input aria-label="reason to deny" placeholder="reason (optional)" value={reason} onInput={(event) => setReason(event.currentTarget.value)} />
        <button type="button" class="danger" onClick={() => answer({ deny: { reason: reason.trim() || "The person denied it." } })}>
          Deny
        </button>
      </div>
    </div>
  );
}

function QuestionAsk({ app, seat, ask }: { app: App; seat: Seat; ask: QuestionCard }) {
  const [picked, setPicked] = useState<Record<string, string[]>>({});
  const send = (answers: Record<string, string[]>) => app.command("answer", { key: seat, id: ask.id, answer: { choose: { answers } } });
  const single = ask.questions.length === 1 && !ask.questions[0]?.multi_select;
  const complete = ask.questions.every((question) => (picked[question.question] ?? []).length > 0);
  return (
    <div class="ask" role="alertdialog" aria-label="the agent asks" data-ask={ask.id} data-ask-kind="question">
      {ask.questions.map((question) => {
        const chosen = picked[question.question] ?? [];
        return (
          <fieldset key={question.question} class="question">
            <legend>{question.header}</legend>
            <p>{question.question}</p>
            <div class="askbuttons">
              {question.options.map((option) => (
                <button
                  type="button"
                  key={option.label}
                  title={option.description}
                  aria-pressed={chosen.includes(option.label)}
                  onClick={() => {
                    if (single) {
                      send({ [question.question]: [option.label] });
                      return;
                    }
                    const next = question.multi_select
                      ? chosen.includes(option.label)
                        ? chosen.filter((label) => label !== option.label)
                        : [...chosen, option.label]
                      : [option.label];
                    setPicked({ ...picked, [question.question]: next });
                  }}
                >
                  {option.label}
                </button>
              ))}
            </div>
          </fieldset>
        );
      })}
      {single ? null : (
        <button type="button" class="primary" disabled={!complete} onClick={() => send(picked)}>
          Send answers
        </button>
      )}
    </div>
  );
}

// --- the composer --------------------------------------------------------------------------

function isTouch(): boolean {
  return navigator.maxTouchPoints > 0;
}

function Composer({ app, seat, agent }: { app: App; seat: Seat; agent: AgentState }) {
  const [text, setText] = useState("");
  const input = useRef<HTMLTextAreaElement>(null);
  const matches = slashMatches(agent.slashCommands, text.trim());
  const send = () => {
    const words = text.trim();
    if (!words) return;
    if (app.command("prompt", { key: seat, text: words, source: "composer" })) setText("");
  };
  return (
    <div class="composer">
      {agent.queue.length ? (
        <ol class="queue" aria-label="waiting prompts">
          {agent.queue.map((prompt) => (
            <li key={prompt.uuid} data-queued={prompt.uuid}>
              {prompt.text}
            </li>
          ))}
        </ol>
      ) : null}
      {matches.length ? (
        <div class="slash" role="listbox" aria-label="slash commands">
          {matches.map((name) => (
            <button
              type="button"
              role="option"
              key={name}
              onClick={() => {
                setText(`${name} `);
                input.current?.focus();
              }}
            >
              {name}
            </button>
          ))}
        </div>
      ) : null}
      <form
        class="composerrow"
        onSubmit={(event) => {
          event.preventDefault();
          send();
        }}
      >
        <textarea
          ref={input}
          aria-label="prompt"
          rows={1}
          placeholder={agent.header.turn_in_flight ? "queue the next prompt" : "tell the agent"}
          value={text}
          onInput={(event) => setText(event.currentTarget.value)}
          onKeyDown={(event) => {
            if (event.key === "Enter" && !event.shiftKey && !isTouch()) {
              event.preventDefault();
              send();
            }
          }}
        />
        <MicButton
          app={app}
          seat={seat}
          box="composer"
          sendable
          land={(words) => setText((before) => (before ? `${before} ${words}` : words))}
        />
        <SpeakerSwitch app={app} />
        {agent.header.turn_in_flight ? (
          <button type="button" class="danger" onClick={() => app.command("cancel", { key: seat })}>
            Interrupt
          </button>
        ) : null}
        <button type="submit" class="primary">
          Send
        </button>
      </form>
    </div>
  );
}
