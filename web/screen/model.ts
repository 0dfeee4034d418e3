// The terminal host's screen model: xterm.js (headless), the engine every web viewer draws with,
// fed the shell's bytes and sizes in order, asked for its screen as a VT stream (`snapshot`).
//
// Run by `forge.workers.terminal.model` as `node screen_model.cjs SCROLLBACK COLS ROWS`. Input
// on stdin is frames: one kind byte, a 4-byte big-endian length, the payload:
//   w  bytes the shell wrote          r  a resize: cols, rows as two 16-bit big-endian numbers
//   v  a view: answered on stdout as a 4-byte big-endian length and the snapshot in UTF-8
// Frames are handled strictly in order (a resize or a view waits until every byte before it
// is parsed), and stdin is paused while more than PAUSE_ABOVE bytes wait to be parsed, so the
// host's writes block instead of this process growing.

import { SerializeAddon } from "@xterm/addon-serialize";
import { Terminal } from "@xterm/headless";

import { snapshot } from "./snapshot";

const PAUSE_ABOVE = 1024 * 1024;

interface Frame {
  kind: number;
  payload: Buffer;
}

const WRITE = 0x77;
const RESIZE = 0x72;
const VIEW = 0x76;

const [scrollback, cols, rows] = process.argv.slice(2).map(Number);
const term = new Terminal({
  cols: cols ?? 80,
  rows: rows ?? 24,
  scrollback: scrollback ?? 1000,
  allowProposedApi: true,
});
const serializer = new SerializeAddon();
term.loadAddon(serializer);
let title = "";
term.onTitleChange((text) => {
  title = text;
});

const queue: Frame[] = [];
let queued = 0;
let busy = false;
let input: Buffer = Buffer.alloc(0);

process.stdin.on("data", (chunk: Buffer) => {
  input = input.length ? Buffer.concat([input, chunk]) : chunk;
  while (input.length >= 5) {
    const length = input.readUInt32BE(1);
    if (input.length < 5 + length) break;
    const frame = { kind: input[0] ?? 0, payload: input.subarray(5, 5 + length) };
    input = input.subarray(5 + length);
    queue.push(frame);
    queued += frame.payload.length;
  }
  if (queued > PAUSE_ABOVE) process.stdin.pause();
  next();
});
process.stdin.on("end", () => process.exit(0));

function next(): void {
  if (busy) return;
  const frame = queue.shift();
  if (frame === undefined) {
    process.stdin.resume();
    return;
  }
  queued -= frame.payload.length;
  if (frame.kind === WRITE) {
    busy = true;
    term.write(frame.payload, () => {
      busy = false;
      next();
    });
    return;
  }
  if (frame.kind === RESIZE) {
    term.resize(frame.payload.readUInt16BE(0), frame.payload.readUInt16BE(2));
  } else if (frame.kind === VIEW) {
    const body = Buffer.from(snapshot(term, serializer, title), "utf8");
    const header = Buffer.alloc(4);
    header.writeUInt32BE(body.length);
    process.stdout.write(Buffer.concat([header, body]));
  } else {
    throw new Error(`screen model: unknown frame kind ${frame.kind}`);
  }
  next();
}
