"""asyncio wake-ups: mq's native asynchronous poll (mq 1.4) beside asyncio.Queue.

    python tools/bench_async.py [--rounds N] [--messages N]

Two figures per side, each printed with mq's ratio to asyncio.Queue:
- wake-up: a consumer task waits (a pending poll_async / Queue.get), the producer publishes
  (puts) one message, the consumer wakes with it; one round at a time. mq's wake-up goes through
  the broker's completer thread and loop.call_soon_threadsafe, the queue's stays on the loop.
- throughput: a producer task publishes single 64-byte messages (publish_async / put, the
  partition or queue bounded at 1024) while a consumer takes batches of up to 64 with
  ack_poll_async (get then get_nowait).
"""

from __future__ import annotations

import argparse
import asyncio
import time

import mq

PAYLOAD = b"x" * 64


async def mq_wakeups(rounds: int) -> float:
    with mq.Broker() as b:
        b.create_topic("t", capacity=1024)
        b.subscribe("t", "g")
        off = -1
        start = time.perf_counter()
        for _ in range(rounds):
            if off < 0:
                task = asyncio.ensure_future(b.poll_async("t", "g", 0, max=1))
            else:
                task = asyncio.ensure_future(b.ack_poll_async("t", "g", 0, off, max=1))
            await asyncio.sleep(0)  # the poll is pending now
            b.publish("t", PAYLOAD)
            (m,) = await task
            off = m.offset
        return rounds / (time.perf_counter() - start)


async def queue_wakeups(rounds: int) -> float:
    q: asyncio.Queue[bytes] = asyncio.Queue(1024)
    start = time.perf_counter()
    for _ in range(rounds):
        task = asyncio.ensure_future(q.get())
        await asyncio.sleep(0)  # the get waits now
        q.put_nowait(PAYLOAD)
        await task
    return rounds / (time.perf_counter() - start)


async def mq_throughput(n: int) -> float:
    with mq.Broker() as b:
        b.create_topic("t", capacity=1024)
        b.subscribe("t", "g")

        async def produce() -> None:
            for _ in range(n):
                await b.publish_async("t", PAYLOAD)

        async def consume() -> None:
            got, off = 0, -1
            while got < n:
                if off < 0:
                    msgs = await b.poll_async("t", "g", 0, max=64)
                else:
                    msgs = await b.ack_poll_async("t", "g", 0, off, max=64)
                got += len(msgs)
                off = msgs[-1].offset
            b.ack("t", "g", 0, off)

        start = time.perf_counter()
        await asyncio.gather(produce(), consume())
        return n / (time.perf_counter() - start)


async def queue_throughput(n: int) -> float:
    q: asyncio.Queue[bytes] = asyncio.Queue(1024)

    async def produce() -> None:
        for _ in range(n):
            await q.put(PAYLOAD)

    async def consume() -> None:
        got = 0
        while got < n:
            batch = [await q.get()]
            while len(batch) < 64 and not q.empty():
                batch.append(q.get_nowait())
            got += len(batch)

    start = time.perf_counter()
    await asyncio.gather(produce(), consume())
    return n / (time.perf_counter() - start)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=20_000)
    ap.add_argument("--messages", type=int, default=200_000)
    args = ap.parse_args()
    rows = [
        ("wake-up (one pending poll, one publish)", mq_wakeups, queue_wakeups, args.rounds),
        (
            "throughput (publish_async; ack_poll_async max=64)",
            mq_throughput,
            queue_throughput,
            args.messages,
        ),
    ]
    for name, mine, theirs, n in rows:
        q = asyncio.run(theirs(n))
        m = asyncio.run(mine(n))
        print(f"{name}: mq {m:,.0f}/s, asyncio.Queue {q:,.0f}/s, ratio {m / q:.2f}")


if __name__ == "__main__":
    main()
