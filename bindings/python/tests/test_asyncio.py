"""asyncio: awaitable calls that leave the loop free and cancel their C wait; streams."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Coroutine
from typing import Any

import pytest
from conftest import blocked_calls, wait_until

import mq
from mq._asyncio import pending_calls


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


# ---- mq's asynchronous calls (mq 1.4): no thread per pending call -------------------------------


def _threads() -> int:
    """The process's OS threads (library threads included)."""
    return len(os.listdir("/proc/self/task"))


async def _turn() -> None:
    """One turn of the loop (not a timed wait): tasks just created run to their first await."""
    await asyncio.sleep(0)


@pytest.mark.asyncio
async def test_a_pending_poll_is_completed_by_a_later_publish(broker: mq.Broker) -> None:
    broker.create_topic("t", partitions=2)
    broker.subscribe("t", "g")
    poll = asyncio.create_task(broker.poll_async("t", "g", 1, max=5))
    await _turn()
    assert pending_calls() == 1 and blocked_calls() == 1  # pending in mq, no thread waiting
    assert not poll.done()
    key = next(k for k in (b"a", b"b", b"c", b"d") if mq.key_partition(k, 2) == 1)
    await broker.publish_many_async("t", [mq.Record(b"v", key, [(b"h", b"1")])])
    msgs = await asyncio.wait_for(poll, 10)
    assert [(m.partition, m.value, m.headers) for m in msgs] == [(1, b"v", ((b"h", b"1"),))]
    assert pending_calls() == 0 and blocked_calls() == 0
    # ack then poll: the ack stands at once, the poll waits for the next message.
    again = asyncio.create_task(broker.ack_poll_async("t", "g", 1, msgs[0].offset, max=5))
    await _turn()
    assert broker.group_info("t", "g", 1).committed == 1
    assert pending_calls() == 1
    assert await broker.publish_async("t", b"next", key=key) == (1, 1)
    got = await asyncio.wait_for(again, 10)
    assert [(m.partition, m.offset, m.value) for m in got] == [(1, 1, b"next")]


@pytest.mark.asyncio
async def test_a_publish_pending_on_a_full_partition_is_completed_by_an_ack(
    broker: mq.Broker,
) -> None:
    broker.create_topic("t", capacity=1)
    broker.subscribe("t", "g")
    await broker.publish_async("t", b"fill")
    pub = asyncio.create_task(broker.publish_async("t", b"waits", key=b"k", headers=[(b"a", b"b")]))
    await _turn()
    assert pending_calls() == 1 and not pub.done()
    assert broker.partition_info("t", 0).producer_waits == 1
    (m,) = await broker.poll_async("t", "g", 0)
    broker.ack("t", "g", 0, m.offset)
    assert await asyncio.wait_for(pub, 10) == (0, 1)
    batch = asyncio.create_task(broker.publish_many_async("t", [b"later"]))
    await _turn()
    assert pending_calls() == 1 and not batch.done()
    (m,) = await broker.poll_async("t", "g", 0)
    assert (m.key, m.value, m.headers) == (b"k", b"waits", ((b"a", b"b"),))
    # The ack of the ack-then-poll makes the room the batch waits for; the poll gets it.
    (m,) = await asyncio.wait_for(broker.ack_poll_async("t", "g", 0, 1), 10)
    assert await asyncio.wait_for(batch, 10) == [(0, 2)]
    assert (m.offset, m.value) == (2, b"later")
    assert broker.partition_info("t", 0).producer_waits == 2


@pytest.mark.asyncio
async def test_deadlines_end_pending_calls(broker: mq.Broker) -> None:
    broker.create_topic("t", capacity=1)
    broker.subscribe("t", "g")
    assert await broker.poll_async("t", "g", 0, timeout=0.02) == []
    await broker.publish_async("t", b"fill")
    with pytest.raises(mq.Full):
        await broker.publish_async("t", b"no room", timeout=0.02)
    with pytest.raises(mq.Full) as e:
        await broker.publish_many_async("t", [b"a", b"b"], timeout=0.02)
    assert e.value.published == 0  # type: ignore[attr-defined]
    assert [o for _, o in e.value.results] == [-1, -1]  # type: ignore[attr-defined]
    assert pending_calls() == 0


