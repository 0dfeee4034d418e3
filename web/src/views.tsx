// Home, the seat's panes and settings, drawn from the App's state.

import { useEffect, useRef, useState } from "preact/hooks";

import { AgentPane, spawnAgent } from "./agent";
import { App, PANES, routeHash, type Pane } from "./app";
import { BrowserSurface } from "./browser";
import { DocsPane } from "./docs";
import { ChangesPane, SeatWork } from "./files";
import type { ExtraKey } from "./keys";
import { LabPage } from "./lab";
import { ProcessTable } from "./processtable";
import { SettingsView } from "./settings";
import { rememberToken } from "./socket";
import { MicButton, SpeakerSwitch, TabSoundToggle, useSpeakerFollow } from "./soundviews";
import { TerminalSurface } from "./terminal";
import { sameSeat, seatKey, type AgentRow, type ProjectRow, type Seat, type Work } from "./wire";

/** A function that re-renders the calling component. */
function useBump(): () => void {
  const [, set] = useState(0);
  return () => set((n) => n + 1);
}

export function useApp(app: App): void {
  const bump = useBump();
  useEffect(() => app.subscribe(bump), [app]);
}

function ago(ms: number | null): string {
  if (ms === null) return "never";
  const seconds = Math.max(0, Math.round((Date.now() - ms) / 1000));
  if (seconds < 60) return `${seconds}s ago`;
  if (seconds < 3600) return `${Math.round(seconds / 60)}m ago`;
  if (seconds < 86400) return `${Math.round(seconds / 3600)}h ago`;
  return `${Math.round(seconds / 86400)}d ago`;
}

function WorkRow({ work }: { work: Work | null }) {
  if (!work?.branch) return <span class="muted">no git</span>;
  return (
    <span class="work">
      <span class="branch">{work.branch}</span>
      {work.changed ? <span class="changed">{work.changed} changed</span> : <span class="muted">clean</span>}
      {work.gate ? <span class="gate">{work.gate}</span> : null}
    </span>
  );
}

// --- the frame around every view -------------------------------------------------------------

export function Shell({ app }: { app: App }) {
  useApp(app);
  const route = app.route;
  const greeting = app.greeting;
  const home = app.home;
  const theme = app.look.theme ?? "dark";
  useEffect(() => {
    document.documentElement.dataset.theme = theme;
  }, [theme]);
  return (
    <div class="shell">
      <header class="bar">
        <a class="brand" href="#/">
          {app.look.mark ? <span class="mark">{app.look.mark}</span> : null}
          forge
        </a>
        <nav>
          <a href="#/" aria-current={route.view === "home" ? "page" : undefined}>
            Home
          </a>
          <a href="#/lab" aria-current={route.view === "lab" ? "page" : undefined}>
            Lab
          </a>
          <a href="#/settings" aria-current={route.view === "settings" ? "page" : undefined}>
            Settings
          </a>
        </nav>
        <span class={`link link-${app.link}`} role="status" data-link={app.link}>
          {LINK_WORDS[app.link]}
        </span>
        <span class="build" title={greeting?.forge_version}>
          {greeting?.forge_version_short ?? ""}
        </span>
      </header>
      <div class="banners">
        {app.link === "reconnecting" ? (
          <div class="banner warn" role="alert">
            Reconnecting to the supervisor{app.linkWhy ? ` (${app.linkWhy})` : ""}…
          </div>
        ) : null}
        {app.buildChanged ? (
          <div class="banner info" role="alert" data-notice="build-changed">
            The server's build changed to {greeting?.forge_version}; this page is {app.pageBuild}.{" "}
            <button type="button" onClick={() => location.reload()}>
              Reload
            </button>
          </div>
        ) : null}
        {app.protocolSkew ? (
          <div class="banner warn">
            The server speaks protocol {greeting?.version}; this page speaks 29. Reload the page to update it.
          </div>
        ) : null}
        {home?.fatal_error ? (
          <div class="banner error" role="alert">
            {home.fatal_error.message}
          </div>
        ) : null}
        {home?.service_status ? (
          <div class="banner warn" data-notice="service-status">
            forge health: {home.service_status.state}
            {home.service_status.reason ? ` — ${home.service_status.reason}` : ""}
          </div>
        ) : null}
      </div>
      <div class="notices" aria-live="polite">
        {app.notices.map((notice) => (
          <div class="banner note" key={notice.id}>
            {notice.text}
            <button type="button" class="close" aria-label="dismiss" onClick={() => app.dismiss(notice.id)}>
              ×
            </button>
          </div>
        ))}
      </div>
      <main class={`view view-${route.view}`}>
        {app.link === "unpaired" ? <UnpairedView app={app} /> : null}
        {app.link !== "unpaired" && route.view === "home" ? <HomeView app={app} /> : null}
        {app.link !== "unpaired" && route.view === "settings" ? <SettingsView app={app} /> : null}
        {app.link !== "unpaired" && route.view === "lab" ? <LabPage app={app} run={route.run} /> : null}
        {app.link !== "unpaired" && route.view === "seat" ? <SeatView app={app} seat={route.seat} pane={route.pane} /> : null}
      </main>
    </div>
  );
}

