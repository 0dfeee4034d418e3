// The settings page: forge.toml's document drawn as controls, a draft, and one save at a time.
//
// The draft outlives the view (it is the page's, kept while the person visits a seat) and is
// cleared only by the answer to its own save: another client's save pushes a new document, which
// the page draws beneath the draft, and the save that follows is refused `stale` and says so.

import "./settings.css";

import { useState } from "preact/hooks";

import { notifyAsksOn, setNotifyAsks } from "./agentnotify";
import type { App, Surface } from "./app";
import {
  Draft,
  entryPath,
  isNameKey,
  locate,
  numberProblem,
  type Located,
  type NewEntry,
  type Typed,
} from "./draft";
import { forgetToken } from "./socket";
import type { ServerMessage, SettingsDocument, SettingsKey } from "./wire";

type Reason = "stale" | "invalid" | "refused" | "io" | "lost";

export type Outcome =
  | { state: "idle" }
  | { state: "saving"; id: number; sent: Map<string, string> }
  | { state: "saved"; restart: string[]; message: string | null }
  | { state: "refused"; reason: Reason; message: string; keyPath: string | null };

/** The page's draft and the fate of its last save; answers reach it wherever the page is. */
export class SettingsSaves implements Surface {
  readonly draft = new Draft();
  outcome: Outcome = { state: "idle" };
  private nextId = 1;
  /** The link (`ForgeSocket.links`) the save in flight was sent on. */
  private sentOn = 0;

  constructor(private readonly app: App) {
    app.addSurface(this);
  }

  message(message: ServerMessage): boolean {
    if (message.kind !== "settings_saved" && message.kind !== "settings_refused") return false;
    const outcome = this.outcome;
    if (outcome.state !== "saving" || message.id !== outcome.id) return true; // not this save's
    if (message.kind === "settings_saved") {
      this.draft.clear();
      this.outcome = {
        state: "saved",
        restart: message.restart,
        message: message.message,
      };
    } else {
      const keyPath = message.key_path;
      this.outcome = {
        state: "refused",
        reason: message.reason,
        message: message.message,
        keyPath: keyPath === null ? null : (outcome.sent.get(keyPath) ?? keyPath),
      };
    }
    this.app.changed();
    return true;
  }

  binary(): void {
    // settings cross as JSON only
  }

  /** A new link: a save sent on an older one may be lost. One sent on this link (the person
   * saved while the page was replaying its surfaces onto a link just greeted) is answered. */
  relink(): void {
    if (this.outcome.state !== "saving" || this.sentOn === this.app.socket.links) return;
    this.outcome = {
      state: "refused",
      reason: "lost",
      message: "The link dropped before the server answered this save. The values below are the file's now; save again if yours are missing.",
      keyPath: null,
    };
    this.app.changed();
  }

  save(): void {
    const document = this.app.settings;
    if (!document || this.draft.empty || this.outcome.state === "saving") return;
    const { edits, sent } = this.draft.edits(document);
    const id = this.nextId++;
    const fingerprint = this.draft.base ?? document.fingerprint;
    if (!this.app.send({ kind: "settings_edit", fingerprint, id, edits })) {
      this.outcome = { state: "refused", reason: "lost", message: "Not connected: nothing was sent.", keyPath: null };
    } else {
      this.sentOn = this.app.socket.links;
      this.outcome = { state: "saving", id, sent };
    }
    this.app.changed();
  }

  /** The draft changed: a key's refusal beside it is answered, a saved note is old news. */
  touched(path: string | null): void {
    const outcome = this.outcome;
    if (outcome.state === "saved" || (outcome.state === "refused" && (path === null || outcome.keyPath === path))) {
      this.outcome = { state: "idle" };
    }
    this.app.changed();
  }

  discard(): void {
    this.draft.clear();
    this.outcome = { state: "idle" };
    this.app.changed();
  }

  /** After `stale`: take the document as it is now and keep the changes that still differ. */
  reload(): void {
    if (this.app.settings) this.draft.rebase(this.app.settings);
    this.outcome = { state: "idle" };
    this.app.changed();
  }
}

const saves = new WeakMap<App, SettingsSaves>();

export function savesOf(app: App): SettingsSaves {
  let found = saves.get(app);
  if (!found) {
    found = new SettingsSaves(app);
    saves.set(app, found);
  }
  return found;
}

const CLASS_WORDS: Record<string, string> = {
  live: "applies at once",
  next_session: "applies to what starts next",
  restart: "applies at the next start",
  not_read_yet: "not read yet",
};

function domId(path: string): string {
  return `setting-${path.replace(/[^A-Za-z0-9_-]/g, "_")}`;
}

