// The microphone: getUserMedia into the `forge-capture` AudioWorklet, out as 20 ms frames of
// 16 kHz i16 mono (what kind 0 carries). Opening it asks the person; a refusal is said in words.

/** One 20 ms frame of 16 kHz i16 mono samples. */
export type FrameSink = (frame: Int16Array) => void;

export class Microphone {
  private constructor(
    private readonly stream: MediaStream,
    private readonly context: AudioContext,
    private readonly node: AudioWorkletNode,
  ) {}

  /** Ask for the microphone and start capturing into `sink`; throws an Error in words. */
  static async open(sink: FrameSink): Promise<Microphone> {
    if (!window.isSecureContext) {
      throw new Error("this page cannot reach a microphone here (it needs https, or localhost)");
    }
    let stream: MediaStream;
    try {
      stream = await navigator.mediaDevices.getUserMedia({
        audio: { channelCount: 1, echoCancellation: true, noiseSuppression: true, autoGainControl: true },
      });
    } catch (error) {
      throw new Error(refusal(error), { cause: error });
    }
    // The context runs at the track's own rate where it says one (Firefox refuses to connect a
    // track to a context of another rate); the worklet resamples to 16 kHz either way.
    const rate = stream.getAudioTracks()[0]?.getSettings().sampleRate;
    const context = new AudioContext(rate ? { sampleRate: rate } : {});
    try {
      await context.audioWorklet.addModule(FORGE_WORKLET_URL);
      const node = new AudioWorkletNode(context, "forge-capture", { numberOfOutputs: 1 });
      node.port.onmessage = (event: MessageEvent) => {
        if (event.data instanceof Int16Array) sink(event.data);
      };
      context.createMediaStreamSource(stream).connect(node);
      node.connect(context.destination); // pulled by the graph; it writes nothing (silence)
      await context.resume();
      return new Microphone(stream, context, node);
    } catch (error) {
      for (const track of stream.getTracks()) track.stop();
      void context.close();
      throw new Error(`the microphone could not start: ${String(error)}`, { cause: error });
    }
  }

  /** Stop capturing: the tracks end (the browser's recording light goes out). */
  close(): void {
    this.node.port.postMessage("stop");
    this.node.port.onmessage = null;
    for (const track of this.stream.getTracks()) track.stop();
    void this.context.close();
  }
}

function refusal(error: unknown): string {
  const name = error instanceof DOMException ? error.name : "";
  if (name === "NotAllowedError" || name === "SecurityError") return "the microphone was not allowed on this page";
  if (name === "NotFoundError" || name === "OverconstrainedError") return "no microphone was found";
  if (name === "NotReadableError") return "the microphone is busy in another program";
  return `the microphone could not open: ${String(error)}`;
}
