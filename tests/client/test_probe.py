"""The T21 probe as a pure machine: quiet measured in bytes at beats, one probe, a deadline."""

from __future__ import annotations

from forge.client.probe import Beat, Probe, ProbeTiming


def test_the_seed_numbers_are_the_defaults() -> None:
    timing = ProbeTiming()
    assert (timing.quiet_s, timing.deadline_s) == (15.0, 10.0)


def test_no_probe_before_fifteen_quiet_seconds() -> None:
    probe = Probe(now=0.0, received=100)
    assert probe.beat(14.9, 100) is Beat.QUIET
    assert probe.beat(15.0, 100) is Beat.PING
    assert probe.outstanding


def test_bytes_seen_at_a_beat_restart_the_quiet_from_that_beat() -> None:
    probe = Probe(now=0.0, received=0)
    assert probe.beat(10.0, 5) is Beat.QUIET
    assert probe.beat(24.0, 5) is Beat.QUIET
    assert probe.beat(25.0, 5) is Beat.PING


def test_an_unanswered_probe_is_dead_after_ten_seconds() -> None:
    probe = Probe(now=0.0)
    assert probe.beat(15.0, 0) is Beat.PING
    assert probe.beat(24.9, 0) is Beat.QUIET
    assert probe.beat(25.0, 0) is Beat.DEAD


def test_any_byte_answers_the_probe() -> None:
    probe = Probe(now=0.0)
    assert probe.beat(15.0, 0) is Beat.PING
    assert probe.beat(16.0, 7) is Beat.QUIET
    assert not probe.outstanding
    assert probe.beat(30.9, 7) is Beat.QUIET
    assert probe.beat(31.0, 7) is Beat.PING


def test_a_probe_out_is_never_rearmed() -> None:
    probe = Probe(now=0.0)
    assert probe.beat(15.0, 0) is Beat.PING
    for second in range(16, 25):
        assert probe.beat(float(second), 0) is Beat.QUIET


def test_a_wake_probes_at_once_but_leaves_an_outstanding_deadline_standing() -> None:
    probe = Probe(now=0.0)
    assert probe.wake(3.0) is Beat.PING
    assert probe.wake(8.0) is Beat.QUIET
    assert probe.beat(12.9, 0) is Beat.QUIET
    assert probe.beat(13.0, 0) is Beat.DEAD


def test_timings_scale() -> None:
    probe = Probe(now=0.0, timing=ProbeTiming(quiet_s=0.15, deadline_s=0.1, beat_s=0.01))
    assert probe.beat(0.15, 0) is Beat.PING
    assert probe.beat(0.25, 0) is Beat.DEAD
