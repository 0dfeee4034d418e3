// A process tree drawn as a table (a seat's Processes pane, a running Lab attempt): pid, program
// indented under its parent, CPU and memory.

import { processTree } from "./processes";
import type { ProcessRow } from "./wire";

export function ProcessTable({ rows }: { rows: ProcessRow[] }) {
  return (
    <div class="table-wrap">
      <table class="processes">
        <thead>
          <tr>
            <th>pid</th>
            <th>program</th>
            <th class="num">cpu %</th>
            <th class="num">memory</th>
          </tr>
        </thead>
        <tbody>
          {processTree(rows).map(({ row, depth }) => (
            <tr key={row.pid} data-pid={row.pid}>
              <td>{row.pid}</td>
              <td class="cmd" style={{ paddingLeft: `${0.5 + depth}em` }} title={row.cmdline.join(" ")}>
                <strong>{row.name}</strong> <span class="muted">{row.cmdline.slice(1).join(" ")}</span>
              </td>
              <td class="num">{row.cpu_percent.toFixed(1)}</td>
              <td class="num">{(row.rss_bytes / 1048576).toFixed(1)} MiB</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
