// The rules of a live link, as pure machines driven by the caller's clock (milliseconds).

/** Redial delays: 0.5 s doubling to 5 s, reset by a link that stayed up. */
export class Backoff {
  private next = 500;

  constructor(
    private readonly first = 500,
    private readonly most = 5000,
  ) {
    this.next = first;
  }

  delay(): number {
    const delay = this.next;
    this.next = Math.min(this.most, this.next * 2);
    return delay;
  }

  reset(): void {
    this.next = this.first;
  }
}

export const QUIET_MS = 15_000;
/** A browser sees whole messages only: the server's 60 s write bound plus a margin. */
export const DEADLINE_MS = 65_000;

export type ProbeAction = "ping" | "dead" | null;

/**
 * A probe after 15 s without a message; no message within the deadline after it: the link is
 * dead (a half-open socket never delivers a close). Any message restarts the quiet.
 */
export class Probe {
  private lastHeard: number;
  private probedAt: number | null = null;

  constructor(now: number) {
    this.lastHeard = now;
  }

  heard(now: number): void {
    this.lastHeard = now;
    this.probedAt = null;
  }

  tick(now: number): ProbeAction {
    if (this.probedAt !== null) {
      return now - this.probedAt >= DEADLINE_MS ? "dead" : null;
    }
    if (now - this.lastHeard >= QUIET_MS) {
      this.probedAt = now;
      return "ping";
    }
    return null;
  }
}
