"""The dictate worker kind: speech to words for a take, text to speech for a seat, offline.

`protocol` is what the supervisor imports (`DICTATE` and the structs that cross ZeroMQ); the
rest is the worker's own: `audio` (the wire's 20 ms frames), `vad` (which frames hold a voice),
`endpointer` and `segmenter` (phases, levels and segments of speech, pure), `windows` (what of a
take is read when and which words are final, pure), `lane` and `engine` (faster-whisper, one
decode at a time), `take` (one take's pipeline), `shaping` (the `[dictate]`
axes, pure), `wer` (word error rate, pure), `models` (which model, never fetched), `tts`
(espeak-ng or Piper), `corpus` (the committed clips the bench and the tests read) and `worker`.
"""
