// bench/webclient.py's floor page: the xterm.js forge's page uses, set up the same way (fit,
// WebGL on desktops, the same options), fed by a bare WebSocket echo of a PTY and nothing else.
// Built into a temporary folder by the bench; never shipped.

import { FitAddon } from "@xterm/addon-fit";
import { WebglAddon } from "@xterm/addon-webgl";
import { Terminal } from "@xterm/xterm";
import "@xterm/xterm/css/xterm.css";

const params = new URLSearchParams(location.search);
const host = document.createElement("div");
host.style.cssText = `position:absolute;left:4px;top:4px;width:${params.get("w") ?? "800"}px;height:${params.get("h") ?? "600"}px`;
document.body.append(host);
const term = new Terminal({
  fontSize: 14,
  fontFamily: 'ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace',
  theme: { background: "#11151c", foreground: "#d8dee9", cursor: "#f0c674", selectionBackground: "#3b4252" },
  scrollback: 5000,
  allowProposedApi: true,
  cursorBlink: false,
});
const fit = new FitAddon();
term.loadAddon(fit);
term.open(host);
if (navigator.maxTouchPoints === 0) {
  try {
    const webgl = new WebglAddon();
    webgl.onContextLoss(() => webgl.dispose());
    term.loadAddon(webgl);
  } catch {
    // No WebGL here: the DOM renderer draws, as on forge's page.
  }
}
fit.fit();
const ws = new WebSocket(`ws://${location.host}/pty?cols=${term.cols}&rows=${term.rows}`);
ws.binaryType = "arraybuffer";
ws.onmessage = (event: MessageEvent) => {
  term.write(new Uint8Array(event.data as ArrayBuffer));
};
ws.onopen = () => {
  document.body.dataset.open = "1";
};
const encoder = new TextEncoder();
term.onData((data) => {
  ws.send(encoder.encode(data));
});
// The hook forge's page offers too (`window.forgeTerminal.term`): the bench measures both alike.
(window as unknown as { forgeTerminal: { term: Terminal } }).forgeTerminal = { term };