const LINK_WORDS = {
  open: "connected",
  connecting: "connecting…",
  reconnecting: "reconnecting…",
  unpaired: "not paired",
} as const;

// --- pairing ---------------------------------------------------------------------------------

/** The server refused this device's token: say how to pair, take a pasted token, no redial loop. */
function UnpairedView({ app }: { app: App }) {
  const [token, setToken] = useState("");
  return (
    <form
      class="unpaired pad"
      data-view="unpaired"
      onSubmit={(event) => {
        event.preventDefault();
        if (!token.trim()) return;
        rememberToken(token);
        app.socket.retry();
      }}
    >
      <h2>This device is not paired with forge on {location.host}</h2>
      <p>
        On the workstation, run <code>forge pair</code> and open the address it prints here (or scan its QR code). Or
        paste the token <code>forge token show</code> prints:
      </p>
      <input
        type="password"
        autocomplete="off"
        aria-label="token"
        value={token}
        onInput={(event) => setToken(event.currentTarget.value)}
      />
      <button type="submit">Pair</button>
    </form>
  );
}

// --- home ------------------------------------------------------------------------------------

function HomeView({ app }: { app: App }) {
  const home = app.home;
  if (!home) return <p class="muted">Waiting for the supervisor…</p>;
  return (
    <div class="home">
      <section aria-labelledby="projects-h">
        <h2 id="projects-h">Projects</h2>
        {home.projects.length === 0 ? (
          <p class="muted">No projects: add a [[projects]] entry to forge.toml.</p>
        ) : null}
        <div class="cards">
          {home.projects.map((row) => (
            <ProjectCard app={app} row={row} key={`${row.project.org}/${row.project.name}`} />
          ))}
        </div>
      </section>
      <section aria-labelledby="workers-h">
        <h2 id="workers-h">Workers</h2>
        <div class="table-wrap">
          <table class="workers">
            <thead>
              <tr>
                <th>name</th>
                <th>kind</th>
                <th>pid</th>
                <th>state</th>
                <th>restarts</th>
                <th>last exit</th>
              </tr>
            </thead>
            <tbody>
              {home.workers.map((worker) => (
                <tr key={worker.name} data-state={worker.state}>
                  <td>{worker.name}</td>
                  <td>{worker.kind}</td>
                  <td>{worker.pid ?? "—"}</td>
                  <td>
                    <span class={`state state-${worker.state}`}>{worker.state}</span>
                  </td>
                  <td>{worker.restarts}</td>
                  <td>{worker.last_reason ?? worker.last_exit ?? "—"}</td>
                </tr>
              ))}
              {home.workers.length === 0 ? (
                <tr>
                  <td colSpan={6} class="muted">
                    no workers running
                  </td>
                </tr>
              ) : null}
            </tbody>
          </table>
        </div>
      </section>
    </div>
  );
}

