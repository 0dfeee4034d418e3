// The Lab page: the cohort runs this supervisor started (the `lab` subject, held while the page
// is on screen), one run's attempts with each running attempt's live process tree, and Stop
// (`lab_stop`, as Ctrl-C in `forge evaluate` stops it: in-flight attempts discarded, resumable);
// an ended run's report.html (`lab_report`) in a sandboxed frame: no script, its own origin.

import "./lab.css";

import { useEffect, useState } from "preact/hooks";

import type { App, Surface } from "./app";
import { foldLab, runEnding, type LabAnswer, type LabAttempt, type LabRun } from "./labwire";
import { ProcessTable } from "./processtable";
import { updateParts, type ServerMessage } from "./wire";

/** The `lab` subject held for the page: its runs, and the runs a stop was asked for. */
export class LabFeed implements Surface {
  runs: LabRun[] | null = null;
  readonly stopping = new Set<string>();

  constructor(readonly app: App) {
    app.addSurface(this);
  }

  dispose(): void {
    this.app.removeSurface(this);
    this.app.send({ kind: "unsubscribe", what: "lab" });
  }

  relink(): void {
    this.app.send({ kind: "subscribe", what: "lab" });
  }

  binary(): void {
    // the Lab crosses as JSON only
  }

  message(message: ServerMessage): boolean {
    if (message.kind === "snapshot" && message.subject === "lab") {
      this.runs = (message.data as { runs: LabRun[] }).runs;
    } else if (message.kind === "update") {
      const [variant, body] = updateParts(message.update);
      const runs = foldLab(this.runs ?? [], variant, body);
      if (runs === null) return false;
      this.runs = runs;
    } else {
      return false;
    }
    for (const run of this.runs) if (run.exit_code !== null) this.stopping.delete(run.run);
    this.app.changed();
    return true;
  }

  /** Ask the supervisor to stop `run` as SIGINT would; its end arrives as `lab_run`. */
  async stop(run: string): Promise<void> {
    this.stopping.add(run);
    this.app.changed();
    let why: string | null;
    try {
      const answer = (await this.app.socket.request({ kind: "lab_stop", run, signal: "SIGINT" })) as LabAnswer;
      why = answer.ok ? null : (answer.why ?? "refused");
    } catch (error) {
      why = error instanceof Error ? error.message : String(error);
    }
    if (why !== null) {
      this.stopping.delete(run);
      this.app.notify(`lab_stop: ${why}`);
    }
  }
}

export function LabPage({ app, run }: { app: App; run: string | null }) {
  const [feed, setFeed] = useState<LabFeed | null>(null);
  useEffect(() => {
    const made = new LabFeed(app);
    setFeed(made);
    return () => made.dispose();
  }, [app]);
  const runs = feed?.runs ?? null;
  if (!feed || runs === null) return <p class="muted pad">Reading the Lab…</p>;
  if (run === null) return <RunList runs={runs} />;
  const shown = runs.find((each) => each.run === run);
  if (!shown) {
    return (
      <p class="pad">
        This supervisor has no run {run} (it lists the latest 20 ended runs; an older one's <code>--out</code> folder
        keeps its records). <a href="#/lab">All runs</a>
      </p>
    );
  }
  return <RunView feed={feed} run={shown} />;
}

/** An ended run's report.html, asked for on a click and shown in a frame that runs no script. */
function ReportLink({ app, run }: { app: App; run: string }) {
  const [page, setPage] = useState<string | null>(null);
  const [why, setWhy] = useState<string | null>(null);
  const open = async () => {
    try {
      const answer = (await app.socket.request({ kind: "lab_report", run })) as LabAnswer;
      if (answer.ok && answer.html !== undefined) setPage(answer.html);
      else setWhy(answer.why ?? "refused");
    } catch (error) {
      setWhy(error instanceof Error ? error.message : String(error));
    }
  };
  if (page !== null) {
    return <iframe class="labreport" title="report.html" sandbox="" srcdoc={page} />;
  }
  return (
    <>
      <button type="button" class="report" onClick={() => void open()}>
        report.html
      </button>
      {why !== null ? <span class="muted"> {why}</span> : null}
    </>
  );
}

function RunList({ runs }: { runs: LabRun[] }) {
  return (
    <div class="lab pad" data-view="lab">
      <h2>Lab runs</h2>
      {runs.length === 0 ? (
        <p class="muted">
          No runs yet. <code>forge evaluate --approve …</code> hands an approved cohort run to this supervisor; it shows
          here while it runs.
        </p>
      ) : null}
      <ul class="labruns">
        {[...runs].reverse().map((run) => (
          <li key={run.run} data-run={run.run} data-status={run.status}>
            <a href={`#/lab/${encodeURIComponent(run.run)}`} class="cohort" title={run.cohort}>
              {shortPath(run.cohort)}
            </a>
            <RunStatusPill run={run} />
            <span class="hypothesis muted">{run.hypothesis}</span>
            <Progress run={run} />
            <span class="muted when">started {clock(run.started_ms)}</span>
            {run.exit_code !== null ? <span class="ending">{runEnding(run)}</span> : null}
          </li>
        ))}
      </ul>
    </div>
  );
}

