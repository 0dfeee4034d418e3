// The page's own perf records, batched to the server as `client_perf {records}`.

export interface PerfRecord {
  name: string;
  ms?: number;
  at_ms: number;
  [field: string]: unknown;
}

const FLUSH_MS = 10_000;
const FLUSH_AT = 100;
const KEEP_AT_MOST = 1000;

export class PerfBatch {
  private records: PerfRecord[] = [];
  private timer: number | null = null;

  constructor(private readonly send: (records: PerfRecord[]) => boolean) {
    // A hidden page may be frozen or discarded (a phone's tab switcher): its records go first.
    document.addEventListener("visibilitychange", () => {
      if (document.visibilityState === "hidden") this.flush();
    });
  }

  add(name: string, ms: number | undefined, fields: Record<string, unknown> = {}): void {
    const record: PerfRecord = { name, at_ms: Date.now(), ...fields };
    if (ms !== undefined) record.ms = Math.round(ms * 100) / 100;
    this.records.push(record);
    if (this.records.length > KEEP_AT_MOST) this.records.splice(0, this.records.length - KEEP_AT_MOST);
    if (this.records.length >= FLUSH_AT) this.flush();
    else this.timer ??= window.setTimeout(() => {
      this.flush();
    }, FLUSH_MS);
  }

  /** Send what waits; kept for the next try when the link is down. */
  flush(): void {
    if (this.timer !== null) window.clearTimeout(this.timer);
    this.timer = null;
    if (this.records.length && this.send(this.records)) this.records = [];
  }
}