function ProjectCard({ app, row }: { app: App; row: ProjectRow }) {
  const { org, name, path } = row.project;
  const [label, setLabel] = useState("main");
  const [refused, setRefused] = useState<string | null>(null);
  const seats = (app.home?.agents ?? [])
    .filter((agent) => agent.slot.org === org && agent.slot.project === name)
    .sort((a, b) => a.label.localeCompare(b.label));
  const open = (event: Event) => {
    event.preventDefault();
    const clean = label.trim();
    if (clean) app.go({ view: "seat", seat: { org, project: name, label: clean }, pane: "terminal" });
  };
  const startAgent = () => {
    const clean = label.trim();
    if (!clean) return;
    const seat = { org, project: name, label: clean };
    setRefused(null);
    void spawnAgent(app, seat).then((why) => {
      if (why) setRefused(why);
      else app.go({ view: "seat", seat, pane: "agent" });
    });
  };
  return (
    <article class="card project" data-project={`${org}/${name}`}>
      <header>
        <h3>
          <span class="muted">{org}/</span>
          {name}
        </h3>
        <WorkRow work={row.work} />
      </header>
      <p class="path">{path}</p>
      <ul class="seats">
        {seats.map((agent) => (
          <SeatRow app={app} agent={agent} key={seatKey(agent.slot)} />
        ))}
      </ul>
      <form class="open" onSubmit={open}>
        <label>
          seat
          <input
            value={label}
            onInput={(event) => setLabel(event.currentTarget.value)}
            aria-label={`seat label for ${org}/${name}`}
            size={8}
          />
        </label>
        <button type="submit">Open terminal</button>
        <button type="button" onClick={startAgent}>
          Start agent
        </button>
      </form>
      {refused ? (
        <p class="refusal" role="alert" data-refusal>
          {refused}
        </p>
      ) : null}
    </article>
  );
}

function SeatRow({ app, agent }: { app: App; agent: AgentRow }) {
  const seat = agent.slot;
  const go = (pane: Pane) => () => app.go({ view: "seat", seat, pane });
  return (
    <li class="seat" data-seat={seatKey(seat)}>
      <a class="label" href={routeHash({ view: "seat", seat, pane: null })}>
        {app.unseen(seat) ? <span class="unseen" title="unseen activity" aria-label="unseen" /> : null}
        {agent.label}
      </a>
      <span class={`state state-${agent.lifecycle}`}>{agent.failed ? `failed: ${agent.failed}` : agent.lifecycle}</span>
      {agent.waiting ? (
        <a class="waiting" data-waiting={agent.waiting.kind} href={routeHash({ view: "seat", seat, pane: "agent" })}>
          waits on {agent.waiting.kind === "question" ? "a question" : "a permission"}
          {agent.waiting.behind ? ` (+${agent.waiting.behind})` : ""}
        </a>
      ) : null}
      <span class="muted when">{ago(agent.last_active_ms)}</span>
      <WorkRow work={agent.work} />
      <span class="actions">
        <button type="button" onClick={go("terminal")}>
          Terminal
        </button>
        <button type="button" onClick={go("browser")}>
          Browser
        </button>
        <button type="button" onClick={go("processes")}>
          Processes
        </button>
      </span>
    </li>
  );
}

// --- a seat ----------------------------------------------------------------------------------

