"""Which prompt runs and which wait: the agent worker's turn queue, free of I/O.

The CLI would take a prompt sent mid-turn into the running turn; forge's seats promise a queue
instead (a prompt sent while the agent works waits its turn, visible to every view), so the
worker sends the CLI one prompt at a time and keeps the rest here.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field


@dataclass(frozen=True)
class QueuedPrompt:
    prompt_id: int
    text: str


@dataclass
class TurnQueue:
    """The running prompt (None: the agent is idle) and the prompts waiting behind it."""

    running: QueuedPrompt | None = None
    waiting: deque[QueuedPrompt] = field(default_factory=deque)
    _next_id: int = 1

    def submit(self, text: str) -> tuple[QueuedPrompt, int]:
        """Add a prompt: (it, how many prompts are ahead of it); 0 ahead means it runs now."""
        prompt = QueuedPrompt(self._next_id, text)
        self._next_id += 1
        if self.running is None:
            self.running = prompt
            return prompt, 0
        self.waiting.append(prompt)
        return prompt, len(self.waiting)

    def finish(self) -> tuple[QueuedPrompt | None, QueuedPrompt | None]:
        """The running turn ended: (the prompt that ended, the one that runs next, if any)."""
        ended = self.running
        self.running = self.waiting.popleft() if self.waiting else None
        return ended, self.running

    def clear(self) -> list[QueuedPrompt]:
        """Drop every prompt, the running one first (the session is stopping)."""
        dropped = ([self.running] if self.running is not None else []) + list(self.waiting)
        self.running = None
        self.waiting.clear()
        return dropped
