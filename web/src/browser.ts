// One seat's browser tab on screen: kind-1 frames drawn on a canvas, gestures sent back.
//
// Frames are decoded off the main thread (createImageBitmap) one at a time; a frame that
// arrives while one decodes replaces the one waiting, so the newest always wins and a slow
// device never queues. Gestures are sent in the frame's page coordinates, which is the space
// the host dispatches them in, whatever the canvas's size or the picture's raster.

import type { App, Surface } from "./app";
import {
  FORMAT_JPEG,
  type BinaryFrame,
  type BrowserFrame,
  type Seat,
  type ServerMessage,
  type TabRow,
  type Tabs,
  verbs,
} from "./wire";
import type { ServerBrowserDownload } from "./gen/protocol";

const VERBS = verbs(
  "browser_view",
  "browser_input",
  "browser_control",
  "browser_nav",
  "browser_navigate",
  "browser_resize",
  "browser_file_answer",
  "browser_dialog_answer",
  "browser_tabs",
  "browser_open",
);
const TAP_SLOP_PX = 10;

export interface FileAsk {
  id: number;
  multiple: boolean;
}

export interface BrowserTestHook {
  surface: BrowserSurface;
  drawn: number;
  received: number;
  /** The page width (CSS px) the last drawn frame was laid out at. */
  pageWidth: number;
}

declare global {
  interface Window {
    forgeBrowser?: BrowserTestHook;
  }
}

interface Placement {
  x: number;
  y: number;
  width: number;
  height: number;
  pageWidth: number;
  pageHeight: number;
}

export class BrowserSurface implements Surface {
  tabs: Tabs | null = null;
  profileId: number | null = null;
  tab: number | null = null;
  viewer: number | null = null;
  controller: number | null = null;
  canBack = false;
  canForward = false;
  failed: string | null = null;
  fileAsk: FileAsk | null = null;
  attaching = false;
  private waiting: BrowserFrame | null = null;
  private decoding = false;
  private placement: Placement | null = null;
  private lastFrame: ImageBitmap | null = null;
  private inputSeq = 0;
  /** Views (and tabs opened to view) asked for so far: a re-attach that finds one asked since
   * it began steps aside. */
  private views = 0;
  /** An address entered while a view was on its way (`navigate`). */
  private navigateAfterView: string | null = null;
  private sentSize = "";
  private wantControl = true;
  private pointer: { id: number; x: number; y: number; moved: boolean; touch: boolean } | null = null;
  private readonly observer: ResizeObserver;
  private readonly hook: BrowserTestHook;
  onChange: () => void = () => undefined;

  constructor(
    private readonly app: App,
    readonly seat: Seat,
    private readonly canvas: HTMLCanvasElement,
  ) {
    this.hook = { surface: this, drawn: 0, received: 0, pageWidth: 0 };
    window.forgeBrowser = this.hook;
    this.observer = new ResizeObserver(() => {
      this.resize();
    });
    this.observer.observe(canvas);
    this.listen();
    app.addSurface(this);
  }

  dispose(): void {
    this.app.removeSurface(this);
    this.observer.disconnect();
    if (this.tab !== null) this.app.send({ kind: "browser_detach" });
    if (window.forgeBrowser === this.hook) delete window.forgeBrowser;
  }

  get controls(): boolean {
    return this.viewer !== null && this.controller === this.viewer;
  }

  get row(): TabRow | undefined {
    return this.tabs?.rows.find((row) => row.number === this.tab);
  }

  // --- attaching -------------------------------------------------------------------------

  /** The old link's viewer went with it: no gesture or size is sent until a view answers (a
   * click, or the size a closing banner changed, sent before the re-attach was refused). */
  dropped(): void {
    this.wantControl = this.wantControl || this.controls;
    this.viewer = null;
    this.controller = null;
  }

  relink(bootChanged: boolean): void {
    this.dropped();
    this.attaching = true;
    const tab = bootChanged ? null : this.tab;
    const views = this.views;
    this.app.socket
      .request({ kind: "browser_tabs", seat: this.seat })
      .then((body) => {
        const answer = body as { ok: boolean; tabs?: Tabs; why?: string };
        if (answer.ok && answer.tabs) this.tabs = answer.tabs;
        this.attaching = false;
        this.onChange();
        // A tab the person opened or chose while the list was on its way is the one they want.
        if (views !== this.views) return;
        if (tab !== null || (this.tabs?.rows.length ?? 0) > 0) this.view(tab);
        else this.navigateDeferred();
      })
      .catch(() => undefined);
  }

