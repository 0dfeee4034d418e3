// A seat's files: its work row, the Changes pane (the git layer's files, ahead/behind, the capped
// diff of one file at a time). The list follows `work_changed` pushes; the diff is not pushed, so
// a push that moved the tree reads the session again for it (docs/protocol.md, "session").

import "./files.css";

import { useEffect, useRef, useState } from "preact/hooks";

import type { App } from "./app";
import { FileDiff, LayerNotes } from "./diff";
import { STATUS_LETTER, type Diff, type DiffLayer, type FileStat, type GitLayer } from "./gitwire";
import { sameSeat, type Seat, type Session } from "./wire";

export function heldSession(app: App, seat: Seat): Session | null {
  return app.session && sameSeat(app.session.slot, seat) ? app.session : null;
}

/** The seat's branch and changed count, beside its name. */
export function SeatWork({ app, seat }: { app: App; seat: Seat }) {
  const work = heldSession(app, seat)?.work ?? app.agent(seat)?.work ?? null;
  if (!work) return null;
  if (!work.branch && !work.changed) {
    return <span class="seatwork muted">{work.gate ? "detached" : "no git"}</span>;
  }
  return (
    <span class="seatwork" data-work-changed={work.changed}>
      <span class="branch">{work.branch ?? "detached"}</span>{" "}
      {work.changed ? <span class="changed">{work.changed} changed</span> : <span class="muted">clean</span>}
    </span>
  );
}

/** Read the session again when a push moved the tree after the diff in hand was read; true while
 * the diff in hand is older than the tree's last push. */
function useFreshDiff(app: App, session: Session | null): boolean {
  const seen = useRef<{ diff: Diff | null | undefined; git: GitLayer | null | undefined; asked: boolean } | null>(
    null,
  );
  useEffect(() => {
    if (!session) return;
    const last = seen.current;
    if (!last || session.diff !== last.diff) {
      seen.current = { diff: session.diff, git: session.git, asked: false };
      return;
    }
    if (session.git !== last.git && !last.asked) {
      seen.current = { ...last, asked: true };
      app.refreshSession();
    }
  }, [app, session, session?.diff, session?.git]);
  const last = seen.current;
  return !!session && !!last && session.diff === last.diff && session.git !== last.git;
}

type Layer = "worktree" | "branch";

export function ChangesPane({ app, seat }: { app: App; seat: Seat }) {
  const session = heldSession(app, seat);
  const [layer, setLayer] = useState<Layer>("worktree");
  const [open, setOpen] = useState<string | null>(null);
  const diffBehind = useFreshDiff(app, session);
  if (!session) {
    return <p class="muted pad">Reading the seat… (a seat starts when its terminal opens)</p>;
  }
  const work = session.work;
  const git = session.git ?? null;
  if (!work?.gate || !git) {
    return <p class="muted pad">This seat's folder is not a git repository: there are no changes to show.</p>;
  }
  const diffLayer = layer === "worktree" ? session.diff?.worktree : (session.diff?.branch_ahead ?? undefined);
  const files: FileStat[] =
    layer === "worktree" ? (git.worktree?.files ?? []) : diffFiles(session.diff?.branch_ahead ?? null);
  const chosen = diffLayer?.state === "populated" ? diffLayer.files.find((file) => file.path === open) : undefined;
  return (
    <div class="changes pad" data-view="changes">
      <div class="changeside">
        <GitSummary git={git} branch={work.branch} changed={work.changed} />
        <div class="layers" role="tablist" aria-label="which changes">
          <button type="button" role="tab" aria-selected={layer === "worktree"} onClick={() => setLayer("worktree")}>
            Uncommitted ({git.worktree?.stats.files ?? 0})
          </button>
          {git.ahead ? (
            <button type="button" role="tab" aria-selected={layer === "branch"} onClick={() => setLayer("branch")}>
              On the branch ({git.ahead.stats.files})
            </button>
          ) : null}
        </div>
        {files.length === 0 ? (
          <p class="muted" data-clean>
            {layer === "worktree" ? "Nothing uncommitted: the tree matches HEAD." : "No file differs from the base."}
          </p>
        ) : (
          <ul class="filelist" aria-label="changed files">
            {files.map((file) => (
              <li key={file.path} data-file={file.path} data-status={file.status}>
                <button
                  type="button"
                  aria-expanded={open === file.path}
                  onClick={() => setOpen(open === file.path ? null : file.path)}
                >
                  <span class={`status status-${file.status}`} title={file.status}>
                    {STATUS_LETTER[file.status]}
                  </span>
                  <span class="filepath">
                    {file.old_path ? <span class="muted">{file.old_path} → </span> : null}
                    {file.path}
                  </span>
                  <span class="counts">
                    {file.added !== null ? <span class="plus">+{file.added}</span> : null}
                    {file.removed !== null ? <span class="minus">−{file.removed}</span> : null}
                    {file.added === null && file.removed === null ? <span class="muted">{file.status}</span> : null}
                  </span>
                </button>
              </li>
            ))}
          </ul>
        )}
        {layer === "worktree" && git.worktree?.truncated ? (
          <p class="capnote" data-cap>
            {git.worktree.stats.files} files changed; the list shows the first {git.worktree.files.length}.
          </p>
        ) : null}
        {layer === "branch" && git.ahead ? <Commits git={git} /> : null}
      </div>
      <div class="diffside">
        {diffBehind ? <p class="muted">The tree moved: reading its diff again…</p> : null}
        {diffLayer ? <LayerNotes layer={diffLayer} /> : null}
        {open ? (
          chosen ? (
            <FileDiff file={chosen} />
          ) : (
            <p class="capnote">
              {session.diff && !diffBehind
                ? `No lines of ${open} are carried: the diff stopped before it.`
                : "Reading the diff…"}
            </p>
          )
        ) : files.length ? (
          <p class="muted">Choose a file to read its diff.</p>
        ) : null}
      </div>
    </div>
  );
}