/** Bring a key's control into view and focus (the page's own hash is its route, not an anchor). */
function focusKey(path: string): void {
  const control = document.getElementById(domId(path)) ?? document.querySelector(`[data-entry="${CSS.escape(path)}"] button`);
  if (control instanceof HTMLElement) {
    control.scrollIntoView({ block: "center" });
    control.focus();
  }
}

/** This device's switch for a notification when an agent waits (agentnotify.ts); off by default. */
function NotifySwitch() {
  const [on, setOn] = useState(notifyAsksOn());
  return (
    <p class="notify">
      <label class="toggle">
        <input
          type="checkbox"
          data-notify-asks
          checked={on}
          onChange={(event) => void setNotifyAsks(event.currentTarget.checked).then(setOn)}
        />
        On this device, notify me when an agent waits while the page is hidden
      </label>
    </p>
  );
}

export function SettingsView({ app }: { app: App }) {
  const document = app.settings;
  const saves = savesOf(app);
  if (!document) return <p class="muted pad">Waiting for the settings…</p>;
  const draft = saves.draft;
  const rows = locate(document);
  const outcome = saves.outcome;
  const behind = !draft.empty && draft.base !== null && draft.base !== document.fingerprint;
  return (
    <form
      class="settings pad"
      data-view="settings"
      onSubmit={(event) => {
        event.preventDefault();
        saves.save();
      }}
      onKeyDown={(event) => {
        if ((event.ctrlKey || event.metaKey) && event.key === "s") {
          event.preventDefault();
          saves.save();
        }
      }}
    >
      <p class="paired">
        Paired with forge on <strong>{location.host}</strong>.{" "}
        <button
          type="button"
          onClick={() => {
            forgetToken();
            location.reload();
          }}
        >
          Forget this device
        </button>
      </p>
      <NotifySwitch />
      <p class="muted">
        {document.source ?? "built-in defaults"} · fingerprint <code data-fingerprint>{document.fingerprint}</code>.
        Changes stay in this page until you save them.
      </p>
      {document.areas.map((area) => (
        <AreaSection key={area.id} app={app} document={document} area={area} rows={rows} />
      ))}
      <div class="savebar" data-outcome={outcome.state === "refused" ? outcome.reason : outcome.state}>
        <OutcomeLine app={app} outcome={outcome} behind={behind} />
        <div class="savebuttons">
          <span class="muted" data-draft-size={draft.size}>
            {draft.empty ? "no changes" : `${draft.size} change${draft.size === 1 ? "" : "s"}`}
          </span>
          <button type="button" disabled={draft.empty} onClick={() => saves.discard()}>
            Discard
          </button>
          <button type="submit" class="primary" disabled={draft.empty || outcome.state === "saving"}>
            {outcome.state === "saving" ? "Saving…" : "Save"}
          </button>
        </div>
      </div>
    </form>
  );
}

function OutcomeLine({ app, outcome, behind }: { app: App; outcome: Outcome; behind: boolean }) {
  const saves = savesOf(app);
  if (outcome.state === "saved") {
    return (
      <p class="outcome ok" role="status" data-saved>
        Saved to forge.toml.
        {outcome.restart.length ? ` ${outcome.restart.join(", ")}: applies at the next start of forge supervise.` : ""}
        {outcome.message ? <span class="muted"> ({outcome.message})</span> : null}
      </p>
    );
  }
  if (outcome.state === "refused" && outcome.reason === "stale") {
    return (
      <div class="outcome bad" role="alert" data-stale>
        <p>
          Someone else saved forge.toml after you began editing, so nothing was written. Your changes are kept here.
          <span class="muted"> ({outcome.message})</span>
        </p>
        <button type="button" class="primary" onClick={() => saves.reload()}>
          Reload the settings, keep my changes
        </button>{" "}
        <button type="button" onClick={() => saves.discard()}>
          Discard my changes
        </button>
      </div>
    );
  }
  if (outcome.state === "refused" && !outcome.keyPath) {
    return (
      <p class="outcome bad" role="alert">
        Not saved: {outcome.message}
      </p>
    );
  }
  if (outcome.state === "refused") {
    return (
      <p class="outcome bad" role="alert">
        Not saved: see the message beside{" "}
        <button type="button" class="linklike" onClick={() => focusKey(outcome.keyPath ?? "")}>
          {outcome.keyPath}
        </button>
        .
      </p>
    );
  }
  if (behind) {
    return (
      <p class="outcome muted" role="status">
        forge.toml changed since you began editing; a save now would be refused.{" "}
        <button type="button" onClick={() => saves.reload()}>
          Reload, keep my changes
        </button>
      </p>
    );
  }
  return null;
}

type AreaRows = SettingsDocument["areas"][number];