@pytest.mark.asyncio
async def test_cancel_by_task_and_by_token(broker: mq.Broker) -> None:
    broker.create_topic("t", capacity=1)
    broker.subscribe("t", "g")
    poll = asyncio.create_task(broker.poll_async("t", "g", 0))
    await _turn()
    poll.cancel()
    with pytest.raises(asyncio.CancelledError):
        await poll
    assert pending_calls() == 0  # the done ran before CancelledError went on
    tok = mq.CancelToken()
    poll = asyncio.create_task(broker.poll_async("t", "g", 0, cancel=tok))
    await _turn()
    tok.cancel()
    with pytest.raises(mq.Cancelled) as e:
        await poll
    assert e.value.message  # the library's text, read on the completer thread
    await broker.publish_async("t", b"fill")
    tok.reset()
    pub = asyncio.create_task(broker.publish_many_async("t", [b"x"], cancel=tok))
    await _turn()
    tok.cancel()
    with pytest.raises(mq.Cancelled) as e:
        await pub
    assert e.value.published == 0  # type: ignore[attr-defined]
    assert broker.partition_info("t", 0).end == 1


@pytest.mark.asyncio
async def test_a_coroutine_closed_unfinished_cancels_its_call(broker: mq.Broker) -> None:
    broker.create_topic("t")
    broker.subscribe("t", "g")
    coro = broker.poll_async("t", "g", 0)
    coro.send(None)  # its first step, as a task would run it: the call is pending
    assert pending_calls() == 1
    coro.close()  # what destroying its task does; what mq uses stays until the done
    await _until(lambda: pending_calls() == 0)
    broker.publish("t", b"for the next poll")
    assert [m.value for m in await broker.poll_async("t", "g", 0)] == [b"for the next poll"]


@pytest.mark.asyncio
async def test_close_completes_pending_calls_with_closed() -> None:
    b = mq.Broker()
    b.create_topic("t", partitions=3, capacity=1)
    b.subscribe("t", "g")
    p0 = b.publish("t", b"fill", key=b"k")[0]
    calls: list[Coroutine[Any, Any, object]] = [
        b.poll_async("t", "g", p) for p in range(3) if p != p0
    ]
    calls.append(b.publish_async("t", b"x", key=b"k"))
    calls.append(b.publish_many_async("t", [(b"k", b"y")]))
    tasks = [asyncio.create_task(c) for c in calls]
    await _turn()
    assert pending_calls() == 4
    b.close()  # returns once every done ran
    assert pending_calls() == 0
    for t in tasks:
        with pytest.raises(mq.Closed):
            await t
    with pytest.raises(mq.Closed):
        await b.poll_async("t", "g", 0)


@pytest.mark.asyncio
async def test_a_thousand_pending_polls_add_no_thread(broker: mq.Broker) -> None:
    broker.create_topic("t", partitions=100)
    for g in range(10):
        broker.subscribe("t", f"g{g}")
    tasks = {(0, 0): asyncio.create_task(broker.poll_async("t", "g0", 0))}
    await _turn()  # the completer thread exists now
    base = _threads()
    for g in range(10):
        for p in range(100):
            if (g, p) != (0, 0):
                tasks[g, p] = asyncio.create_task(broker.poll_async("t", f"g{g}", p))
    await _turn()
    assert pending_calls() == 1000 and blocked_calls() == 1000
    with_pending = _threads()
    assert with_pending == base, (base, with_pending)
    await broker.publish_many_async("t", [b"v"] * 100)  # keyless: round robin
    fed = {p for p in range(100) if broker.partition_info("t", p).end > 0}
    assert fed
    woken = [t for (_, p), t in tasks.items() if p in fed]
    for got in await asyncio.wait_for(asyncio.gather(*woken), 30):
        assert [m.value for m in got] == [b"v"]
    assert _threads() == base
    rest = [t for (_, p), t in tasks.items() if p not in fed]
    for t in rest:
        t.cancel()
    await asyncio.gather(*rest, return_exceptions=True)
    assert pending_calls() == 0 and _threads() == base
    print(f"threads: {base} with 1 pending call, {with_pending} with 1000")


@pytest.mark.asyncio
async def test_messages_larger_than_the_buffer() -> None:
    # Each larger than any buffer before (MQ_ERR_TOO_LARGE, then the same poll with room); the
    # second after an ack-then-poll's ack, which stands.
    with mq.Broker(max_message_bytes=1 << 20) as b:
        b.create_topic("t")
        b.subscribe("t", "g")
        poll = asyncio.create_task(b.poll_async("t", "g", 0, max=1))
        await _turn()
        big = bytes(range(256)) * 1024
        bigger = big * 3
        b.publish_many("t", [big, bigger])
        (m,) = await asyncio.wait_for(poll, 10)
        assert m.value == big
        (m,) = await b.ack_poll_async("t", "g", 0, 0, max=1)
        assert (m.offset, m.value) == (1, bigger)
        assert b.group_info("t", "g", 0).committed == 1