function SeatView({ app, seat, pane: asked }: { app: App; seat: Seat; pane: Pane | null }) {
  useSpeakerFollow(app, seat);
  const held = app.session && sameSeat(app.session.slot, seat);
  // The seat's first view: its agent when it has one; the terminal until the seat is read.
  const pane: Pane = asked ?? (held && app.seatAgent ? "agent" : "terminal");
  if (!asked && !held && app.agent(seat)) return <p class="muted pad">Reading the seat…</p>;
  // The agent's tab shows on a seat that has one (a seat without offers Start on the pane's URL).
  return (
    <div class="seatview">
      <div class="seatbar">
        <a href="#/" class="back" aria-label="home">
          ←
        </a>
        <h2 class="seatname">{seatKey(seat)}</h2>
        <SeatWork app={app} seat={seat} />
        <div class="panes" role="tablist">
          {PANES.filter((name) => name !== "agent" || pane === "agent" || (held && app.seatAgent)).map((name) => (
            <button
              type="button"
              role="tab"
              key={name}
              aria-selected={name === pane}
              onClick={() => app.go({ view: "seat", seat, pane: name })}
            >
              {name}
            </button>
          ))}
        </div>
        {pane === "agent" ? null : <SpeakerSwitch app={app} />}
      </div>
      {pane === "agent" ? <AgentPane app={app} seat={seat} key={`a${seatKey(seat)}`} /> : null}
      {pane === "terminal" ? <TerminalPane app={app} seat={seat} key={`t${seatKey(seat)}`} /> : null}
      {pane === "browser" ? <BrowserPane app={app} seat={seat} key={`b${seatKey(seat)}`} /> : null}
      {pane === "processes" ? <ProcessesPane app={app} seat={seat} /> : null}
      {pane === "changes" ? <ChangesPane app={app} seat={seat} key={`c${seatKey(seat)}`} /> : null}
      {pane === "docs" ? <DocsPane app={app} seat={seat} key={`d${seatKey(seat)}`} /> : null}
    </div>
  );
}

const EXTRA_KEYS: [string, string][] = [
  ["Esc", "Escape"],
  ["Tab", "Tab"],
  ["←", "ArrowLeft"],
  ["↑", "ArrowUp"],
  ["↓", "ArrowDown"],
  ["→", "ArrowRight"],
  ["|", "|"],
  ["~", "~"],
  ["/", "/"],
  ["-", "-"],
];

function isTouch(): boolean {
  return navigator.maxTouchPoints > 0 || matchMedia("(pointer: coarse)").matches;
}