  view(tab: number | null): void {
    this.views += 1;
    this.attaching = true;
    this.failed = null;
    this.sentSize = "";
    this.onChange();
    this.app.socket
      .request(
        tab === null ? { kind: "browser_view", seat: this.seat } : { kind: "browser_view", seat: this.seat, tab },
      )
      .then((body) => {
        const answer = body as { ok: boolean; tab?: number; why?: string };
        this.attaching = false;
        if (answer.ok && typeof answer.tab === "number") {
          this.tab = answer.tab;
          this.resize();
        } else {
          this.tab = null;
          this.failed = answer.why ?? "the tab could not be viewed";
        }
        this.onChange();
        this.navigateDeferred();
      })
      .catch(() => undefined);
  }

  private navigateDeferred(): void {
    const url = this.navigateAfterView;
    this.navigateAfterView = null;
    if (url !== null) this.navigate(url);
  }

  open(url: string): void {
    this.views += 1;
    this.app.socket
      .request({ kind: "browser_open", seat: this.seat, url })
      .then((body) => {
        const answer = body as { ok: boolean; tab?: number; why?: string };
        if (answer.ok && typeof answer.tab === "number") this.view(answer.tab);
        else this.app.notify(`browser_open: ${answer.why ?? "refused"}`);
      })
      .catch(() => undefined);
  }

  /** The address bar: a person who types an address means to drive, so control is taken first
   * (the server handles one connection's messages in order, so the take lands before). */
  navigate(url: string): void {
    if (this.attaching) {
      // The view on its way decides: its tab is navigated, or a tab is opened when it has none.
      this.navigateAfterView = url;
      return;
    }
    if (this.tab === null) {
      this.open(url);
      return;
    }
    if (!this.controls) this.takeControl(true);
    this.app.send({ kind: "browser_navigate", url });
  }

  nav(back: boolean): void {
    if (!this.controls) this.takeControl(true);
    this.app.send({ kind: "browser_nav", back });
  }

  takeControl(take: boolean): void {
    this.wantControl = take;
    this.app.send({ kind: "browser_control", take });
  }

  answerDialog(accept: boolean, text: string | null): void {
    this.app.send({ kind: "browser_dialog_answer", accept, text });
  }

  async answerFiles(files: File[]): Promise<void> {
    const ask = this.fileAsk;
    if (!ask) return;
    this.fileAsk = null;
    this.onChange();
    const chosen = await Promise.all(
      files.map(async (file) => ({ name: file.name, data: await base64(file) })),
    );
    this.app.send({ kind: "browser_file_answer", id: ask.id, files: chosen });
  }

  // --- messages --------------------------------------------------------------------------

  message(message: ServerMessage): boolean {
    switch (message.kind) {
      case "browser_tabs": {
        const tabs: Tabs = message;
        if (this.tabs && tabs.profile !== this.tabs.profile) return false;
        this.tabs = tabs;
        break;
      }
      case "browser_view":
        this.profileId = message.id;
        this.tab = message.tab;
        this.viewer = message.viewer;
        this.controller = message.controller;
        if (this.controller === null && this.wantControl) this.takeControl(true);
        this.resize();
        break;
      case "browser_nav_state":
        if (message.tab !== this.tab) return false;
        this.canBack = message.can_back;
        this.canForward = message.can_forward;
        break;
      case "browser_surface_failed":
        if (message.tab !== this.tab) return false;
        this.failed = message.reason;
        this.tab = null;
        this.viewer = null;
        break;
      case "browser_file_dialog":
        this.fileAsk = { id: message.id, multiple: message.multiple };
        break;
      case "browser_download":
        this.download(message);
        return true;
      case "error":
        if (!VERBS.has(message.what)) return false;
        if (message.what === "browser_view") {
          this.failed = message.why;
          this.tab = null;
        } else {
          this.app.notify(`${message.what}: ${message.why}`);
        }
        break;
      default:
        return false;
    }
    this.onChange();
    return true;
  }

  private download(message: ServerBrowserDownload): void {
    if (message.dropped) {
      this.app.notify(`${String(message.lost)} download(s) were lost before anyone held control`);
      return;
    }
    const name = String(message.name);
    if (typeof message.error === "string" || typeof message.data !== "string") {
      const why = typeof message.error === "string" ? message.error : "no data";
      this.app.notify(`download ${name}: ${why}`);
      return;
    }
    const bytes = Uint8Array.from(atob(message.data), (char) => char.charCodeAt(0));
    const url = URL.createObjectURL(new Blob([bytes]));
    const link = document.createElement("a");
    link.href = url;
    link.download = name;
    link.click();
    window.setTimeout(() => URL.revokeObjectURL(url), 60_000);
    this.app.notify(`downloaded ${name}`);
  }