function RunView({ feed, run }: { feed: LabFeed; run: LabRun }) {
  const live = run.exit_code === null;
  const stopping = feed.stopping.has(run.run);
  const stop = () => {
    const ask = `Stop the run of ${shortPath(run.cohort)}? Its running attempts are discarded; the approve command resumes the run.`;
    if (confirm(ask)) void feed.stop(run.run);
  };
  const running = run.attempts.filter((attempt) => attempt.state === "running");
  return (
    <div class="lab pad" data-view="lab-run" data-run={run.run} data-status={run.status}>
      <div class="labhead">
        <a href="#/lab" class="back" aria-label="all runs">
          ←
        </a>
        <h2 title={run.cohort}>{shortPath(run.cohort)}</h2>
        <RunStatusPill run={run} />
        {live ? (
          <button type="button" class="stop" disabled={stopping} onClick={stop}>
            {stopping ? "Stopping…" : "Stop"}
          </button>
        ) : null}
      </div>
      <p class="hypothesis">{run.hypothesis}</p>
      <dl class="facts">
        <dt>progress</dt>
        <dd>
          <Progress run={run} />
        </dd>
        <dt>accepted</dt>
        <dd>
          {Object.entries(run.accepted)
            .map(([variant, count]) => `${variant} ${count}`)
            .join(" · ")}
        </dd>
        <dt>started</dt>
        <dd>
          {clock(run.started_ms)} · parallel {run.parallel}
        </dd>
        {live ? null : (
          <>
            <dt>ended</dt>
            <dd class="ending">
              {runEnding(run)}
              {run.status === "aborted" ? <span class="muted"> · the approve command resumes it</span> : null}
            </dd>
          </>
        )}
        <dt>out</dt>
        <dd class="path">{run.out}</dd>
        {live ? null : (
          <>
            <dt>report</dt>
            <dd>
              <ReportLink app={feed.app} run={run.run} />
            </dd>
          </>
        )}
        <dt>source</dt>
        <dd class="path">{run.source}</dd>
      </dl>
      <h3>Attempts</h3>
      <div class="table-wrap">
        <table class="attempts">
          <thead>
            <tr>
              <th>task</th>
              <th>variant</th>
              <th class="num">rep</th>
              <th>state</th>
              <th>runner</th>
              <th>outcome</th>
            </tr>
          </thead>
          <tbody>
            {run.attempts.map((attempt) => (
              <AttemptRow attempt={attempt} key={attempt.label} />
            ))}
          </tbody>
        </table>
      </div>
      {running.length ? <h3>Running</h3> : null}
      {running.map((attempt) => (
        <section class="attemptprocs" data-attempt={attempt.label} key={attempt.label} aria-label={attempt.label}>
          <h4>
            {attempt.label} <span class="muted">{attempt.runner ?? "starting…"}</span>
          </h4>
          {attempt.processes ? (
            <ProcessTable rows={attempt.processes} />
          ) : (
            <p class="muted">Reading its processes…</p>
          )}
        </section>
      ))}
    </div>
  );
}

function AttemptRow({ attempt }: { attempt: LabAttempt }) {
  const outcome = attempt.outcome ?? "";
  const kind = outcome.startsWith("invalid") ? "invalid" : outcome;
  return (
    <tr data-attempt={attempt.label} data-state={attempt.state}>
      <td data-label="task">{attempt.task}</td>
      <td data-label="variant">{attempt.variant}</td>
      <td data-label="rep" class="num">
        {attempt.repetition}
      </td>
      <td data-label="state">
        <span class={`state state-${attempt.state}`}>{attempt.state}</span>
      </td>
      <td data-label="runner" class="runner">
        {attempt.runner ?? "—"}
      </td>
      <td data-label="outcome">
        {attempt.outcome ? (
          <span class={`outcome outcome-${kind}`}>
            {attempt.outcome}
            {attempt.elapsed_ms !== null ? <span class="muted"> · {seconds(attempt.elapsed_ms)}</span> : null}
          </span>
        ) : (
          "—"
        )}
      </td>
    </tr>
  );
}

function RunStatusPill({ run }: { run: LabRun }) {
  return (
    <span class={`state state-${run.status}`} data-run-status={run.status}>
      {run.status}
    </span>
  );
}

function Progress({ run }: { run: LabRun }) {
  return (
    <span class="progress" data-progress={`${run.done}/${run.total}`}>
      <progress value={run.done} max={run.total || 1} aria-label="attempts recorded" />
      {run.done}/{run.total}
    </span>
  );
}

/** The cohort file and its folder: enough to tell runs apart, short enough for a phone. */
function shortPath(path: string): string {
  return path.split("/").filter(Boolean).slice(-2).join("/");
}

function clock(ms: number): string {
  const when = new Date(ms);
  const time = when.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
  if (when.toDateString() === new Date().toDateString()) return time;
  return `${when.toLocaleDateString([], { month: "short", day: "numeric" })} ${time}`;
}

function seconds(ms: number): string {
  return ms < 60_000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`;
}
