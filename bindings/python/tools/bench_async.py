"""asyncio wake-ups: mq's native asynchronous poll (mq 1.4) beside asyncio.Queue.

    python tools/bench_async.py [--rounds N] [--messages N]

Two figures per side, each printed with mq's ratio to asyncio.Queue:
- wake-up: a consumer task waits (a pending poll_async / Queue.get), the producer publishes
  (puts) one message, the consumer wakes with it; one round at a time. mq's wake-up goes through
  the broker's completer thread and loop.call_soon_threadsafe, the queue's stays on the loop.
- single: a producer task publishes single 64-byte messages (publish_async / put, the partition
  or queue bounded at 1024) while a consumer takes one at a time (ack_poll_async max=1 / get).
- batch 64: the producer publishes batches of 64 (publish_many_async / 64 puts), the consumer
  takes up to 64 at a time (ack_poll_async max=64 / get then get_nowait).
Then the per-call floor: the binding's calls that never wait, without a loop.
--uvloop runs every loop on uvloop.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import time
from collections.abc import Callable, Coroutine
from typing import Any

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


async def mq_throughput(n: int, batch: int) -> float:
    with mq.Broker() as b:
        b.create_topic("t", capacity=1024)
        b.subscribe("t", "g")
        records = [PAYLOAD] * batch

        async def produce() -> None:
            if batch == 1:
                for _ in range(n):
                    await b.publish_async("t", PAYLOAD)
            else:
                for _ in range(n // batch):
                    await b.publish_many_async("t", records)

        async def consume() -> None:
            got, off = 0, -1
            while got < n:
                if off < 0:
                    msgs = await b.poll_async("t", "g", 0, max=batch)
                else:
                    msgs = await b.ack_poll_async("t", "g", 0, off, max=batch)
                got += len(msgs)
                off = msgs[-1].offset
            b.ack("t", "g", 0, off)

        start = time.perf_counter()
        await asyncio.gather(produce(), consume())
        return n / (time.perf_counter() - start)


async def queue_throughput(n: int, batch: int) -> float:
    q: asyncio.Queue[bytes] = asyncio.Queue(1024)

    async def produce() -> None:
        for _ in range(n):
            await q.put(PAYLOAD)

    async def consume() -> None:
        got = 0
        while got < n:
            items = [await q.get()]
            while len(items) < batch and not q.empty():
                items.append(q.get_nowait())
            got += len(items)

    start = time.perf_counter()
    await asyncio.gather(produce(), consume())
    return n / (time.perf_counter() - start)


def _floor(
    n: int, publish: Callable[..., Any], poll: Callable[..., Any], ack_poll: Callable[..., Any]
) -> tuple[float, float]:
    """Microseconds per publish and per ack_poll(max=1) of n messages that never wait."""
    t0 = time.perf_counter()
    for _ in range(n):
        publish(PAYLOAD)
    t1 = time.perf_counter()
    off = poll(max=1)[0].offset
    for _ in range(n - 1):
        off = ack_poll(off, max=1)[0].offset
    t2 = time.perf_counter()
    return (t1 - t0) * 1e6 / n, (t2 - t1) * 1e6 / n


def call_costs(n: int) -> None:
    """Where a single message's time goes: the binding's calls that never wait, alone, by name
    and through a publisher and a cursor (mq 1.7, no lookup per call)."""
    with mq.Broker() as b:
        b.create_topic("t", capacity=n + 1)
        b.subscribe("t", "g")
        named = _floor(
            n,
            functools.partial(b.publish, "t"),
            functools.partial(b.poll, "t", "g", 0),
            functools.partial(b.ack_poll, "t", "g", 0),
        )
        b.ack("t", "g", 0, n - 1)
        with b.publisher("t") as pub, b.cursor("t", "g", 0) as cur:
            handles = _floor(n, pub.publish, cur.poll, cur.ack_poll)
    q: asyncio.Queue[bytes] = asyncio.Queue()
    t3 = time.perf_counter()
    for _ in range(n):
        q.put_nowait(PAYLOAD)
    for _ in range(n):
        q.get_nowait()
    t4 = time.perf_counter()
    print(
        f"per-call floor (no wait, no loop): mq publish {named[0]:.2f} us + ack_poll "
        f"{named[1]:.2f} us (publisher {handles[0]:.2f} us + cursor {handles[1]:.2f} us); "
        f"asyncio.Queue put_nowait + get_nowait {(t4 - t3) * 1e6 / n:.2f} us"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=20_000)
    ap.add_argument("--messages", type=int, default=200_000)
    ap.add_argument("--uvloop", action="store_true", help="run every loop on uvloop")
    args = ap.parse_args()
    run: Callable[[Coroutine[Any, Any, float]], float] = asyncio.run
    if args.uvloop:
        import uvloop

        run = uvloop.run
    n = args.messages
    rows: list[
        tuple[
            str, Callable[[], Coroutine[Any, Any, float]], Callable[[], Coroutine[Any, Any, float]]
        ]
    ] = [
        (
            "wake-up (one pending poll, one publish)",
            lambda: mq_wakeups(args.rounds),
            lambda: queue_wakeups(args.rounds),
        ),
        (
            "single (publish_async; ack_poll_async max=1)",
            lambda: mq_throughput(n, 1),
            lambda: queue_throughput(n, 1),
        ),
        (
            "batch 64 (publish_many_async; ack_poll_async max=64)",
            lambda: mq_throughput(n, 64),
            lambda: queue_throughput(n, 64),
        ),
    ]
    for name, mine, theirs in rows:
        q = run(theirs())
        m = run(mine())
        print(f"{name}: mq {m:,.0f}/s, asyncio.Queue {q:,.0f}/s, ratio {m / q:.2f}")
    call_costs(n)


if __name__ == "__main__":
    main()
