// A terminal's buffer written back as the VT stream that rebuilds it in a fresh terminal: the
// scrollback and the screen with their wrapped rows (so a later resize reflows them the same
// way), the alternate screen over the shell's, the saved cursor, the scroll region, tab stops,
// the modes a program switched, the cursor with its pen, and the title.
//
// Rows are written by xterm.js's own serializer (`@xterm/addon-serialize`: cells, colours, and
// the wrap of each row, forced where a wrap could not happen by printing); the rest it leaves
// out is read from xterm.js's core (pinned in package-lock.json, so these fields are known).

import type { SerializeAddon } from "@xterm/addon-serialize";
import type { IBuffer, Terminal } from "@xterm/headless";

const CSI = "\x1b[";

/** What a cell and the input handler's pen share: the attributes an SGR sets. */
interface Pen {
  isBold(): number;
  isDim(): number;
  isItalic(): number;
  isUnderline(): number;
  isBlink(): number;
  isInverse(): number;
  isInvisible(): number;
  isStrikethrough(): number;
  isOverline(): number;
  isFgRGB(): boolean;
  isFgPalette(): boolean;
  isBgRGB(): boolean;
  isBgPalette(): boolean;
  getFgColor(): number;
  getBgColor(): number;
  getUnderlineStyle?(): number;
}

interface CoreBuffer {
  x: number;
  y: number;
  savedX: number;
  savedY: number;
  savedCurAttrData: Pen;
  scrollTop: number;
  scrollBottom: number;
  tabs: Record<number, boolean | undefined>;
}

interface Core {
  buffers: { normal: CoreBuffer; alt: CoreBuffer };
  coreService: { isCursorHidden: boolean; decPrivateModes: { cursorStyle?: string; cursorBlink?: boolean } };
  coreMouseService: { activeEncoding: string };
  _inputHandler: { _curAttrData: Pen };
}

interface Serializer {
  _serializeBufferByRange(
    terminal: Terminal,
    buffer: IBuffer,
    range: { start: number; end: number },
    excludeFinalCursorPosition: boolean,
  ): string;
}

const CURSOR_STYLES: Record<string, number> = { block: 2, underline: 4, bar: 6 };
const MOUSE_MODES: Record<string, number> = { x10: 9, vt200: 1000, drag: 1002, any: 1003 };
const MOUSE_ENCODINGS: Record<string, number> = { SGR: 1006, SGR_PIXELS: 1016 };

/** The VT stream that repaints `term` from any state; `title` is the last OSC 0/2 title. */
export function snapshot(term: Terminal, serializer: SerializeAddon, title: string): string {
  const core = (term as unknown as { _core: Core })._core;
  const rows = (serializer as unknown as Serializer)._serializeBufferByRange.bind(serializer);
  const parts: string[] = ["\x1bc"];
  if (title) parts.push(`\x1b]2;${printable(title)}\x07`);
  const normal = term.buffer.normal;
  parts.push(rows(term, normal, { start: 0, end: normal.length - 1 }, true));
  const inAlternate = term.buffer.active.type === "alternate";
  if (inAlternate) {
    // The shell's cursor as a program saved it (`?1049h`, DECSC), then where it stood: `?1047h`
    // switches without saving, so leaving by `?1049l` restores the first and by `?47l` keeps
    // the second, as the original terminal would.
    parts.push(saved(core.buffers.normal, term));
    parts.push(cursorAt(core.buffers.normal, term, normal, 0));
    parts.push(`${CSI}?1047h${CSI}H`);
    const alternate = term.buffer.alternate;
    parts.push(rows(term, alternate, { start: 0, end: alternate.length - 1 }, true));
  }
  const active = inAlternate ? core.buffers.alt : core.buffers.normal;
  parts.push(saved(active, term));
  parts.push(tabStops(active, term.cols));
  if (active.scrollTop !== 0 || active.scrollBottom !== term.rows - 1) {
    parts.push(`${CSI}${active.scrollTop + 1};${active.scrollBottom + 1}r`);
  }
  parts.push(modes(term, core));
  const top = term.modes.originMode ? active.scrollTop : 0;
  parts.push(cursorAt(active, term, term.buffer.active, top));
  parts.push(sgr(core._inputHandler._curAttrData));
  if (core.coreService.isCursorHidden) parts.push(`${CSI}?25l`);
  return parts.join("");
}

