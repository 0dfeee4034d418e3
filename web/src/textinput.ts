// Text from a phone keyboard as a diff of an input element's value (pure).
//
// Android keyboards compose every word: `input` events re-send the whole word as it grows, and a
// terminal fed each event's data types it twice (xterm.js #3600). Here only the difference
// between what was already sent and what the element holds now is sent, and nothing is sent
// while a composition is open: the word lands once, at compositionend.

export const DELETE = "\x7f";

/** What to send to turn `before` into `after`: DELs for what went, then what came. */
const graphemes = new Intl.Segmenter(undefined, { granularity: "grapheme" });

/** One entry per character a person sees (a flag or an accented letter is one DEL). */
function characters(text: string): string[] {
  return Array.from(graphemes.segment(text), (part) => part.segment);
}

export function textDiff(before: string, after: string): string {
  const a = characters(before);
  const b = characters(after);
  let common = 0;
  while (common < a.length && common < b.length && a[common] === b[common]) common += 1;
  const removed = a.length - common;
  const added = b.slice(common).join("").replace(/\r?\n/g, "\r");
  return DELETE.repeat(removed) + added;
}

export class DiffInput {
  private sent = "";
  composing = false;

  /** The element's value changed; returns the keystrokes to send now ("" while composing). */
  changed(value: string): string {
    if (this.composing) return "";
    const out = textDiff(this.sent, value);
    this.sent = value;
    return out;
  }

  compositionStart(): void {
    this.composing = true;
  }

  compositionEnd(value: string): string {
    this.composing = false;
    return this.changed(value);
  }

  /** The element was emptied (after Enter, or when its value grows long). */
  reset(): void {
    this.sent = "";
  }

  get pending(): string {
    return this.sent;
  }
}
