// The `lab` subject as this page reads it (docs/protocol.md, "The Lab"): the runs this
// supervisor started, folded from the snapshot and the keyless `lab_*` updates. No I/O here.

import type { ProcessRow } from "./wire";

export type AttemptState = "pending" | "running" | "recorded";
export type RunStatus = "running" | "complete" | "stopped" | "aborted";

export interface LabAttempt {
  /** `<task>/<variant>/rep-<n>`. */
  label: string;
  task: string;
  variant: string;
  repetition: number;
  state: AttemptState;
  /** The attempt runner holding it while it runs (a row of home's workers). */
  runner: string | null;
  started_ms: number | null;
  elapsed_ms: number | null;
  /** `accepted`, `failed`, `incomplete` or `invalid:<why>`, once recorded. */
  outcome: string | null;
  correct: boolean | null;
  /** While it runs: its runner's process tree, parents first. */
  processes: ProcessRow[] | null;
}

export interface LabRun {
  run: string;
  cohort: string;
  source: string;
  out: string;
  hypothesis: string;
  digest: string;
  parallel: number;
  status: RunStatus;
  started_ms: number;
  done: number;
  total: number;
  accepted: Record<string, number>;
  stop_reason: string | null;
  abort_reason: string | null;
  /** What `forge evaluate` exits with for it, once it ended (0, 1, 2, 130, 143). */
  exit_code: number | null;
  attempts: LabAttempt[];
}

/** The reply to `lab_start`, `lab_stop` and `lab_report` (which carries the page). */
export interface LabAnswer {
  ok: boolean;
  run?: string;
  why?: string;
  html?: string;
}

/** The runs after one `lab_*` update, or null when `variant` is not one of the subject's. */
export function foldLab(runs: LabRun[], variant: string, body: Record<string, unknown>): LabRun[] | null {
  if (variant === "lab_run") {
    const row = body.run as LabRun;
    const known = runs.some((run) => run.run === row.run);
    return known ? runs.map((run) => (run.run === row.run ? row : run)) : [...runs, row];
  }
  if (variant === "lab_attempt") {
    const attempt = body.attempt as LabAttempt;
    return withRun(runs, body.run as string, (run) => ({
      ...run,
      done: body.done as number,
      total: body.total as number,
      accepted: body.accepted as Record<string, number>,
      attempts: run.attempts.map((each) => (each.label === attempt.label ? attempt : each)),
    }));
  }
  if (variant === "lab_processes") {
    const label = body.label as string;
    const processes = body.processes as ProcessRow[] | null;
    return withRun(runs, body.run as string, (run) => ({
      ...run,
      attempts: run.attempts.map((each) => (each.label === label ? { ...each, processes } : each)),
    }));
  }
  return null;
}

function withRun(runs: LabRun[], id: string, change: (run: LabRun) => LabRun): LabRun[] {
  return runs.map((run) => (run.run === id ? change(run) : run));
}

/** What each of `forge evaluate`'s exit codes means for a run (docs/cli.md). */
const EXIT_MEANING: Record<number, string> = {
  0: "complete, every attempt correct",
  1: "aborted",
  2: "complete, some attempts not correct",
  130: "stopped",
  143: "stopped",
};

/** How a run's end reads: its exit code with what it means, then why it stopped, if it did. */
export function runEnding(run: LabRun): string | null {
  if (run.exit_code === null) return null;
  const meaning = EXIT_MEANING[run.exit_code];
  const reason = run.abort_reason ?? run.stop_reason;
  return `exit ${run.exit_code}${meaning ? ` (${meaning})` : ""}${reason ? ` · ${reason}` : ""}`;
}
