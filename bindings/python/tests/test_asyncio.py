"""asyncio: awaitable calls that leave the loop free and cancel their C wait; streams."""

from __future__ import annotations

import asyncio

import pytest
from conftest import blocked_calls

import mq


async def _until(cond: object, timeout: float = 10.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not cond():  # type: ignore[operator]
        assert loop.time() < deadline, "timed out"
        await asyncio.sleep(0.001)


@pytest.mark.asyncio
async def test_poll_async_waits_without_blocking_the_loop(broker: mq.Broker) -> None:
    broker.create_topic("t")
    broker.subscribe("t", "g")
    task = asyncio.create_task(broker.poll_async("t", "g", 0, timeout=None))
    await _until(lambda: blocked_calls() == 1)  # the loop runs while the poll waits
    assert await broker.publish_async("t", b"hello") == (0, 0)
    msgs = await asyncio.wait_for(task, 10)
    assert [m.value for m in msgs] == [b"hello"]
    assert await broker.poll_async("t", "g", 0, timeout=0) == []


@pytest.mark.asyncio
async def test_cancelling_the_task_cancels_the_c_call(broker: mq.Broker) -> None:
    broker.create_topic("t", capacity=1)
    broker.subscribe("t", "g")
    poll = asyncio.create_task(broker.poll_async("t", "g", 0, timeout=None))
    await _until(lambda: blocked_calls() == 1)
    poll.cancel()
    with pytest.raises(asyncio.CancelledError):
        await poll
    assert blocked_calls() == 0  # the C wait ended with the task
    broker.publish("t", b"fills it")
    pub = asyncio.create_task(broker.publish_async("t", b"waits", timeout=None))
    await _until(lambda: blocked_calls() == 1)
    pub.cancel()
    with pytest.raises(asyncio.CancelledError):
        await pub
    assert blocked_calls() == 0
    assert broker.partition_info("t", 0).end == 1  # nothing appended by the cancelled publish


@pytest.mark.asyncio
async def test_publish_async_full_with_no_wait(broker: mq.Broker) -> None:
    broker.create_topic("t", capacity=1)
    broker.subscribe("t", "g")
    await broker.publish_async("t", b"1", key=b"k", timeout=0)
    with pytest.raises(mq.Full):
        await broker.publish_async("t", b"2", key=b"k", timeout=0)
    with pytest.raises(mq.Full):
        await broker.publish_async("t", b"2", timeout=0.01)


@pytest.mark.asyncio
async def test_stream_iterates_and_bounds_its_buffer(broker: mq.Broker) -> None:
    broker.create_topic("t", capacity=64)
    async with broker.stream("t", "g", prefetch=4, buffer=1) as stream:
        for i in range(20):
            broker.publish("t", str(i).encode())
        got = []
        async for m in stream:
            got.append(int(m.value))
            if len(got) == 5:
                break
        # Nobody reads now: the loop holds at most one polled batch, the rest stays in the log.
        await _until(lambda: broker.group_info("t", "g", 0).next > 5)
        info = broker.group_info("t", "g", 0)
        assert info.next - info.committed <= 4
        assert info.next <= 5 + 4
    assert got == [0, 1, 2, 3, 4]
    # Closed with a message waiting: it was nacked, so the group has it again.
    info = broker.group_info("t", "g", 0)
    assert info.committed == 5 and info.in_flight == 0


@pytest.mark.asyncio
async def test_stream_delivers_everything_at_least_once(broker: mq.Broker) -> None:
    broker.create_topic("t", partitions=3, capacity=16)
    seen: set[bytes] = set()

    async def produce() -> None:
        for i in range(60):  # more than the partitions hold: back-pressure from the stream
            await broker.publish_async("t", f"{i}".encode(), key=f"k{i % 7}".encode())

    async with broker.stream("t", "g") as stream:
        producer = asyncio.create_task(produce())
        async for m in stream:
            seen.add(m.value)
            if len(seen) == 60:
                break
        await producer
    assert seen == {f"{i}".encode() for i in range(60)}
