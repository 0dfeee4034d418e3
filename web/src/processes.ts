// A seat's process rows (parents first) as a tree to draw: each row with its depth.

import type { ProcessRow } from "./wire";

export function processTree(rows: ProcessRow[]): { row: ProcessRow; depth: number }[] {
  const pids = new Set(rows.map((row) => row.pid));
  const children = new Map<number, ProcessRow[]>();
  const roots: ProcessRow[] = [];
  for (const row of rows) {
    if (pids.has(row.ppid) && row.ppid !== row.pid) {
      const list = children.get(row.ppid) ?? [];
      list.push(row);
      children.set(row.ppid, list);
    } else {
      roots.push(row);
    }
  }
  const out: { row: ProcessRow; depth: number }[] = [];
  const seen = new Set<number>();
  const walk = (row: ProcessRow, depth: number) => {
    if (seen.has(row.pid)) return;
    seen.add(row.pid);
    out.push({ row, depth });
    for (const child of children.get(row.pid) ?? []) walk(child, depth + 1);
  };
  for (const root of roots) walk(root, 0);
  return out;
}