function AreaSection({
  app,
  document,
  area,
  rows,
}: {
  app: App;
  document: SettingsDocument;
  area: AreaRows;
  rows: Map<string, Located>;
}) {
  const repeated = area.id === "projects" || area.id === "orgs";
  if (!repeated) {
    return (
      <fieldset class="area" data-area={area.id}>
        <legend>{area.name}</legend>
        {area.note ? <p class="muted note">{area.note}</p> : null}
        {area.keys.map((key) => (
          <KeyRow key={key.path} app={app} document={document} row={key} located={rows.get(key.path)} />
        ))}
      </fieldset>
    );
  }
  const entries = new Map<string, SettingsKey[]>();
  for (const key of area.keys) {
    const path = entryPath(area.id, key.group);
    entries.set(path, [...(entries.get(path) ?? []), key]);
  }
  return (
    <fieldset class="area" data-area={area.id}>
      <legend>{area.name}</legend>
      {area.note ? <p class="muted note">{area.note}</p> : null}
      {[...entries].map(([path, keys]) => (
        <EntrySection key={path} app={app} document={document} path={path} keys={keys} rows={rows} />
      ))}
      <AddEntry app={app} document={document} area={area.id} />
    </fieldset>
  );
}

function EntrySection({
  app,
  document,
  path,
  keys,
  rows,
}: {
  app: App;
  document: SettingsDocument;
  path: string;
  keys: SettingsKey[];
  rows: Map<string, Located>;
}) {
  const saves = savesOf(app);
  const removed = saves.draft.removed.has(path);
  const outcome = saves.outcome;
  const refusal = outcome.state === "refused" && outcome.keyPath === path ? outcome.message : null;
  return (
    <div class={`entry ${removed ? "removed" : ""}`} data-entry={path}>
      <div class="entryhead">
        <h3>{keys[0]?.group.join(" / ")}</h3>
        <button
          type="button"
          aria-pressed={removed}
          onClick={() => {
            saves.draft.toggleRemoved(document, path);
            saves.touched(path);
          }}
        >
          {removed ? "Keep" : "Remove"}
        </button>
      </div>
      {removed ? <p class="muted">Removed when you save.</p> : null}
      {refusal ? (
        <p class="refusal" role="alert">
          {refusal}
        </p>
      ) : null}
      {keys.map((key) => (
        <KeyRow
          key={key.path}
          app={app}
          document={document}
          row={key}
          located={rows.get(key.path)}
          disabled={removed}
        />
      ))}
    </div>
  );
}

function KeyRow({
  app,
  document,
  row,
  located,
  disabled = false,
}: {
  app: App;
  document: SettingsDocument;
  row: SettingsKey;
  located: Located | undefined;
  disabled?: boolean;
}) {
  const saves = savesOf(app);
  const id = domId(row.path);
  const outcome = saves.outcome;
  const refusal = outcome.state === "refused" && outcome.keyPath === row.path ? outcome.message : null;
  const changed = saves.draft.typed.has(row.path);
  const typed = located ? saves.draft.shown(located) : null;
  const local = located ? numberProblem(located.edit, typed) : null;
  const set = (value: Typed) => {
    if (!located) return;
    saves.draft.set(document, located, value);
    saves.touched(row.path);
  };
  const hintId = `${id}-hint`;
  return (
    <div class={`setting ${changed ? "changed" : ""}`} data-key={row.path}>
      <label class="key" for={id}>
        {row.group.length ? <span class="sr">{row.group.join(" / ")} </span> : null}
        {row.leaf}
        {changed ? <span class="dot" aria-label="changed" title="changed, not saved" /> : null}
      </label>
      <div class="control">
        {located ? (
          <Control id={id} located={located} typed={typed} set={set} disabled={disabled} hintId={hintId} />
        ) : (
          <span class="muted">{JSON.stringify(row.value)} (edit the file)</span>
        )}
        {refusal ? (
          <p class="refusal" role="alert" id={hintId} data-refusal>
            {refusal}
          </p>
        ) : local ? (
          <p class="hint warn" id={hintId}>
            {local}
          </p>
        ) : located?.edit.bounds ? (
          <p class="hint muted" id={hintId}>
            {located.edit.bounds.expected}
          </p>
        ) : null}
        {located && isNameKey(located.area, row.leaf) ? <p class="hint muted">changing it renames the project</p> : null}
      </div>
      <span class={`class class-${row.class}`}>{CLASS_WORDS[row.class] ?? row.class}</span>
    </div>
  );
}

