"""The state words: shell integration first, then termios, then the foreground process group."""

from __future__ import annotations

from forge.workers.terminal.state import Probe, Source, State, StateDetector

SHELL = 100
AT_PROMPT = Probe(foreground_pgid=SHELL, shell_pgid=SHELL, echo=False, canonical=False)
COMMAND = Probe(foreground_pgid=200, shell_pgid=SHELL, echo=True, canonical=True)
READ_S = Probe(foreground_pgid=SHELL, shell_pgid=SHELL, echo=False, canonical=True)


def test_starting_until_the_shell_speaks() -> None:
    detector = StateDetector()
    assert not detector.observe(AT_PROMPT)
    assert detector.state is State.STARTING
    assert detector.scan(b"$ ")
    assert (detector.state, detector.source) == (State.IDLE, Source.PROCESS)


def test_foreground_process_group_means_running() -> None:
    detector = StateDetector()
    detector.scan(b"$ ")
    assert detector.observe(COMMAND)
    assert (detector.state, detector.source) == (State.RUNNING, Source.PROCESS)
    assert detector.observe(AT_PROMPT)
    assert detector.state is State.IDLE
    assert not detector.observe(AT_PROMPT)


def test_echo_off_with_line_input_is_a_password() -> None:
    detector = StateDetector()
    detector.scan(b"Password: ")
    assert detector.observe(READ_S)
    assert (detector.state, detector.source) == (State.PASSWORD, Source.TERMIOS)


def test_shell_integration_marks_win_over_the_process_probe() -> None:
    detector = StateDetector()
    detector.observe(AT_PROMPT)
    detector.scan(b"\x1b]133;A\x07$ \x1b]133;B\x07")
    assert (detector.state, detector.source) == (State.IDLE, Source.SHELL_INTEGRATION)
    assert detector.scan(b"\x1b]133;C\x1b\\")
    assert detector.state is State.RUNNING
    detector.scan(b"out\x1b]133;D;0")
    assert detector.state is State.RUNNING
    assert detector.scan(b"\x07")
    assert detector.state is State.IDLE


def test_title_and_exit() -> None:
    detector = StateDetector()
    assert detector.scan(b"\x1b]0;build: ok\x07")
    assert detector.title == "build: ok"
    assert detector.exited(130)
    assert detector.summary() == (State.EXITED, Source.PROCESS, "build: ok", 130)


def test_a_title_reaches_clients_without_control_or_bidi_characters() -> None:
    """A program chose the title: C0 and C1 controls, escapes cut short and bidirectional
    overrides or isolates (which would reorder the strip's words) are removed; it is one line."""
    detector = StateDetector()
    assert detector.scan(b"\x1b]0;a\x07b\x1b[31m\x07")  # the title ends at its BEL
    assert detector.title == "a"
    hostile = "x\x08\x0d\x9b31m\u202eevil\u2066y\u2069\u200f\nz\x7f".encode()
    assert detector.scan(b"\x1b]2;" + hostile + b"\x1b\\")
    assert detector.title == "x 31mevily z"  # the C1 CSI is gone; its parameters are text
    detector.scan(b"\x1b]2;" + b"w" * 5000 + b"\x07")
    assert len(detector.title) <= 200
