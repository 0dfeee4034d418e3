// The reference terminal for the screen-equivalence tests: xterm.js (headless) fed a recorded
// sequence of bytes and resizes, printed as cells.
//
//   node screen/reference.mjs < sequence.json > cells.json
//
// Input: {"cols", "rows", "scrollback"?, "events": [["w", base64 bytes] | ["r", cols, rows]]}.
// Output: the active screen's kind, the cursor, the modes and the title, and every row of the
// shell's buffer (scrollback and screen) and of the alternate screen while it is up, each
// {"wrapped", "cells": [[chars, width, fg, bg, flags]]} (fg/bg as mode:colour; chars "" is a
// cell never written, which reflow treats apart from a written space).
import xterm from "@xterm/headless";

const { Terminal } = xterm;

const FLAGS = [
  "isBold", "isDim", "isItalic", "isUnderline", "isBlink",
  "isInverse", "isInvisible", "isStrikethrough", "isOverline",
];

function readStdin() {
  return new Promise((resolve) => {
    const chunks = [];
    process.stdin.on("data", (chunk) => chunks.push(chunk));
    process.stdin.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
  });
}

function write(term, data) {
  return new Promise((resolve) => term.write(data, resolve));
}

function rows(buffer, cols) {
  const out = [];
  for (let y = 0; y < buffer.length; y++) {
    const line = buffer.getLine(y);
    const cells = [];
    for (let x = 0; x < cols; x++) {
      const cell = line.getCell(x);
      let flags = 0;
      FLAGS.forEach((name, bit) => {
        if (cell[name]()) flags |= 1 << bit;
      });
      cells.push([
        cell.getChars(), cell.getWidth(),
        `${cell.getFgColorMode()}:${cell.getFgColor()}`,
        `${cell.getBgColorMode()}:${cell.getBgColor()}`,
        flags,
      ]);
    }
    out.push({ wrapped: line.isWrapped, cells });
  }
  return out;
}

const sequence = JSON.parse(await readStdin());
const term = new Terminal({
  cols: sequence.cols,
  rows: sequence.rows,
  scrollback: sequence.scrollback ?? 1000,
  allowProposedApi: true,
});
let title = "";
term.onTitleChange((text) => {
  title = text;
});
for (const event of sequence.events) {
  if (event[0] === "w") await write(term, Buffer.from(event[1], "base64"));
  else if (event[0] === "r") term.resize(event[1], event[2]);
  else throw new Error(`unknown event ${JSON.stringify(event)}`);
}
const active = term.buffer.active;
const result = {
  cols: term.cols,
  rows: term.rows,
  active: active.type,
  cursor: [active.cursorX, active.cursorY],
  title,
  modes: term.modes,
  normal: rows(term.buffer.normal, term.cols),
  alternate: active.type === "alternate" ? rows(term.buffer.alternate, term.cols) : null,
};
process.stdout.write(JSON.stringify(result));