function Control({
  id,
  located,
  typed,
  set,
  disabled,
  hintId,
}: {
  id: string;
  located: Located;
  typed: Typed;
  set: (value: Typed) => void;
  disabled: boolean;
  hintId: string;
}) {
  const { edit } = located;
  switch (edit.kind) {
    case "bool":
      return (
        <input
          id={id}
          type="checkbox"
          role="switch"
          class="switch"
          checked={typed === true}
          aria-checked={typed === true}
          disabled={disabled}
          onChange={(event) => set(event.currentTarget.checked)}
        />
      );
    case "enum":
      return (
        <select
          id={id}
          value={typeof typed === "string" ? typed : ""}
          disabled={disabled}
          onChange={(event) => set(event.currentTarget.value === "" ? null : event.currentTarget.value)}
        >
          {edit.required ? null : <option value="">unset (the default)</option>}
          {(edit.allowed ?? []).map((name) => (
            <option key={name} value={name}>
              {name}
            </option>
          ))}
        </select>
      );
    case "list":
      return (
        <textarea
          id={id}
          rows={Math.max(2, String(typed ?? "").split("\n").length)}
          value={String(typed ?? "")}
          placeholder="one per line"
          disabled={disabled}
          aria-describedby={hintId}
          onInput={(event) => set(event.currentTarget.value)}
        />
      );
    case "number": {
      const bounds = edit.bounds;
      return (
        <input
          id={id}
          type="text"
          inputMode={bounds?.integer ? "numeric" : "decimal"}
          value={String(typed ?? "")}
          placeholder={edit.required ? "" : "unset"}
          disabled={disabled}
          aria-describedby={hintId}
          aria-invalid={numberProblem(edit, typed) !== null}
          onInput={(event) => set(event.currentTarget.value)}
        />
      );
    }
    default:
      return (
        <input
          id={id}
          type="text"
          value={String(typed ?? "")}
          placeholder={edit.required ? "" : "unset"}
          disabled={disabled}
          aria-describedby={hintId}
          autocomplete="off"
          onInput={(event) => set(event.currentTarget.value)}
        />
      );
  }
}

/** A new `[[projects]]` entry (org, name, path) or `[orgs.<name>]` table, added by the save. */
function AddEntry({ app, document, area }: { app: App; document: SettingsDocument; area: string }) {
  const saves = savesOf(app);
  const [org, setOrg] = useState("");
  const [name, setName] = useState("");
  const [path, setPath] = useState("");
  const project = area === "projects";
  const pending = saves.draft.added.filter((entry) => entry.area === area);
  const add = () => {
    const entry: NewEntry | null = project
      ? org.trim() && name.trim() && path.trim()
        ? {
            area,
            key_path: `projects.${org.trim()}.${name.trim()}`,
            fields: { org: org.trim(), name: name.trim(), path: path.trim() },
          }
        : null
      : name.trim()
        ? { area, key_path: `orgs.${name.trim()}`, fields: {} }
        : null;
    if (!entry) return;
    saves.draft.add(document, entry);
    saves.touched(entry.key_path);
    setOrg("");
    setName("");
    setPath("");
  };
  const outcome = saves.outcome;
  return (
    <div class="addentry">
      {pending.map((entry) => (
        <div class="entry added" key={entry.key_path} data-entry={entry.key_path}>
          <div class="entryhead">
            <h3>{entry.key_path.slice(area.length + 1)} (new)</h3>
            <button
              type="button"
              onClick={() => {
                saves.draft.unadd(entry.key_path);
                saves.touched(entry.key_path);
              }}
            >
              Cancel
            </button>
          </div>
          {Object.entries(entry.fields).map(([leaf, value]) => (
            <p key={leaf} class="muted">
              {leaf} = {JSON.stringify(value)}
            </p>
          ))}
          {outcome.state === "refused" && outcome.keyPath === entry.key_path ? (
            <p class="refusal" role="alert">
              {outcome.message}
            </p>
          ) : null}
        </div>
      ))}
      <details>
        <summary>{project ? "Add a project" : "Add an org"}</summary>
        <div
          class="addform"
          onKeyDown={(event) => {
            if (event.key === "Enter") {
              event.preventDefault(); // Enter here adds the entry; it does not save the page
              add();
            }
          }}
        >
          {project ? (
            <label>
              org
              <input value={org} onInput={(event) => setOrg(event.currentTarget.value)} autocomplete="off" />
            </label>
          ) : null}
          <label>
            name
            <input value={name} onInput={(event) => setName(event.currentTarget.value)} autocomplete="off" />
          </label>
          {project ? (
            <label>
              path
              <input value={path} onInput={(event) => setPath(event.currentTarget.value)} autocomplete="off" />
            </label>
          ) : null}
          <button type="button" onClick={add}>
            Add
          </button>
        </div>
      </details>
    </div>
  );
}