  // --- frames ----------------------------------------------------------------------------

  binary(frame: BinaryFrame): void {
    if (frame.type !== "browser" || frame.profile !== this.profileId || frame.tab !== this.tab) return;
    this.hook.received += 1;
    this.waiting = frame; // newest wins: an older frame still waiting is dropped
    if (!this.decoding) void this.decodeNext();
  }

  /** Decode and draw until nothing waits; each turn takes the newest frame that arrived. */
  private async decodeNext(): Promise<void> {
    this.decoding = true;
    for (let frame = this.takeWaiting(); frame; frame = this.takeWaiting()) {
      const started = performance.now();
      try {
        const type = frame.format === FORMAT_JPEG ? "image/jpeg" : "image/webp";
        const bitmap = await createImageBitmap(new Blob([frame.image], { type }));
        const decoded = performance.now();
        this.draw(bitmap, frame);
        this.hook.drawn += 1;
        this.hook.pageWidth = frame.pageWidth;
        this.canvas.dataset.pageWidth = String(frame.pageWidth);
        if (frame.key || this.hook.drawn % 30 === 0) {
          this.app.perf.add("frame_decode", decoded - started, { key: frame.key, bytes: frame.image.length });
        }
      } catch {
        // A frame that does not decode is skipped; the next one replaces it.
      }
    }
    this.decoding = false;
  }

  private takeWaiting(): BrowserFrame | null {
    const frame = this.waiting;
    this.waiting = null;
    return frame;
  }

  private draw(bitmap: ImageBitmap, frame: BrowserFrame): void {
    const canvas = this.canvas;
    const ratio = window.devicePixelRatio || 1;
    const width = Math.max(1, Math.round(canvas.clientWidth * ratio));
    const height = Math.max(1, Math.round(canvas.clientHeight * ratio));
    if (canvas.width !== width || canvas.height !== height) {
      canvas.width = width;
      canvas.height = height;
    }
    const context = canvas.getContext("2d");
    if (context === null) return;
    const scale = Math.min(width / bitmap.width, height / bitmap.height);
    const drawWidth = bitmap.width * scale;
    const drawHeight = bitmap.height * scale;
    const x = (width - drawWidth) / 2;
    const y = (height - drawHeight) / 2;
    context.clearRect(0, 0, width, height);
    context.drawImage(bitmap, x, y, drawWidth, drawHeight);
    if (this.lastFrame !== bitmap) {
      // A resize redraws the last frame itself: closing it then would detach it for good.
      this.lastFrame?.close();
      this.lastFrame = bitmap;
    }
    this.placement = {
      x: x / ratio,
      y: y / ratio,
      width: drawWidth / ratio,
      height: drawHeight / ratio,
      pageWidth: frame.pageWidth || frame.width,
      pageHeight: frame.pageHeight || frame.height,
    };
  }

  /** The canvas's own size in device pixels, for the tab's layout (its owner's applies). */
  private resize(): void {
    if (this.tab === null || this.viewer === null || this.canvas.clientWidth === 0) return;
    const scale = Math.max(0.5, Math.min(4, window.devicePixelRatio || 1));
    const width = Math.min(8192, Math.max(1, Math.round(this.canvas.clientWidth * scale)));
    const height = Math.min(8192, Math.max(1, Math.round(this.canvas.clientHeight * scale)));
    const key = `${width}x${height}@${scale}`;
    if (key === this.sentSize) return;
    this.sentSize = key;
    this.app.send({ kind: "browser_resize", width, height, scale });
    if (this.lastFrame && this.placement) {
      const { pageWidth, pageHeight } = this.placement;
      this.draw(this.lastFrame, { pageWidth, pageHeight } as BrowserFrame);
    }
  }

  // --- gestures --------------------------------------------------------------------------

  /** A point on the canvas in the page's own coordinates, or null off the picture. */
  private pagePoint(event: MouseEvent): { x: number; y: number } | null {
    const place = this.placement;
    if (!place) return null;
    const box = this.canvas.getBoundingClientRect();
    const x = ((event.clientX - box.left - place.x) / place.width) * place.pageWidth;
    const y = ((event.clientY - box.top - place.y) / place.height) * place.pageHeight;
    if (x < 0 || y < 0 || x > place.pageWidth || y > place.pageHeight) return null;
    return { x: Math.round(x * 10) / 10, y: Math.round(y * 10) / 10 };
  }