function TerminalPane({ app, seat }: { app: App; seat: Seat }) {
  useApp(app);
  const host = useRef<HTMLDivElement>(null);
  const input = useRef<HTMLTextAreaElement>(null);
  const [surface, setSurface] = useState<TerminalSurface | null>(null);
  const bump = useBump();
  const touch = isTouch();
  useEffect(() => {
    if (!host.current) return;
    const made = new TerminalSurface(app, seat, host.current);
    made.onChange = bump;
    setSurface(made);
    return () => made.dispose();
  }, [app, seat]);
  const look = app.look;
  useEffect(() => {
    surface?.applyLook(look.theme, look.font);
  }, [surface, look.theme, look.font]);
  const summary = app.session && sameSeat(app.session.slot, seat) ? app.session.terminal : null;
  useEffect(() => {
    if (surface && summary) surface.summaryChanged(summary.cols, summary.rows);
  }, [surface, summary?.cols, summary?.rows]);
  const focus = () => {
    if (touch) input.current?.focus();
    else surface?.term.focus();
  };
  const touchScroll = useRef<{ y: number; moved: boolean } | null>(null);
  const role = surface?.controls ? "controller" : surface?.controller != null ? "watcher" : "viewer";
  const state = summary ? (summary.alive ? summary.state : "exited") : (surface?.phase ?? "opening");
  const stickyKey = (which: "ctrl" | "alt") => () => {
    surface?.sticky.toggle(which);
    bump();
  };
  const keep = (event: Event) => {
    event.preventDefault(); // the keyboard stays up: focus never leaves the input
  };
  const [moreTools, setMoreTools] = useState(false);
  const keysRow = useRef<HTMLDivElement>(null);
  const [keysMore, setKeysMore] = useState("");
  useEffect(() => {
    const row = keysRow.current;
    if (!row) return;
    const measure = () => setKeysMore(hiddenSides(row));
    const watch = new ResizeObserver(measure);
    watch.observe(row);
    return () => watch.disconnect();
  }, []);
  return (
    <div class={`terminalpane ${touch ? "touch" : ""}`}>
      <div class="toolbar">
        <span class={`state state-${state}`} data-terminal-state={state}>
          {state}
          {summary && !summary.alive && summary.exit_status !== null ? ` (${summary.exit_status})` : ""}
        </span>
        <span class="role" data-role={role}>
          {role}
          {surface && surface.viewers > 1 ? ` · ${surface.viewers} viewers` : ""}
        </span>
        {surface?.controls ? (
          <button type="button" onClick={() => surface.takeControl(false)}>
            Release
          </button>
        ) : (
          <button type="button" class="primary" onClick={() => surface?.takeControl(true)}>
            Take control
          </button>
        )}
        <MicButton app={app} seat={seat} box="terminal" land={(text) => surface?.type(text)} />
        <span class="spacer" />
        <button
          type="button"
          class="moretools"
          aria-label="more tools"
          aria-expanded={moreTools}
          onClick={() => setMoreTools(!moreTools)}
        >
          ⋯
        </button>
        {/* On a phone these fold behind ⋯, so the toolbar stays one row. */}
        <span class={`toolmore ${moreTools ? "open" : ""}`} onClick={() => setMoreTools(false)}>
          <button type="button" aria-label="smaller text" onClick={() => surface?.setFontSize(-1)}>
            A−
          </button>
          <button type="button" aria-label="larger text" onClick={() => surface?.setFontSize(1)}>
            A+
          </button>
          <button type="button" onClick={() => void surface?.copy()}>
            Copy
          </button>
          <button type="button" onClick={() => void surface?.paste()}>
            Paste
          </button>
          <button type="button" onClick={() => surface?.close()} title="kill the shell's processes">
            Close
          </button>
        </span>
      </div>
      <div class="termwrap" onClick={focus}>
        <div class="term" ref={host} />
        {touch ? (
          <textarea
            ref={input}
            class="ime"
            aria-label="terminal input"
            autocapitalize="off"
            autocomplete="off"
            spellcheck={false}
            onInput={(event) => surface?.phoneInput(event.currentTarget, event)}
            onCompositionStart={(event) => surface?.phoneInput(event.currentTarget, event)}
            onCompositionEnd={(event) => surface?.phoneInput(event.currentTarget, event)}
            onKeyDown={(event) => surface?.phoneKey(event.currentTarget, event)}
            onTouchStart={(event) => {
              const first = event.touches[0];
              touchScroll.current = first ? { y: first.clientY, moved: false } : null;
            }}
            onTouchMove={(event) => {
              const first = event.touches[0];
              const start = touchScroll.current;
              if (!first || !start || !surface) return;
              const cell = surface.term.element ? surface.term.element.clientHeight / surface.term.rows : 16;
              const lines = Math.trunc((start.y - first.clientY) / cell);
              if (lines !== 0) {
                event.preventDefault();
                surface.scrollBy(lines);
                touchScroll.current = { y: start.y - lines * cell, moved: true };
              }
            }}
          />
        ) : null}
        {surface?.phase === "gone" ? (
          <div class="overlay">
            <p>{surface.why}</p>
            <button type="button" class="primary" onClick={() => surface.open(null)}>
              Open a new shell
            </button>
          </div>
        ) : null}
      </div>
      <div class="keyswrap" data-more={keysMore}>
        <div
          class="extrakeys"
          role="toolbar"
          aria-label="extra keys"
          ref={keysRow}
          onScroll={(event) => setKeysMore(hiddenSides(event.currentTarget))}
        >
          <button
            type="button"
            aria-pressed={surface?.sticky.ctrl ?? false}
            data-key="ctrl"
            onPointerDown={keep}
            onClick={stickyKey("ctrl")}
          >
            Ctrl
          </button>
          <button
            type="button"
            aria-pressed={surface?.sticky.alt ?? false}
            data-key="alt"
            onPointerDown={keep}
            onClick={stickyKey("alt")}
          >
            Alt
          </button>
          {EXTRA_KEYS.map(([label, key]) => (
            <button
              type="button"
              key={label}
              data-key={key}
              onPointerDown={keep}
              onClick={() => {
                if (key.length === 1) surface?.type(surface.sticky.apply(key));
                else surface?.extraKey(key as ExtraKey);
                bump();
              }}
            >
              {label}
            </button>
          ))}
        </div>
      </div>
    </div>
  );
}