/** DECSC's state of `buffer` (position and pen), saved again with ESC 7 when not the default. */
function saved(buffer: CoreBuffer, term: Terminal): string {
  const pen = sgr(buffer.savedCurAttrData);
  if (buffer.savedX === 0 && buffer.savedY === 0 && pen === `${CSI}0m`) return "";
  const x = Math.min(buffer.savedX, term.cols - 1);
  return `${CSI}${buffer.savedY + 1};${x + 1}H${pen}\x1b7`;
}

/** Place the cursor; one past the last column (a wrap pending) is reached by printing a cell. */
function cursorAt(core: CoreBuffer, term: Terminal, buffer: IBuffer, top: number): string {
  const y = core.y - top + 1;
  if (core.x < term.cols) return `${CSI}${y};${core.x + 1}H`;
  const line = buffer.getLine(buffer.baseY + core.y);
  let last = term.cols - 1;
  let cell = line?.getCell(last);
  if (cell && cell.getWidth() === 0 && last > 0) {
    last -= 1;
    cell = line?.getCell(last);
  }
  const text = cell?.getChars() || " ";
  const pen = cell ? sgr(cell) : `${CSI}0m`;
  return `${CSI}${y};${last + 1}H${pen}${text}`;
}

/** The title without control or format characters: a BEL or ESC would end the OSC early, and
 * a bidirectional override or isolate would reorder what a viewer's window title reads. */
function printable(text: string): string {
  return text.replace(/[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/gu, "");
}

function tabStops(buffer: CoreBuffer, cols: number): string {
  const stops: number[] = [];
  for (let x = 1; x < cols; x++) if (buffer.tabs[x]) stops.push(x);
  const usual = stops.length === Math.ceil(cols / 8) - 1 && stops.every((x) => x % 8 === 0);
  if (usual) return "";
  return `${CSI}3g${stops.map((x) => `${CSI}1;${x + 1}H\x1bH`).join("")}`;
}

function modes(term: Terminal, core: Core): string {
  const m = term.modes;
  let out = "";
  if (m.applicationCursorKeysMode) out += `${CSI}?1h`;
  if (m.applicationKeypadMode) out += `${CSI}?66h`;
  if (m.bracketedPasteMode) out += `${CSI}?2004h`;
  if (m.insertMode) out += `${CSI}4h`;
  if (m.reverseWraparoundMode) out += `${CSI}?45h`;
  if (m.sendFocusMode) out += `${CSI}?1004h`;
  if (!m.wraparoundMode) out += `${CSI}?7l`;
  const mouse = MOUSE_MODES[m.mouseTrackingMode];
  if (mouse !== undefined) out += `${CSI}?${mouse}h`;
  const encoding = MOUSE_ENCODINGS[core.coreMouseService.activeEncoding];
  if (encoding !== undefined) out += `${CSI}?${encoding}h`;
  const { cursorStyle, cursorBlink } = core.coreService.decPrivateModes;
  const style = cursorStyle === undefined ? undefined : CURSOR_STYLES[cursorStyle];
  if (style !== undefined) out += `${CSI}${style - (cursorBlink ? 1 : 0)} q`;
  if (m.originMode) out += `${CSI}?6h`;
  return out;
}

/** The SGR that sets exactly `pen` (from a reset). */
export function sgr(pen: Pen): string {
  const codes = ["0"];
  if (pen.isBold()) codes.push("1");
  if (pen.isDim()) codes.push("2");
  if (pen.isItalic()) codes.push("3");
  if (pen.isUnderline()) {
    const style = pen.getUnderlineStyle?.() ?? 1;
    codes.push(style > 1 ? `4:${style}` : "4");
  }
  if (pen.isBlink()) codes.push("5");
  if (pen.isInverse()) codes.push("7");
  if (pen.isInvisible()) codes.push("8");
  if (pen.isStrikethrough()) codes.push("9");
  if (pen.isOverline()) codes.push("53");
  codes.push(...colour(pen.isFgRGB(), pen.isFgPalette(), pen.getFgColor(), 30, 90, "38"));
  codes.push(...colour(pen.isBgRGB(), pen.isBgPalette(), pen.getBgColor(), 40, 100, "48"));
  return `${CSI}${codes.join(";")}m`;
}

function colour(rgb: boolean, palette: boolean, value: number, base: number, bright: number, extended: string): string[] {
  if (rgb) return [extended, "2", String((value >> 16) & 255), String((value >> 8) & 255), String(value & 255)];
  if (!palette) return [];
  if (value < 8) return [String(base + value)];
  if (value < 16) return [String(bright + value - 8)];
  return [extended, "5", String(value)];
}