def test_loops_in_two_threads_at_once(broker: mq.Broker) -> None:
    broker.create_topic("t", partitions=2)
    broker.subscribe("t", "g")
    out: dict[int, list[bytes]] = {}

    def run(p: int) -> None:
        async def main() -> list[bytes]:
            return [m.value for m in await broker.poll_async("t", "g", p)]

        out[p] = asyncio.run(main())

    threads = [threading.Thread(target=run, args=(p,)) for p in range(2)]
    for t in threads:
        t.start()
    wait_until(lambda: pending_calls() == 2, what="two pending polls")
    for p in range(2):
        broker.publish("t", f"{p}".encode(), key=None)
    for t in threads:
        t.join(10)
    assert out == {0: [b"0"], 1: [b"1"]}


@pytest.mark.asyncio
async def test_consume_iterates_a_partition_and_the_caller_acks(broker: mq.Broker) -> None:
    broker.create_topic("t")
    broker.subscribe("t", "g")
    for v in (b"a", b"b", b"c"):
        broker.publish("t", v)
    messages = broker.consume("t", "g", 0, max=2)
    seen = []
    async for m in messages:
        seen.append(m.value)
        if m.value == b"b":
            messages.ack(m)  # a and b; c stays in flight
        if len(seen) == 3:
            break
    assert seen == [b"a", b"b", b"c"]
    info = broker.group_info("t", "g", 0)
    assert (info.committed, info.next) == (2, 3)

    # The next message is waited for without a thread, and the broker's close ends the loop.
    async def rest() -> list[bytes]:
        return [m.value async for m in broker.consume("t", "g", 0)]

    task = asyncio.create_task(rest())
    await _until(lambda: pending_calls() == 1)
    broker.publish("t", b"d")
    await _until(lambda: broker.group_info("t", "g", 0).next == 4)
    await _until(lambda: pending_calls() == 1)
    broker.close()
    assert await asyncio.wait_for(task, 10) == [b"d"]


@pytest.mark.asyncio
async def test_consume_ends_when_the_group_goes(broker: mq.Broker) -> None:
    broker.create_topic("t")
    broker.subscribe("t", "g")

    async def drain() -> int:
        return len([m async for m in broker.consume("t", "g", 0)])

    task = asyncio.create_task(drain())
    await _until(lambda: pending_calls() == 1)
    broker.unsubscribe("t", "g")
    assert await asyncio.wait_for(task, 10) == 0
    with pytest.raises(ValueError):
        broker.consume("t", "g", 0, max=0)


# ---- a member's asynchronous polls (mq 1.4, mq_member_*_async) ----------------------------------


@pytest.mark.asyncio
async def test_a_pending_member_poll_is_completed_by_a_publish_on_any_of_its_partitions(
    broker: mq.Broker,
) -> None:
    broker.create_topic("t", partitions=4)
    with broker.join("t", "g") as m:
        assert m.assignment().partitions == (0, 1, 2, 3)
        poll = asyncio.create_task(m.poll_async(max=5))
        await _turn()
        assert pending_calls() == 1 and blocked_calls() == 1  # pending in mq, no thread
        assert not poll.done()
        key = next(k for k in (b"a", b"b", b"c", b"d") if mq.key_partition(k, 4) == 2)
        assert await broker.publish_async("t", b"v", key=key) == (2, 0)
        msgs = await asyncio.wait_for(poll, 10)
        assert [(x.partition, x.offset, x.value) for x in msgs] == [(2, 0, b"v")]
        assert pending_calls() == 0 and blocked_calls() == 0
        # ack then poll: the ack stands at once, the poll waits for the next message.
        again = asyncio.create_task(m.ack_poll_async(2, 0, max=5))
        await _turn()
        assert broker.group_info("t", "g", 2).committed == 1
        assert pending_calls() == 1
        other = next(k for k in (b"k%d" % i for i in range(100)) if mq.key_partition(k, 4) == 3)
        broker.publish("t", b"w", key=other)
        got = await asyncio.wait_for(again, 10)
        assert [(x.partition, x.offset, x.value) for x in got] == [(3, 0, b"w")]
        # One that need not wait completes at once; a deadline gives [].
        broker.publish("t", b"x", key=key)
        assert [x.value for x in await m.poll_async(timeout=0)] == [b"x"]
        assert await m.poll_async(timeout=0.02) == []
        assert pending_calls() == 0


@pytest.mark.asyncio
async def test_a_join_ends_a_pending_member_poll_with_rebalanced(broker: mq.Broker) -> None:
    broker.create_topic("t", partitions=2)
    a = broker.join("t", "g", member_id="a")
    a.assignment()
    poll = asyncio.create_task(a.poll_async())
    await _turn()
    assert pending_calls() == 1
    b = broker.join("t", "g", member_id="b")
    with pytest.raises(mq.Rebalanced):
        await asyncio.wait_for(poll, 10)
    assert pending_calls() == 0
    assert a.assignment().partitions == (0,)
    assert b.assignment().partitions == (1,)
    # Only the member's own partition wakes it.
    poll = asyncio.create_task(a.poll_async())
    await _turn()
    key = {mq.key_partition(k, 2): k for k in (b"a", b"b", b"c", b"d")}
    broker.publish("t", b"b's", key=key[1])
    await asyncio.sleep(0.02)
    assert not poll.done()
    broker.publish("t", b"a's", key=key[0])
    assert [x.value for x in await asyncio.wait_for(poll, 10)] == [b"a's"]
    a.close()
    b.close()