/** Which sides of a scrolled row hide keys ("left", "right", both or ""), for its hints. */
function hiddenSides(row: HTMLElement): string {
  const sides = [];
  if (row.scrollLeft > 1) sides.push("left");
  if (row.scrollLeft + row.clientWidth < row.scrollWidth - 1) sides.push("right");
  return sides.join(" ");
}

function BrowserPane({ app, seat }: { app: App; seat: Seat }) {
  useApp(app);
  const canvas = useRef<HTMLCanvasElement>(null);
  const files = useRef<HTMLInputElement>(null);
  const [surface, setSurface] = useState<BrowserSurface | null>(null);
  const bump = useBump();
  const [address, setAddress] = useState("");
  /** The person is in the address bar (focused, or typed since they last pressed Go): the
   * tab's address, when it arrives, must not overwrite what they are typing or have selected
   * to type over (it would move the caret, and their text would land after the old address). */
  const edited = useRef(false);
  const focused = useRef(false);
  const [typed, setTyped] = useState("");
  const [prompt, setPrompt] = useState("");
  useEffect(() => {
    if (!canvas.current) return;
    const made = new BrowserSurface(app, seat, canvas.current);
    made.onChange = bump;
    setSurface(made);
    return () => made.dispose();
  }, [app, seat]);
  const row = surface?.row;
  useEffect(() => {
    if (row?.url && !edited.current && !focused.current) setAddress(row.url);
  }, [row?.url]);
  const addressInput = useRef<HTMLInputElement>(null);
  const go = (event: Event) => {
    event.preventDefault();
    addressInput.current?.blur(); // as a browser's own bar does; still "edited", so kept
    edited.current = false;
    const url = /^[a-z]+:/i.test(address) ? address : `https://${address}`;
    surface?.navigate(url);
  };
  const role = surface?.controls ? "controller" : surface?.controller != null ? "watcher" : "viewer";
  return (
    <div class="browserpane">
      <div class="tabs" role="tablist" aria-label="tabs">
        {(surface?.tabs?.rows ?? []).map((tab) => (
          <button
            type="button"
            role="tab"
            key={tab.number}
            aria-selected={tab.number === surface?.tab}
            title={tab.url}
            onClick={() => surface?.view(tab.number)}
          >
            {tab.title || tab.url || `tab ${tab.number}`}
            {tab.dialog ? " •" : ""}
          </button>
        ))}
        <button
          type="button"
          aria-label="new tab"
          onClick={() => surface?.open(address && surface.tab === null ? address : "about:blank")}
        >
          +
        </button>
        {surface ? <TabSoundToggle app={app} surface={surface} /> : null}
      </div>
      <form class="toolbar address" onSubmit={go}>
        <button type="button" aria-label="back" disabled={!surface?.canBack} onClick={() => surface?.nav(true)}>
          ◀
        </button>
        <button
          type="button"
          aria-label="forward"
          disabled={!surface?.canForward}
          onClick={() => surface?.nav(false)}
        >
          ▶
        </button>
        <input
          type="text"
          inputMode="url"
          aria-label="address"
          ref={addressInput}
          value={address}
          onInput={(event) => {
            edited.current = true;
            setAddress(event.currentTarget.value);
          }}
          onFocus={() => {
            focused.current = true;
          }}
          onBlur={() => {
            focused.current = false;
            if (!edited.current && row?.url) setAddress(row.url);
          }}
          placeholder="https://…"
        />
        <button type="submit">{surface?.tab == null ? "Open" : "Go"}</button>
        <span class="role" data-role={role}>
          {role}
        </span>
        {surface?.controls ? null : (
          <button type="button" class="primary" onClick={() => surface?.takeControl(true)}>
            Take control
          </button>
        )}
        <label class="toggle" title="JPEG motion frames: lower latency, more bytes">
          <input type="checkbox" checked={app.lowLatency} onChange={(event) => app.setLowLatency(event.currentTarget.checked)} />
          low latency
        </label>
      </form>
      <div class="canvaswrap">
        <canvas ref={canvas} tabIndex={0} aria-label="browser tab" class="page" />
        {surface && surface.tab === null && !surface.attaching ? (
          <div class="overlay">
            <p>{surface.failed ?? "No tab is open in this seat's browser."}</p>
            <p class="muted">Type an address above and press Open.</p>
          </div>
        ) : null}
        {row?.dialog ? (
          <div class="overlay dialog" role="dialog" aria-label="page dialog">
            <p>
              <strong>{row.dialog.kind}</strong>: {row.dialog.message}
            </p>
            {row.dialog.kind === "prompt" ? (
              <input value={prompt} aria-label="answer" onInput={(event) => setPrompt(event.currentTarget.value)} />
            ) : null}
            <div>
              <button type="button" class="primary" onClick={() => surface?.answerDialog(true, row.dialog?.kind === "prompt" ? prompt : null)}>
                OK
              </button>
              <button type="button" onClick={() => surface?.answerDialog(false, null)}>
                Cancel
              </button>
            </div>
          </div>
        ) : null}
        {surface?.fileAsk ? (
          <div class="overlay dialog" role="dialog" aria-label="file chooser">
            <p>The page asks for {surface.fileAsk.multiple ? "files" : "a file"}.</p>
            <input type="file" ref={files} multiple={surface.fileAsk.multiple} aria-label="files to send" />
            <div>
              <button type="button" class="primary" onClick={() => void surface.answerFiles([...(files.current?.files ?? [])])}>
                Send
              </button>
              <button type="button" onClick={() => void surface.answerFiles([])}>
                Cancel
              </button>
            </div>
          </div>
        ) : null}
      </div>
      <form
        class="toolbar typebar"
        onSubmit={(event) => {
          event.preventDefault();
          surface?.sendText(typed);
          setTyped("");
        }}
      >
        <input
          value={typed}
          aria-label="text to type into the page"
          placeholder="type into the page"
          onInput={(event) => setTyped(event.currentTarget.value)}
        />
        <MicButton
          app={app}
          seat={seat}
          box="browser"
          land={(text) => setTyped((before) => (before ? `${before} ${text}` : text))}
        />
        <button type="submit">Type</button>
        <button type="button" onClick={() => surface?.sendKey("Enter", "Enter")}>
          ⏎
        </button>
        <button type="button" onClick={() => surface?.sendKey("Backspace", "Backspace")}>
          ⌫
        </button>
      </form>
    </div>
  );
}

function ProcessesPane({ app, seat }: { app: App; seat: Seat }) {
  const session = app.session && sameSeat(app.session.slot, seat) ? app.session : null;
  if (!session) return <p class="muted pad">Reading the seat…</p>;
  if (!session.processes) return <p class="muted pad">No processes yet: open the seat's terminal.</p>;
  return (
    <div class="pad">
      <ProcessTable rows={session.processes} />
    </div>
  );
}
