// A seat's files on the wire (docs/protocol.md, "Subjects" → session, and "A seat's files"):
// the work row, the git layer, the capped diff, and the document/file answers. No I/O here.

import type { ServerDocumentList, ServerDocumentRead } from "./gen/protocol";

export type FileStatus =
  | "modified"
  | "added"
  | "deleted"
  | "renamed"
  | "copied"
  | "typechange"
  | "unmerged"
  | "untracked";

export interface FileStat {
  path: string;
  old_path: string | null;
  status: FileStatus;
  added: number | null;
  removed: number | null;
}

export interface Stats {
  files: number;
  added: number;
  removed: number;
  busiest: FileStat[];
}

export interface Commit {
  sha: string;
  subject: string;
  committed_at: number;
  stats: Stats;
}

export interface GitLayer {
  default_branch: string | null;
  worktree: { files: FileStat[]; truncated: boolean; stats: Stats } | null;
  ahead: { commit_count: number; behind: number; commits: Commit[]; truncated: boolean; stats: Stats } | null;
  base: "local" | "unverified" | null;
  base_error: string | null;
}

export interface DiffLine {
  kind: "context" | "added" | "removed";
  text: string;
  old: number | null;
  new: number | null;
}

export interface Hunk {
  old_start: number;
  old_count: number;
  new_start: number;
  new_count: number;
  section: string;
  lines: DiffLine[];
}

export interface DiffFile {
  path: string;
  old_path: string | null;
  status: FileStatus;
  binary: boolean;
  submodule: boolean;
  truncated: boolean;
  hunks: Hunk[];
}

export type DiffLayer =
  | { state: "clean" }
  | { state: "scan_failed"; why: string }
  | { state: "populated"; files: DiffFile[]; files_total: number; capped: { files: boolean; bytes: boolean } };

export interface Diff {
  worktree: DiffLayer;
  branch_ahead: DiffLayer | null;
  base: "local" | "unverified" | null;
  base_error: string | null;
}

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
