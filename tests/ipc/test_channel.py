"""Socket-level rules that need no worker: zero-copy from 16 KiB, offers refused when full."""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import zmq
import zmq.asyncio

from forge.ipc import channel
from forge.ipc.envelope import COPY_THRESHOLD, Envelope, MessageType, decode


@pytest.fixture
def socket_path() -> Iterator[Path]:
    """An ipc:// path short enough for the Unix socket limit (pytest's tmp_path may not be)."""
    directory = tempfile.mkdtemp(prefix="forge-ipc-test-")
    yield Path(directory) / "s"
    shutil.rmtree(directory, ignore_errors=True)


def test_payloads_from_16_kib_go_zero_copy_and_smaller_ones_are_copied() -> None:
    small = bytes(COPY_THRESHOLD - 1)
    large = bytes(COPY_THRESHOLD)
    assert channel.outgoing(small) is small
    frame = channel.outgoing(large)
    assert isinstance(frame, zmq.Frame)
    assert memoryview(frame).obj is frame
    assert frame.bytes == large


async def test_an_offer_to_a_peer_that_is_not_there_is_refused_not_lost(
    socket_path: Path,
) -> None:
    context = zmq.asyncio.Context()
    router = channel.open_router(context, socket_path, 4)
    try:
        data = Envelope(MessageType.DATA, stream_id="s", seq=1, payloads=(b"x",))
        assert channel.offer(router, data, b"nobody") is False
        frames = channel.frames_for(data, b"nobody")
        assert channel.offer_now(channel.plain(router), frames) is False
    finally:
        router.close(linger=0)
        context.term()


@pytest.mark.parametrize("way", ["asyncio offer", "plain offer_now"])
async def test_offers_beyond_the_high_water_mark_are_refused(socket_path: Path, way: str) -> None:
    context = zmq.asyncio.Context()
    router = channel.open_router(context, socket_path, 4)
    dealer = channel.open_dealer(context, f"ipc://{socket_path}", b"peer", 4)
    try:
        hello = Envelope(MessageType.HELLO, body={})
        await channel.send(dealer, hello)
        identity, *_ = await router.recv_multipart()
        assert identity == b"peer"
        frame = Envelope(MessageType.DATA, stream_id="s", seq=1, payloads=(bytes(70_000),))
        now = channel.plain(router)

        def offer() -> bool:
            if way == "asyncio offer":
                return channel.offer(router, frame, identity)
            return channel.offer_now(now, channel.frames_for(frame, identity))

        results = [offer() for _ in range(200)]
        assert results[0]
        assert not all(results)
    finally:
        dealer.close(linger=0)
        router.close(linger=0)
        context.term()


async def test_an_offer_behind_a_waiting_send_is_refused_at_once(socket_path: Path) -> None:
    context = zmq.asyncio.Context()
    router = channel.open_router(context, socket_path, 2)
    dealer = channel.open_dealer(context, f"ipc://{socket_path}", b"peer", 2)
    frame = Envelope(MessageType.DATA, stream_id="s", seq=1, payloads=(bytes(70_000),))
    try:
        # Fill every queue on the way to the (unread) router. ZeroMQ's I/O thread may still move
        # a message on into the kernel after the first refusal, freeing room for one send; fill
        # again until a send really has to wait.
        for _ in range(100):
            filled = next((n for n in range(100_000) if not channel.offer(dealer, frame)), None)
            assert filled is not None
            waiting = asyncio.ensure_future(channel.send(dealer, frame))
            await asyncio.sleep(0)
            if not waiting.done():
                break
        assert not waiting.done()
        assert channel.offer(dealer, frame) is False
        waiting.cancel()
    finally:
        dealer.close(linger=0)
        router.close(linger=0)
        context.term()


async def test_a_pump_hands_over_what_was_queued_before_it_and_all_that_follows(
    socket_path: Path,
) -> None:
    context = zmq.asyncio.Context()
    router = channel.open_router(context, socket_path, 1000)
    dealer = channel.open_dealer(context, f"ipc://{socket_path}", b"peer", 1000)
    received: list[bytes] = []
    arrived = asyncio.Event()

    def on_message(frames: list[zmq.Frame]) -> None:
        received.append(frames[1].bytes)
        arrived.set()

    try:
        for number in range(3 * channel.YIELD_EVERY):  # more than one drain hands over
            await channel.send(dealer, Envelope(MessageType.EVENT, seq=number))
        # Queued before the pump exists: no edge of ZeroMQ's descriptor will announce these.
        assert zmq.Socket.shadow(router.underlying).poll(5000)
        pump = channel.MessagePump(router, on_message)
        while len(received) < 3 * channel.YIELD_EVERY:
            arrived.clear()
            await arrived.wait()
        await channel.send(dealer, Envelope(MessageType.EVENT, seq=999))
        while len(received) < 3 * channel.YIELD_EVERY + 1:
            arrived.clear()
            await arrived.wait()
        pump.close()
        seqs = [decode([header]).seq for header in received]
        assert seqs == [*range(3 * channel.YIELD_EVERY), 999]
    finally:
        dealer.close(linger=0)
        router.close(linger=0)
        context.term()


async def test_incoming_yields_what_was_queued_and_what_arrives_while_the_consumer_works(
    socket_path: Path,
) -> None:
    """The worker's bulk-in: messages queued before the reader exists raise no edge of
    ZeroMQ's descriptor, those sent while the consumer awaits its work arrive behind them, and
    one sent once nothing waits wakes the consumer through the reader: in order, none lost."""
    context = zmq.asyncio.Context()
    router = channel.open_router(context, socket_path, 1000)
    dealer = channel.open_dealer(context, f"ipc://{socket_path}", b"peer", 1000)
    shadow = zmq.Socket.shadow(router.underlying)
    sent = 3 * channel.YIELD_EVERY
    try:
        for number in range(sent):
            await channel.send(dealer, Envelope(MessageType.EVENT, seq=number))
        assert shadow.poll(5000)
        seqs: list[int] = []
        late: asyncio.Task[None] | None = None
        async with contextlib.aclosing(channel.incoming(router)) as arriving:
            async for frames in arriving:
                seqs.append(decode([frames[1].bytes]).seq)
                if len(seqs) == sent:  # the consumer is busy while three more are sent
                    for number in (1000, 1001, 1002):
                        await channel.send(dealer, Envelope(MessageType.EVENT, seq=number))
                if len(seqs) == sent + 3:
                    # Runs only once the consumer suspends, which it does only when nothing is
                    # queued: this one can arrive only through the descriptor's reader.
                    late = asyncio.create_task(
                        channel.send(dealer, Envelope(MessageType.EVENT, seq=2000))
                    )
                if len(seqs) == sent + 4:
                    break
        assert late is not None
        await late
        assert seqs == [*range(sent), 1000, 1001, 1002, 2000]
    finally:
        dealer.close(linger=0)
        router.close(linger=0)
        context.term()
