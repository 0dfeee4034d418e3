// The document reader: the documents of the seat's tree and of its project's document roots
// (`document_list`), and one of them read (`document_read`): markdown rendered by `markdown.ts`
// (marked, then DOMPurify), text as written, other kinds named.

import { useEffect, useState } from "preact/hooks";

import type { App, Surface } from "./app";
import { heldSession } from "./files";
import {
  byteLength,
  documentText,
  kindName,
  type DocumentAnswer,
  type DocumentListing,
} from "./gitwire";
import { markdownHtml } from "./markdown";
import type { Seat, ServerMessage } from "./wire";

type Reading =
  | { state: "idle" }
  | { state: "reading"; path: string }
  | { state: "read"; answer: DocumentAnswer }
  | { state: "failed"; path: string; why: string };

type Listing =
  | { state: "listing"; root: string | null }
  | { state: "listed"; root: string | null; answer: DocumentListing }
  | { state: "failed"; root: string | null; why: string };

/** Catches the answers to this pane's reads and listings while it is on screen. */
class DocumentReads implements Surface {
  onAnswer: (reading: Reading) => void = () => undefined;
  onListing: (listing: Listing) => void = () => undefined;
  private asked: string | null = null;
  /** The root of the listing asked for (null: the tree), undefined when none is awaited. */
  private listed: string | null | undefined = undefined;

  constructor(
    private readonly app: App,
    private readonly seat: Seat,
  ) {}

  read(path: string): boolean {
    this.asked = path;
    return this.app.send({ kind: "document_read", session: this.seat, path });
  }

  list(root: string | null): boolean {
    this.listed = root;
    return this.app.send({ kind: "document_list", session: this.seat, root });
  }

  message(message: ServerMessage): boolean {
    if (message.kind === "document_list" || (message.kind === "error" && message.what === "document_list")) {
      const root = this.listed;
      // An answer to an earlier ask (the person chose another root meanwhile) is not this one's.
      if (root === undefined || (message.kind === "document_list" && message.asked !== root)) return true;
      this.listed = undefined;
      this.onListing(
        message.kind === "error"
          ? { state: "failed", root, why: message.why }
          : { state: "listed", root, answer: message },
      );
      return true;
    }
    const asked = this.asked;
    if (message.kind === "document_read") {
      if (asked === null) return true;
      this.asked = null;
      this.onAnswer({ state: "read", answer: message });
      return true;
    }
    if (message.kind === "error" && message.what === "document_read") {
      if (asked !== null) {
        this.asked = null;
        this.onAnswer({ state: "failed", path: asked, why: message.why });
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
    if (this.listed !== undefined) this.list(this.listed);
  }
}

export function DocsPane({ app, seat }: { app: App; seat: Seat }) {
  const [reads, setReads] = useState<DocumentReads | null>(null);
  const [path, setPath] = useState("");
  const [reading, setReading] = useState<Reading>({ state: "idle" });
  const [listing, setListing] = useState<Listing>({ state: "listing", root: null });
  const [showList, setShowList] = useState(true);
  useEffect(() => {
    const made = new DocumentReads(app, seat);
    made.onAnswer = setReading;
    made.onListing = setListing;
    app.addSurface(made);
    setReads(made);
    made.list(null);
    return () => app.removeSurface(made);
  }, [app, seat]);
  const read = (wanted: string) => {
    const clean = wanted.trim();
    if (!clean || !reads) return;
    setPath(clean);
    setShowList(false);
    setReading(
      reads.read(clean) ? { state: "reading", path: clean } : { state: "failed", path: clean, why: "not connected" },
    );
  };
  const list = (root: string | null) => {
    if (!reads) return;
    setShowList(true);
    setListing(reads.list(root) ? { state: "listing", root } : { state: "failed", root, why: "not connected" });
  };
  const changed = new Set(
    (heldSession(app, seat)?.git?.worktree?.files ?? []).filter((file) => file.status !== "deleted").map((file) => file.path),
  );
  const roots = documentRoots(app, seat);
  return (
    <div class="docs pad" data-view="docs">
      <div class="docroots" role="group" aria-label="folders">
        <button type="button" aria-pressed={listing.root === null} onClick={() => list(null)}>
          This tree
        </button>
        {roots.map((root) => (
          <button type="button" key={root} aria-pressed={listing.root === root} title={root} onClick={() => list(root)}>
            {root}
          </button>
        ))}
      </div>
      <details
        class="doclisting"
        open={showList}
        onToggle={(event) => setShowList(event.currentTarget.open)}
      >
        <summary>{listingSummary(listing)}</summary>
        <DocumentList listing={listing} changed={changed} read={read} />
      </details>
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
      <p class="muted hint">
        A relative path is read from the seat's tree; an absolute one must lie in the tree or one of the project's
        document roots.
      </p>
      <DocumentView reading={reading} />
    </div>
  );
}

function listingSummary(listing: Listing): string {
  const where = listing.root ?? "this tree";
  if (listing.state === "listing") return `Listing ${where}…`;
  if (listing.state === "failed") return `${where}: not listed`;
  const count = listing.answer.documents.length;
  const more = listing.answer.truncated ? "+" : "";
  return `${count}${more} document${count === 1 ? "" : "s"} in ${where}`;
}

/** The listed root's documents, each a button that reads it; the tree's changed ones marked. */
function DocumentList({
  listing,
  changed,
  read,
}: {
  listing: Listing;
  changed: Set<string>;
  read: (path: string) => void;
}) {
  if (listing.state === "listing") return null;
  if (listing.state === "failed") {
    return (
      <p class="capnote bad" role="alert" data-list-error>
        {listing.why}
      </p>
    );
  }
  const { answer } = listing;
  if (!answer.documents.length) return <p class="muted">No markdown, text or PDF documents here.</p>;
  return (
    <>
      <ul class="doclist" data-listed={answer.root}>
        {answer.documents.map((document) => {
          const isChanged = listing.root === null && changed.has(document.path);
          return (
            <li key={document.path}>
              <button type="button" data-doc={document.path} onClick={() => read(`${answer.root}/${document.path}`)}>
                <span class="filepath">{document.path}</span>
                {isChanged ? <span class="changed">changed</span> : null}
                <span class="muted">{kindName(document.document_kind)}</span>
              </button>
            </li>
          );
        })}
      </ul>
      {answer.truncated ? (
        <p class="capnote">More documents lie here than are listed; type a path below to read one.</p>
      ) : null}
    </>
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
        <Markdown text={text} />
      ) : (
        <pre class="doctext">{text}</pre>
      )}
    </article>
  );
}

/** Rendered markdown: marked's HTML, sanitized by DOMPurify before it is inserted. */
function Markdown({ text }: { text: string }) {
  return <div class="markdown" data-markdown dangerouslySetInnerHTML={{ __html: markdownHtml(text) }} />;
}