function diffFiles(layer: DiffLayer | null): FileStat[] {
  if (layer?.state !== "populated") return [];
  return layer.files.map((file) => {
    const lines = file.hunks.flatMap((hunk) => hunk.lines);
    return {
      path: file.path,
      old_path: file.old_path,
      status: file.status,
      added: file.binary ? null : lines.filter((line) => line.kind === "added").length,
      removed: file.binary ? null : lines.filter((line) => line.kind === "removed").length,
    };
  });
}

function GitSummary({ git, branch, changed }: { git: GitLayer; branch: string | null; changed: number }) {
  const ahead = git.ahead;
  const stats = git.worktree?.stats;
  return (
    <div class="gitsummary">
      <p>
        <span class="branch">{branch ?? "detached HEAD"}</span>
        {" · "}
        <span data-changed={changed}>{changed ? `${changed} changed` : "clean"}</span>
        {stats ? (
          <span class="muted">
            {" "}
            (<span class="plus">+{stats.added}</span> <span class="minus">−{stats.removed}</span>)
          </span>
        ) : null}
      </p>
      {git.default_branch ? (
        <p class="muted" data-ahead={ahead?.commit_count ?? 0} data-behind={ahead?.behind ?? 0}>
          {ahead ? `${ahead.commit_count} ahead, ${ahead.behind} behind` : "level with"} {git.default_branch}
          {git.base === "unverified" ? " (as last fetched: this server never fetches)" : ""}
        </p>
      ) : (
        <p class="muted">Nothing to measure the branch against: no upstream, no origin/HEAD, no other main or master.</p>
      )}
      {git.base_error ? (
        <p class="capnote bad" role="alert">
          git could not measure the branch: {git.base_error}
        </p>
      ) : null}
    </div>
  );
}

function Commits({ git }: { git: GitLayer }) {
  const ahead = git.ahead;
  if (!ahead) return null;
  return (
    <section class="commits" aria-label="commits on the branch">
      <h3>
        {ahead.commit_count} commit{ahead.commit_count === 1 ? "" : "s"} not on {git.default_branch}
      </h3>
      <ul>
        {ahead.commits.map((commit) => (
          <li key={commit.sha}>
            <code>{commit.sha}</code> {commit.subject}{" "}
            <span class="muted">{new Date(commit.committed_at * 1000).toLocaleString()}</span>
          </li>
        ))}
      </ul>
      {ahead.truncated ? <p class="capnote">Only the newest {ahead.commits.length} are listed.</p> : null}
    </section>
  );
}
