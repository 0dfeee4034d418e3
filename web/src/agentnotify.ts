// A system notification when an agent seat begins to wait on an ask while this page is hidden.
// Off by default: the person turns it on in Settings (this device), which is when the browser
// asks for the permission, once. Each ask is told once, by its id, from home's `waiting` rows.

import type { App } from "./app";
import { seatKey } from "./wire";

const KEY = "forge.notify.asks";

export function notifyAsksOn(): boolean {
  return localStorage.getItem(KEY) === "on";
}

/** Turn the notifications on (asking the browser's permission) or off; what it ended as. */
export async function setNotifyAsks(on: boolean): Promise<boolean> {
  if (on && typeof Notification !== "undefined" && Notification.permission === "default") {
    await Notification.requestPermission();
  }
  const granted = typeof Notification !== "undefined" && Notification.permission === "granted";
  localStorage.setItem(KEY, on && granted ? "on" : "off");
  return on && granted;
}

/** Watch home: a newly waiting ask on any seat becomes a notification while the page is hidden. */
export function watchAsks(app: App): void {
  const told = new Set<string>();
  app.onHome = () => {
    for (const row of app.home?.agents ?? []) {
      const ask = row.waiting;
      if (!ask || told.has(ask.id)) continue;
      told.add(ask.id);
      if (!document.hidden || !notifyAsksOn() || typeof Notification === "undefined") continue;
      if (Notification.permission !== "granted") continue;
      const what = ask.kind === "question" ? "a question" : "a permission";
      new Notification(`${seatKey(row.slot)} waits`, { body: `The agent waits on ${what}.`, tag: ask.id });
    }
  };
}
