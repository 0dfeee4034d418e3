// The document reader: `document_read` of a path in the seat's tree or its project's document
// roots, drawn as text. Markdown stays as written (preformatted), its headings, lists, quotes and
// code told apart by style only: every character is a text node, nothing is parsed into HTML.

import { useEffect, useState } from "preact/hooks";

import type { App, Surface } from "./app";
import { heldSession } from "./files";
import { byteLength, documentText, kindName, type DocumentAnswer } from "./gitwire";
import type { Seat, ServerMessage } from "./wire";

type Reading =
  | { state: "idle" }
  | { state: "reading"; path: string }
  | { state: "read"; answer: DocumentAnswer }
  | { state: "failed"; path: string; why: string };

/** Catches the answers to this pane's reads while it is on screen. */
class DocumentReads implements Surface {
  onAnswer: (reading: Reading) => void = () => undefined;
  private asked: string | null = null;

  constructor(
    private readonly app: App,
    private readonly seat: Seat,
  ) {}

  read(path: string): boolean {
    this.asked = path;
    return this.app.send({ kind: "document_read", session: this.seat, path });
  }

  message(message: ServerMessage): boolean {
    const asked = this.asked;
    if (message.kind === "document_read") {
      if (asked === null) return true;
      this.asked = null;
      this.onAnswer({ state: "read", answer: message as unknown as DocumentAnswer });
      return true;
    }
    if (message.kind === "error" && message.what === "document_read") {
      if (asked !== null) {
        this.asked = null;
        this.onAnswer({ state: "failed", path: asked, why: String(message.why) });
      }
      return true;
    }
    return false;
  }

  binary(): void {
    // documents cross as JSON only
  }

  relink(): void {
    if (this.asked !== null) {
      const path = this.asked;
      this.asked = null;
      this.onAnswer({ state: "failed", path, why: "the link dropped before the answer; read it again" });
    }
  }
}

const TEXT_FILE = /\.(md|markdown|mdown|mkd|txt|text)$/i;

export function DocsPane({ app, seat }: { app: App; seat: Seat }) {
  const [reads, setReads] = useState<DocumentReads | null>(null);
  const [path, setPath] = useState("");
  const [reading, setReading] = useState<Reading>({ state: "idle" });
  useEffect(() => {
    const made = new DocumentReads(app, seat);
    made.onAnswer = setReading;
    app.addSurface(made);
    setReads(made);
    return () => app.removeSurface(made);
  }, [app, seat]);
  const read = (wanted: string) => {
    const clean = wanted.trim();
    if (!clean || !reads) return;
    setPath(clean);
    setReading(
      reads.read(clean) ? { state: "reading", path: clean } : { state: "failed", path: clean, why: "not connected" },
    );
  };
  const session = heldSession(app, seat);
  const changedDocs = (session?.git?.worktree?.files ?? [])
    .filter((file) => file.status !== "deleted" && TEXT_FILE.test(file.path))
    .map((file) => file.path);
  const roots = documentRoots(app, seat);
  return (
    <div class="docs pad" data-view="docs">
      <form
        class="docask"
        onSubmit={(event) => {
          event.preventDefault();
          read(path);
        }}
      >
        <label for="docpath">Document</label>
        <input
          id="docpath"
          type="text"
          value={path}
          placeholder="plan.md, docs/notes.txt, or an absolute path in a document root"
          autocomplete="off"
          autocapitalize="off"
          spellcheck={false}
          onInput={(event) => setPath(event.currentTarget.value)}
        />
        <button type="submit" class="primary" disabled={!path.trim()}>
          Read
        </button>
      </form>
      {changedDocs.length || roots.length ? (
        <div class="docpicks">
          {changedDocs.map((file) => (
            <button type="button" key={file} onClick={() => read(file)}>
              {file}
            </button>
          ))}
          {roots.map((root) => (
            <button type="button" key={root} class="root" onClick={() => setPath(`${root.replace(/\/$/, "")}/`)}>
              {root}/…
            </button>
          ))}
        </div>
      ) : null}
      <p class="muted hint">
        A relative path is read from the seat's tree; an absolute one must lie in the tree or one of the project's
        document roots.
      </p>
      <DocumentView reading={reading} />
    </div>
  );
}

function documentRoots(app: App, seat: Seat): string[] {
  const path = `projects.${seat.org}.${seat.project}.document_roots`;
  for (const area of app.settings?.areas ?? []) {
    const value = area.keys.find((key) => key.path === path)?.value;
    if (Array.isArray(value)) return value.filter((root): root is string => typeof root === "string");
  }
  return [];
}

function DocumentView({ reading }: { reading: Reading }) {
  if (reading.state === "idle") return null;
  if (reading.state === "reading") return <p class="muted">Reading {reading.path}…</p>;
  if (reading.state === "failed") {
    return (
      <p class="capnote bad" role="alert" data-doc-error>
        {reading.why}
      </p>
    );
  }
  const { answer } = reading;
  const kind = answer.document_kind;
  const text = kind === "markdown" || kind === "text" ? documentText(answer.bytes) : null;
  return (
    <article class="document" data-document={answer.path} aria-label={answer.path}>
      <header>
        <h3>{answer.path}</h3>
        <span class="muted">
          {kindName(kind)} · {byteLength(answer.bytes)} bytes
        </span>
      </header>
      {text === null ? (
        <p class="capnote">
          This page shows markdown and text documents; this one is {kindName(kind)}
          {kind === "pdf" ? " (open it on the workstation)" : ""}.
        </p>
      ) : kind === "markdown" ? (
        <Markdownish text={text} />
      ) : (
        <pre class="doctext">{text}</pre>
      )}
    </article>
  );
}

type LineKind = "h1" | "h2" | "h3" | "item" | "quote" | "fence" | "code" | "rule" | "text" | "blank";

/** Each line's role in a markdown document, by its leading marks (fences open and close code). */
export function markdownLines(text: string): { kind: LineKind; text: string }[] {
  let fenced = false;
  return text.split("\n").map((line) => {
    if (/^\s*(```|~~~)/.test(line)) {
      fenced = !fenced;
      return { kind: "fence", text: line };
    }
    if (fenced) return { kind: "code", text: line };
    const heading = /^(#{1,6})\s/.exec(line);
    if (heading) {
      const level = heading[1]?.length ?? 3;
      return { kind: level === 1 ? "h1" : level === 2 ? "h2" : "h3", text: line };
    }
    if (/^\s*([-*+]|\d+[.)])\s/.test(line)) return { kind: "item", text: line };
    if (/^\s*>/.test(line)) return { kind: "quote", text: line };
    if (/^\s*([-*_])(\s*\1){2,}\s*$/.test(line)) return { kind: "rule", text: line };
    if (/^ {4}|^\t/.test(line)) return { kind: "code", text: line };
    return { kind: line.trim() ? "text" : "blank", text: line };
  });
}

function Markdownish({ text }: { text: string }) {
  return (
    <div class="markdownish" data-markdown>
      {markdownLines(text).map((line, index) => (
        <div class={`md md-${line.kind}`} key={index}>
          {line.kind === "text" || line.kind === "item" || line.kind === "quote" ? (
            <Inline text={line.text} />
          ) : (
            line.text || " "
          )}
        </div>
      ))}
    </div>
  );
}

/** `code` spans set in monospace; everything else as written. */
function Inline({ text }: { text: string }) {
  const parts = text.split(/(`[^`]+`)/);
  return (
    <>
      {parts.map((part, index) =>
        part.startsWith("`") && part.endsWith("`") && part.length > 2 ? <code key={index}>{part}</code> : part,
      )}
    </>
  );
}
