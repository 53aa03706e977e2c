"""The asynchronous calls under uvloop (libuv's event loop): completions reach a loop that is
not asyncio's own through loop.call_soon_threadsafe just the same."""

from __future__ import annotations

import asyncio

import uvloop

import mq
from mq._asyncio import pending_calls


async def _pending(n: int) -> None:
    for _ in range(10_000):
        if pending_calls() == n:
            return
        await asyncio.sleep(0.001)
    raise AssertionError(f"{pending_calls()} pending calls, not {n}")


def test_polls_publishes_members_and_consume_under_uvloop() -> None:
    async def main() -> None:
        assert isinstance(asyncio.get_running_loop(), uvloop.Loop)
        with mq.Broker() as b:
            b.create_topic("t", capacity=1)
            b.subscribe("t", "g")
            poll = asyncio.create_task(b.poll_async("t", "g", 0, timeout=None))
            await _pending(1)  # pending in mq: no thread holds it
            assert await b.publish_async("t", b"one") == (0, 0)
            (m,) = await asyncio.wait_for(poll, 10)
            assert m.value == b"one"
            # A publish pending on the full partition, completed by the ack that makes room;
            # the ack-then-poll's poll waits for what that publish brings.
            blocked = asyncio.create_task(b.publish_async("t", b"two", timeout=None))
            await _pending(1)
            got = await asyncio.wait_for(b.ack_poll_async("t", "g", 0, m.offset), 10)
            assert [x.value for x in got] == [b"two"]
            assert await asyncio.wait_for(blocked, 10) == (0, 1)
            b.ack("t", "g", 0, got[0].offset)
            await b.publish_async("t", b"three")
            # The consume iterator, and a task cancelled while its poll is pending.
            async for x in b.consume("t", "g", 0):
                assert x.value == b"three"
                b.ack("t", "g", 0, x.offset)
                break
            cancelled = asyncio.create_task(b.poll_async("t", "g", 0, timeout=None))
            await _pending(1)
            cancelled.cancel()
            try:
                await cancelled
            except asyncio.CancelledError:
                pass
            assert pending_calls() == 0
            # A member's poll waits on its partitions the same way.
            with b.join("t", "workers") as member:
                member.assignment()
                waiting = asyncio.create_task(member.poll_async(timeout=None))
                await _pending(1)
                b.publish("t", b"four")
                assert [x.value for x in await asyncio.wait_for(waiting, 10)] == [b"four"]

    uvloop.run(main())
