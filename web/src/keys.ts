// Keys a phone keyboard lacks, and the sticky Ctrl and Alt of the extra-keys row (pure).

export type ExtraKey = "Escape" | "Tab" | "ArrowUp" | "ArrowDown" | "ArrowLeft" | "ArrowRight";

/** The bytes a special key sends; arrows follow the terminal's cursor-key mode (DECCKM). */
export function keySequence(key: ExtraKey, applicationCursor: boolean): string {
  const arrow = applicationCursor ? "\x1bO" : "\x1b[";
  switch (key) {
    case "Escape":
      return "\x1b";
    case "Tab":
      return "\t";
    case "ArrowUp":
      return `${arrow}A`;
    case "ArrowDown":
      return `${arrow}B`;
    case "ArrowRight":
      return `${arrow}C`;
    case "ArrowLeft":
      return `${arrow}D`;
  }
}

/** Ctrl with one character: letters and @[\]^_ map to C0 controls; `?` is DEL. */
export function ctrlOf(char: string): string {
  if (char === "?") return "\x7f";
  if (char === " ") return "\x00";
  const code = char.toUpperCase().charCodeAt(0);
  if (char.length === 1 && code >= 0x40 && code <= 0x5f) return String.fromCharCode(code & 0x1f);
  return char;
}

/** Sticky modifiers: tapped once they apply to the next keystroke, then let go. */
export class StickyModifiers {
  ctrl = false;
  alt = false;

  toggle(which: "ctrl" | "alt"): void {
    this[which] = !this[which];
  }

  /** The bytes to send for typed `data`, with the held modifiers applied and released. */
  apply(data: string): string {
    if (!this.ctrl && !this.alt) return data;
    let out = data;
    if (this.ctrl && Array.from(data).length === 1) out = ctrlOf(data);
    if (this.alt) out = `\x1b${out}`;
    this.ctrl = false;
    this.alt = false;
    return out;
  }
}
