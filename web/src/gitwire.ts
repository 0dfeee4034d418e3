// A seat's files on the wire (docs/protocol.md, "Subjects" → session, and "A seat's files"):
// the work row, the git layer, the capped diff, and the document/file answers. No I/O here.

import type { Diff, FileStat, ServerDocumentList, ServerDocumentRead } from "./gen/protocol";

export type {
  Commit,
  Diff,
  DiffFile,
  FileStat,
  GitLayer,
  Hunk,
  Line as DiffLine,
  Stats,
} from "./gen/protocol";

export type FileStatus = FileStat["status"];
export type DiffLayer = Diff["worktree"];

export type DocumentKind = ServerDocumentRead["document_kind"];

/** `document_read`'s answer. */
export type DocumentAnswer = ServerDocumentRead;

/** `document_list`'s answer: the documents under `root`, each `path` relative to it. */
export type DocumentListing = ServerDocumentList;

/** The letter a file list shows for a status, as `git status --short` would. */
export const STATUS_LETTER: Record<FileStatus, string> = {
  modified: "M",
  added: "A",
  deleted: "D",
  renamed: "R",
  copied: "C",
  typechange: "T",
  unmerged: "U",
  untracked: "?",
};

/** A document's bytes (base64) as text, or null when they are not UTF-8. */
export function documentText(bytes: string): string | null {
  const raw = Uint8Array.from(atob(bytes), (char) => char.charCodeAt(0));
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(raw);
  } catch {
    return null;
  }
}

export function byteLength(bytes: string): number {
  const padding = bytes.endsWith("==") ? 2 : bytes.endsWith("=") ? 1 : 0;
  return (bytes.length / 4) * 3 - padding;
}

export function kindName(kind: DocumentKind): string {
  return typeof kind === "string" ? kind : `.${kind.other}`;
}
