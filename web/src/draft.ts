// The settings page's draft: what the person changed, kept as they typed it, turned into one
// `settings_edit` (docs/protocol.md, "Editing forge.toml"). Pure: no socket, no DOM.

import type { EditShape, Json, SettingsDocument, SettingsKey } from "./wire";

export interface Edit {
  op: "set" | "add" | "remove";
  area: string;
  key_path: string;
  pattern: string;
  value: Json;
}

/** An entry the draft adds: `key_path` names it as the document will (`projects.acme.web`). */
export interface NewEntry {
  area: string;
  key_path: string;
  fields: Record<string, Json>;
}

/** The keys whose values name a repeated entry: setting one renames the entry. */
const NAME_KEYS: Record<string, string[]> = { projects: ["org", "name"] };

/** A row with the area it belongs to (the document's rows do not repeat it). */
export interface Located {
  area: string;
  key: SettingsKey;
  edit: EditShape;
}

export function locate(document: SettingsDocument): Map<string, Located> {
  const found = new Map<string, Located>();
  for (const area of document.areas) {
    for (const key of area.keys) {
      if (key.edit) found.set(key.path, { area: area.id, key, edit: key.edit });
    }
  }
  return found;
}

export function entryPath(area: string, group: string[]): string {
  return [area, ...group].join(".");
}

export function isNameKey(area: string, leaf: string): boolean {
  return NAME_KEYS[area]?.includes(leaf) ?? false;
}

/** A value as its control holds it: a switch's boolean, an enum's name, else the typed text. */
export type Typed = boolean | string | null;

export function typedOf(edit: EditShape, value: Json): Typed {
  switch (edit.kind) {
    case "bool":
      return value === true;
    case "enum":
      return typeof value === "string" ? value : null;
    case "list":
      return Array.isArray(value) ? value.map(String).join("\n") : "";
    default:
      return value === null ? "" : typeof value === "object" ? JSON.stringify(value) : String(value);
  }
}

/** The value a save sends for what the control holds; text that is no number is sent as typed,
 * so the loader's own message says what is wrong with it. */
export function valueOf(edit: EditShape, typed: Typed): Json {
  if (typeof typed === "boolean" || typed === null) return typed;
  switch (edit.kind) {
    case "enum":
      return typed === "" ? null : typed;
    case "list":
      return typed
        .split("\n")
        .map((line) => line.trim())
        .filter((line) => line !== "");
    case "number": {
      const text = typed.trim();
      if (text === "") return null;
      const number = Number(text);
      return Number.isFinite(number) ? number : text;
    }
    default:
      return typed === "" && !edit.required ? null : typed;
  }
}

/** What is wrong with a number as typed, before any save (the server still decides). */
export function numberProblem(edit: EditShape, typed: Typed): string | null {
  const bounds = edit.bounds;
  if (edit.kind !== "number" || !bounds || typeof typed !== "string" || typed.trim() === "") return null;
  const number = Number(typed.trim());
  const wrong =
    !Number.isFinite(number) ||
    (bounds.integer && !Number.isInteger(number)) ||
    (bounds.min !== null && (bounds.integer ? number < bounds.min : number <= bounds.min)) ||
    (bounds.max !== null && number > bounds.max);
  return wrong ? `expected ${bounds.expected}` : null;
}

export class Draft {
  /** The fingerprint the draft was begun against: a save is checked against it. */
  base: string | null = null;
  readonly typed = new Map<string, Typed>();
  readonly removed = new Set<string>();
  added: NewEntry[] = [];

  get size(): number {
    return this.typed.size + this.removed.size + this.added.length;
  }

  get empty(): boolean {
    return this.size === 0;
  }

  /** What the control for `key` holds: the draft's text, else the document's value. */
  shown(located: Located): Typed {
    const typed = this.typed.get(located.key.path);
    return typed === undefined ? typedOf(located.edit, located.key.value) : typed;
  }

  set(document: SettingsDocument, located: Located, typed: Typed): void {
    this.begin(document);
    if (typed === typedOf(located.edit, located.key.value)) this.typed.delete(located.key.path);
    else this.typed.set(located.key.path, typed);
  }

  toggleRemoved(document: SettingsDocument, entry: string): void {
    this.begin(document);
    if (!this.removed.delete(entry)) this.removed.add(entry);
  }

  add(document: SettingsDocument, entry: NewEntry): void {
    this.begin(document);
    this.added = [...this.added.filter((other) => other.key_path !== entry.key_path), entry];
  }

  unadd(keyPath: string): void {
    this.added = this.added.filter((entry) => entry.key_path !== keyPath);
  }

  clear(): void {
    this.base = null;
    this.typed.clear();
    this.removed.clear();
    this.added = [];
  }

  /** Take the document as it is now (someone else saved): keep the changes that still differ. */
  rebase(document: SettingsDocument): void {
    this.base = document.fingerprint;
    const rows = locate(document);
    for (const [path, typed] of this.typed) {
      const located = rows.get(path);
      if (!located || typed === typedOf(located.edit, located.key.value)) this.typed.delete(path);
    }
    for (const entry of this.removed) {
      if (![...rows.keys()].some((path) => path.startsWith(`${entry}.`))) this.removed.delete(entry);
    }
  }

  /** One save's edits, in an order the server can apply: plain sets, then renames (each entry's
   * later name keys addressed by its new path), then removals, then additions. `sent` maps each
   * edit's key_path back to the draft's, for placing a refusal beside its control. */
  edits(document: SettingsDocument): { edits: Edit[]; sent: Map<string, string> } {
    const rows = locate(document);
    const edits: Edit[] = [];
    const sent = new Map<string, string>();
    const renames = new Map<string, Located[]>();
    for (const [path, typed] of this.typed) {
      const located = rows.get(path);
      if (!located) continue;
      const { area, key, edit } = located;
      const entry = entryPath(area, key.group);
      if (key.group.length && this.removed.has(entry)) continue;
      if (isNameKey(area, key.leaf)) {
        renames.set(entry, [...(renames.get(entry) ?? []), located]);
        continue;
      }
      edits.push({ op: "set", area, key_path: path, pattern: key.pattern, value: valueOf(edit, typed) });
    }
    for (const located of renames.values()) {
      const names = NAME_KEYS[located[0]?.area ?? ""] ?? [];
      located.sort((a, b) => names.indexOf(a.key.leaf) - names.indexOf(b.key.leaf));
      const group = [...(located[0]?.key.group ?? [])];
      for (const { area, key, edit } of located) {
        const keyPath = [area, ...group, key.leaf].join(".");
        const value = valueOf(edit, this.typed.get(key.path) ?? null);
        edits.push({ op: "set", area, key_path: keyPath, pattern: key.pattern, value });
        sent.set(keyPath, key.path);
        group[names.indexOf(key.leaf)] = typeof value === "string" ? value : JSON.stringify(value);
      }
    }
    for (const entry of this.removed) {
      const area = entry.split(".", 1)[0] ?? "";
      edits.push({ op: "remove", area, key_path: entry, pattern: "", value: null });
    }
    for (const entry of this.added) {
      edits.push({ op: "add", area: entry.area, key_path: entry.key_path, pattern: "", value: entry.fields });
    }
    return { edits, sent };
  }

  private begin(document: SettingsDocument): void {
    if (this.empty) this.base = document.fingerprint;
  }
}