@pytest.mark.asyncio
async def test_cancelling_a_pending_member_poll(broker: mq.Broker) -> None:
    broker.create_topic("t")
    with broker.join("t", "g") as m:
        m.assignment()
        poll = asyncio.create_task(m.poll_async())
        await _turn()
        assert pending_calls() == 1
        poll.cancel()
        with pytest.raises(asyncio.CancelledError):
            await poll
        assert pending_calls() == 0 and blocked_calls() == 0  # the done ran first
        tok = mq.CancelToken()
        poll = asyncio.create_task(m.poll_async(cancel=tok))
        await _turn()
        tok.cancel()
        with pytest.raises(mq.Cancelled):
            await poll
        assert pending_calls() == 0
        # The member goes on as before.
        broker.publish("t", b"after")
        assert [x.value for x in await m.poll_async()] == [b"after"]


@pytest.mark.asyncio
async def test_closing_the_member_ends_its_pending_polls_with_closed(broker: mq.Broker) -> None:
    broker.create_topic("t", partitions=2)
    m = broker.join("t", "g")
    m.assignment()
    polls = [asyncio.create_task(m.poll_async()) for _ in range(3)]
    await _turn()
    assert pending_calls() == 3
    m.close()  # returns once every done ran
    assert pending_calls() == 0
    for t in polls:
        with pytest.raises(mq.Closed):
            await t
    with pytest.raises(mq.Closed):
        await m.poll_async()
    # The others go on: a new member owns everything, the broker works.
    with broker.join("t", "g") as n:
        assert n.assignment().partitions == (0, 1)
        broker.publish("t", b"x", key=b"k")
        (x,) = await n.poll_async()
        assert x.value == b"x"
        n.ack(x.partition, x.offset)
    # The broker's close ends them too.
    m = broker.join("t", "g")
    m.assignment()
    poll = asyncio.create_task(m.poll_async())
    await _turn()
    broker.close()
    assert pending_calls() == 0
    with pytest.raises(mq.Closed):
        await poll
    assert m.closed


@pytest.mark.asyncio
async def test_a_member_poll_of_messages_larger_than_the_buffer() -> None:
    with mq.Broker(max_message_bytes=1 << 20) as b:
        b.create_topic("t")
        with b.join("t", "g") as m:
            m.assignment()
            poll = asyncio.create_task(m.poll_async(max=1))
            await _turn()
            big = bytes(range(256)) * 1024
            bigger = big * 3
            b.publish_many("t", [big, bigger])
            (x,) = await asyncio.wait_for(poll, 10)
            assert x.value == big
            (x,) = await m.ack_poll_async(0, 0, max=1)
            assert (x.offset, x.value) == (1, bigger)
            assert b.group_info("t", "g", 0).committed == 1


@pytest.mark.asyncio
async def test_member_consume_follows_rebalances_and_ends_at_close(broker: mq.Broker) -> None:
    broker.create_topic("t", partitions=2)
    key = {mq.key_partition(k, 2): k for k in (b"a", b"b", b"c", b"d")}
    a = broker.join("t", "g", member_id="a")
    a.assignment()
    got: list[tuple[int, bytes]] = []

    async def work() -> None:
        messages = a.consume(max=4)
        async for x in messages:
            got.append((x.partition, x.value))
            messages.ack(x)

    task = asyncio.create_task(work())
    broker.publish("t", b"1", key=key[1])
    await _until(lambda: len(got) == 1)
    await _until(lambda: pending_calls() == 1)
    b = broker.join("t", "g", member_id="b")  # the pending poll: Rebalanced, carried on
    assert b.assignment().partitions == (1,)
    await _until(lambda: pending_calls() == 1 and a.assignment().partitions == (0,))
    broker.publish("t", b"2", key=key[1])  # b's now
    broker.publish("t", b"3", key=key[0])
    await _until(lambda: len(got) == 2)
    assert got == [(1, b"1"), (0, b"3")]
    assert broker.group_info("t", "g", 0).committed == 1
    a.close()
    await asyncio.wait_for(task, 10)  # the iteration ended
    b.assignment()
    assert [x.value for x in b.poll()] == [b"2"]
    b.close()
    with pytest.raises(ValueError):
        a.consume(max=0)
