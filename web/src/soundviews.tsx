// The controls for voice and sound: a box's microphone (with its level meter, phase and
// words so far), the seat's speaker switch, and a browser tab's sound toggle.

import { useEffect, useState } from "preact/hooks";

import type { App } from "./app";
import type { BrowserSurface } from "./browser";
import { dictationOf } from "./dictation";
import { TabSound } from "./tabsound";
import { speakerOf } from "./voice";
import type { Seat } from "./wire";

function useBump(): () => void {
  const [, set] = useState(0);
  return () => set((n) => n + 1);
}

/** The meter's width: the level in dBFS from -60 (empty) to 0 (full). */
function meterPercent(rms: number): number {
  if (rms <= 0) return 0;
  return Math.max(0, Math.min(100, ((20 * Math.log10(rms) + 60) / 60) * 100));
}

const PHASE_WORDS: Record<string, string> = {
  listening: "listening",
  speech: "hearing you",
  silence: "pause",
  transcribing: "writing it down",
  done: "done",
};

/** A box's microphone: press to dictate into it, press again to end; its words land in `land`.
 * With `sendable` (the Agent pane's composer) a live take also offers "Send": stop, and the
 * words go to the agent as the next prompt instead. */
export function MicButton({
  app,
  seat,
  box,
  land,
  sendable = false,
}: {
  app: App;
  seat: Seat;
  box: string;
  land: (text: string) => void;
  sendable?: boolean;
}) {
  const dictation = dictationOf(app);
  const bump = useBump();
  useEffect(() => dictation.subscribe(bump), [dictation]);
  useEffect(() => () => dictation.release(box), [dictation, box]);
  const mine = dictation.box === box;
  const state = mine ? dictation.state : "idle";
  const busy = !mine && dictation.state !== "idle";
  const press = () => {
    if (state === "idle") void dictation.begin(seat, box, land);
    else dictation.stop();
  };
  const label = state === "idle" ? "dictate" : state === "ending" ? "writing it down" : "stop dictating";
  return (
    <span class="mic" data-take-state={state} data-box={box}>
      <button
        type="button"
        class={state === "live" ? "primary" : ""}
        aria-label={label}
        aria-pressed={state === "live" || state === "opening"}
        title={busy ? "another box is taking dictation" : label}
        disabled={busy || state === "ending"}
        onClick={press}
      >
        {state === "idle" ? "Dictate" : state === "ending" ? "…" : "Stop"}
      </button>
      {state === "live" || state === "ending" ? (
        <>
          <span class="meter" role="meter" aria-label="microphone level" aria-valuenow={Math.round(meterPercent(dictation.level))}>
            <span style={{ width: `${meterPercent(dictation.level)}%` }} />
          </span>
          <span class="phase" data-phase={dictation.phase ?? ""}>
            {PHASE_WORDS[dictation.phase ?? ""] ?? dictation.phase ?? "starting…"}
          </span>
          {state === "live" && sendable ? (
            <button type="button" class="primary" aria-label="stop and send as the prompt" onClick={() => dictation.stop(true)}>
              Stop &amp; send
            </button>
          ) : null}
          {state === "live" ? (
            <button type="button" aria-label="cancel dictation" onClick={() => dictation.cancel()}>
              ×
            </button>
          ) : null}
        </>
      ) : null}
      {mine && dictation.partial && state !== "idle" ? <span class="partial muted">{dictation.partial}</span> : null}
      {mine && state === "idle" && dictation.why ? (
        <span class="why" role="status" data-dictation-why>
          {dictation.why}
        </span>
      ) : null}
    </span>
  );
}

/** The speaker follows the seat on screen (held by the seat view, whichever pane shows the
 * switch, so moving between panes never pauses the voice). */
export function useSpeakerFollow(app: App, seat: Seat): void {
  const speaker = speakerOf(app);
  useEffect(() => {
    speaker.show(seat);
    return () => speaker.show(null);
  }, [speaker, seat.org, seat.project, seat.label]);
}

/** The seat's speaker switch: hear what the seat says (`voice_mode`): the seat bar's, or the
 * Agent pane's composer's (the agent's `voice__say` plays here). */
export function SpeakerSwitch({ app }: { app: App }) {
  const speaker = speakerOf(app);
  const bump = useBump();
  useEffect(() => speaker.subscribe(bump), [speaker]);
  const on = speaker.on;
  return (
    <span class="speaker" data-voice={on ? "on" : "off"}>
      <button
        type="button"
        aria-label={on ? "stop hearing this seat" : "hear this seat"}
        aria-pressed={on}
        class={on ? "primary" : ""}
        onClick={() => speaker.toggle()}
      >
        Voice
        {on && speaker.listeners !== null && speaker.listeners > 1 ? ` · ${speaker.listeners}` : ""}
      </button>
      {speaker.why ? (
        <span class="why" role="status">
          {speaker.why}
        </span>
      ) : null}
    </span>
  );
}

/** The viewed tab's sound toggle; its player lives as long as the browser pane. */
export function TabSoundToggle({ app, surface }: { app: App; surface: BrowserSurface }) {
  const [sound, setSound] = useState<TabSound | null>(null);
  const bump = useBump();
  useEffect(() => {
    const made = new TabSound(app, surface);
    made.onChange = bump;
    setSound(made);
    return () => made.dispose();
  }, [app, surface]);
  useEffect(() => sound?.follow(), [sound, surface.profileId, surface.tab]);
  if (!sound || surface.tab === null) return null;
  const why = sound.why;
  return (
    <button
      type="button"
      class="tabsound"
      aria-label={sound.on ? "mute this tab" : "hear this tab"}
      aria-pressed={sound.on}
      data-sound={sound.on ? "on" : "off"}
      title={why ?? (sound.on ? "this tab's sound plays here" : "this tab's sound is off here")}
      onClick={() => sound.toggle()}
    >
      {why ? "No sound" : "Sound"}
    </button>
  );
}
