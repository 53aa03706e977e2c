"""Throughput of the Python binding beside what a Python user would otherwise use.

One run measures, with 64-byte messages between two threads (or two asyncio tasks):
  queue.Queue        put / get
  asyncio.Queue      put / get between two tasks
  mq single          publish, then poll(max=1) + ack per message
  mq single ack_poll publish, then ack_poll(max=1) per message (the ack travels with the poll)
  mq batch           publish_many(64), then poll(max=64) + one ack per batch
  mq batch ack_poll  publish_many(64), then ack_poll(max=64) per batch: one crossing per batch
  mq push            publish one at a time, a push subscription's handler receives them
and prints messages per second with each mq figure's ratio to queue.Queue.

Run: python bench/python/bench.py [--messages N]  (with the mq package installed). The machine
is shared and noisy: compare the ratios within one run.
"""

from __future__ import annotations

import argparse
import asyncio
import queue
import threading
import time
from collections.abc import Callable

import mq

PAYLOAD = b"x" * 64
BATCH = 64


def timed(producer: Callable[[], None], consumer: Callable[[], None]) -> float:
    threads = [threading.Thread(target=consumer), threading.Thread(target=producer)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.perf_counter() - start


def bench_queue(n: int) -> float:
    q: queue.Queue[bytes] = queue.Queue(1024)

    def produce() -> None:
        for _ in range(n):
            q.put(PAYLOAD)

    def consume() -> None:
        for _ in range(n):
            q.get()

    return timed(produce, consume)


def bench_asyncio_queue(n: int) -> float:
    async def main() -> float:
        q: asyncio.Queue[bytes] = asyncio.Queue(1024)

        async def produce() -> None:
            for _ in range(n):
                await q.put(PAYLOAD)

        async def consume() -> None:
            for _ in range(n):
                await q.get()

        start = time.perf_counter()
        await asyncio.gather(consume(), produce())
        return time.perf_counter() - start

    return asyncio.run(main())


def bench_mq_single(n: int) -> float:
    with mq.Broker() as b:
        b.create_topic("t", capacity=1024)
        b.subscribe("t", "g")

        def produce() -> None:
            for _ in range(n):
                b.publish("t", PAYLOAD)

        def consume() -> None:
            got = 0
            while got < n:
                for m in b.poll("t", "g", 0, max=1):
                    b.ack("t", "g", 0, m.offset)
                    got += 1

        return timed(produce, consume)


def bench_mq_single_ack_poll(n: int) -> float:
    with mq.Broker() as b:
        b.create_topic("t", capacity=1024)
        b.subscribe("t", "g")

        def produce() -> None:
            for _ in range(n):
                b.publish("t", PAYLOAD)

        def consume() -> None:
            # timeout=None: a poll returns at least one message
            (m,) = b.poll("t", "g", 0, max=1)
            for _ in range(n - 1):
                (m,) = b.ack_poll("t", "g", 0, m.offset, max=1)
            b.ack("t", "g", 0, m.offset)

        return timed(produce, consume)


def bench_mq_batch_ack_poll(n: int) -> float:
    with mq.Broker() as b:
        b.create_topic("t", capacity=1024)
        b.subscribe("t", "g")
        batch = [PAYLOAD] * BATCH

        def produce() -> None:
            for _ in range(n // BATCH):
                b.publish_many("t", batch)

        def consume() -> None:
            msgs = b.poll("t", "g", 0, max=BATCH)  # timeout=None: never empty
            got = len(msgs)
            while got < n // BATCH * BATCH:
                msgs = b.ack_poll("t", "g", 0, msgs[-1].offset, max=BATCH)
                got += len(msgs)
            b.ack("t", "g", 0, msgs[-1].offset)

        return timed(produce, consume)


def bench_mq_batch(n: int) -> float:
    with mq.Broker() as b:
        b.create_topic("t", capacity=1024)
        b.subscribe("t", "g")
        batch = [PAYLOAD] * BATCH

        def produce() -> None:
            for _ in range(n // BATCH):
                b.publish_many("t", batch)

        def consume() -> None:
            got = 0
            while got < n // BATCH * BATCH:
                msgs = b.poll("t", "g", 0, max=BATCH)
                if msgs:
                    b.ack("t", "g", 0, msgs[-1].offset)
                    got += len(msgs)

        return timed(produce, consume)


def bench_mq_push(n: int) -> float:
    with mq.Broker() as b:
        b.create_topic("t", capacity=1024)
        done = threading.Event()
        count = [0]

        def handler(m: mq.Message) -> None:
            count[0] += 1
            if count[0] == n:
                done.set()

        with b.open_subscription("t", "g", handler, prefetch=64):
            start = time.perf_counter()
            for _ in range(n):
                b.publish("t", PAYLOAD)
            done.wait(120)
            return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--messages", type=int, default=200_000)
    ap.add_argument("--only", help="run only the rows whose name contains this (and queue.Queue)")
    args = ap.parse_args()
    n = args.messages
    benches: list[tuple[str, Callable[[int], float]]] = [
        ("queue.Queue", bench_queue),
        ("asyncio.Queue", bench_asyncio_queue),
        ("mq single (publish; poll max=1 + ack)", bench_mq_single),
        ("mq single (publish; ack_poll max=1)", bench_mq_single_ack_poll),
        ("mq batch (publish_many 64; poll max=64 + ack)", bench_mq_batch),
        ("mq batch (publish_many 64; ack_poll max=64)", bench_mq_batch_ack_poll),
        ("mq push (publish; handler)", bench_mq_push),
    ]
    rows = [
        (name, fn(n))
        for i, (name, fn) in enumerate(benches)
        if i == 0 or args.only is None or args.only in name
    ]
    base = n / rows[0][1]
    print(f"{n:,} messages of {len(PAYLOAD)} bytes, two threads (asyncio: two tasks)")
    for name, seconds in rows:
        rate = n / seconds
        print(f"  {name:<48} {rate:>12,.0f} msg/s   {rate / base:5.2f}x queue.Queue")


if __name__ == "__main__":
    main()