  private gesture(event: Record<string, unknown>): void {
    if (!this.controls) return;
    this.inputSeq += 1;
    this.app.send({ kind: "browser_input", seq: this.inputSeq, event });
  }

  sendText(text: string): void {
    if (text) this.gesture({ text: { text } });
  }

  sendKey(key: string, code: string): void {
    this.gesture({ key: { key, code, down: true } });
    this.gesture({ key: { key, code, down: false } });
  }

  private listen(): void {
    const canvas = this.canvas;
    canvas.addEventListener("pointerdown", (event) => {
      canvas.focus();
      const point = this.pagePoint(event);
      if (!point) return;
      const touch = event.pointerType !== "mouse";
      this.pointer = { id: event.pointerId, x: event.clientX, y: event.clientY, moved: false, touch };
      capture(canvas, event.pointerId);
      if (!touch) this.gesture({ press: { ...point, button: buttonName(event.button), down: true, clicks: event.detail || 1, mods: mods(event) } });
    });
    canvas.addEventListener("pointermove", (event) => {
      const point = this.pagePoint(event);
      const pointer = this.pointer;
      if (pointer?.touch && pointer.id === event.pointerId) {
        // A finger drags to scroll the page, as it would on the phone itself.
        const dx = event.clientX - pointer.x;
        const dy = event.clientY - pointer.y;
        if (!pointer.moved && Math.hypot(dx, dy) < TAP_SLOP_PX) return;
        pointer.moved = true;
        pointer.x = event.clientX;
        pointer.y = event.clientY;
        const place = this.placement;
        if (point && place) {
          const ratio = place.pageWidth / place.width;
          this.gesture({ wheel: { ...point, dx: -dx * ratio, dy: -dy * ratio } });
        }
        return;
      }
      if (point) this.gesture({ move: { ...point, buttons: event.buttons, mods: mods(event) } });
    });
    const up = (event: PointerEvent) => {
      const pointer = this.pointer;
      if (pointer?.id !== event.pointerId) return;
      this.pointer = null;
      const point = this.pagePoint(event);
      if (!point) return;
      if (pointer.touch) {
        if (pointer.moved || event.type === "pointercancel") return;
        this.gesture({ press: { ...point, button: "left", down: true, clicks: 1 } });
      }
      this.gesture({ press: { ...point, button: pointer.touch ? "left" : buttonName(event.button), down: false, clicks: 1, mods: mods(event) } });
    };
    canvas.addEventListener("pointerup", up);
    canvas.addEventListener("pointercancel", up);
    canvas.addEventListener("contextmenu", (event) => {
      event.preventDefault();
    });
    canvas.addEventListener(
      "wheel",
      (event) => {
        event.preventDefault();
        const point = this.pagePoint(event);
        if (point) this.gesture({ wheel: { ...point, dx: event.deltaX, dy: event.deltaY, mods: mods(event) } });
      },
      { passive: false },
    );
    const key = (event: KeyboardEvent) => {
      if (event.isComposing) return;
      event.preventDefault();
      this.gesture({ key: { key: event.key, code: event.code, down: event.type === "keydown", mods: mods(event) } });
    };
    canvas.addEventListener("keydown", key);
    canvas.addEventListener("keyup", key);
  }
}

/** Keep a drag's moves coming when it leaves the canvas. Capture is a nicety: it throws
 * (NotFoundError) for a pointer no longer active, and the gesture must still be sent. */
function capture(canvas: HTMLCanvasElement, pointerId: number): void {
  try {
    canvas.setPointerCapture(pointerId);
  } catch {
    // The pointer is gone already: its pointerup is on its way and ends the gesture.
  }
}

function buttonName(button: number): string {
  return button === 1 ? "middle" : button === 2 ? "right" : "left";
}

function mods(event: MouseEvent | KeyboardEvent): Record<string, boolean> {
  return { alt: event.altKey, ctrl: event.ctrlKey, meta: event.metaKey, shift: event.shiftKey };
}

async function base64(file: File): Promise<string> {
  const bytes = new Uint8Array(await file.arrayBuffer());
  let binary = "";
  for (let start = 0; start < bytes.length; start += 0x8000) {
    binary += String.fromCharCode(...bytes.subarray(start, start + 0x8000));
  }
  return btoa(binary);
}
