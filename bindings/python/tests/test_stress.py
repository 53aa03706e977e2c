"""Threads publishing and consuming at once: every message arrives at least once, and each
key's messages arrive in publish order (a redelivery repeats a run, it never reorders)."""

from __future__ import annotations

import random
import threading
from collections import defaultdict

from conftest import wait_until

import mq

PRODUCERS, PER_PRODUCER, KEYS, PARTITIONS = 4, 1500, 40, 4


def _check(deliveries: dict[str, list[int]]) -> None:
    per_key = PRODUCERS * PER_PRODUCER // KEYS
    assert sorted(deliveries) == sorted(f"key-{k:02d}" for k in range(KEYS))
    for key, seqs in deliveries.items():
        first_seen: list[int] = []
        seen: set[int] = set()
        high = -1
        for s in seqs:
            if s not in seen:
                seen.add(s)
                first_seen.append(s)
            # a redelivery goes back to the committed offset and comes forward again in order
            assert s <= high + 1, f"{key}: {s} after {high} skips a message"
            high = max(high, s)
        assert first_seen == list(range(per_key)), f"{key}: order or completeness broken"


def _produce(b: mq.Broker, index: int, batch: bool) -> None:
    items: list[tuple[bytes, bytes]] = []
    for i in range(PER_PRODUCER):
        k = index + PRODUCERS * (i % (KEYS // PRODUCERS))
        seq = i // (KEYS // PRODUCERS)
        items.append((f"key-{k:02d}".encode(), str(seq).encode()))
    if batch:
        for at in range(0, len(items), 50):
            b.publish_many("s", items[at : at + 50], timeout=30)
    else:
        for key, value in items:
            b.publish("s", value, key=key, timeout=30)


def test_threaded_stress_at_least_once_and_per_key_order() -> None:
    rnd = random.Random(7)
    total = PRODUCERS * PER_PRODUCER
    with mq.Broker() as b:
        b.create_topic("s", partitions=PARTITIONS, capacity=64)
        b.subscribe("s", "pull")
        pulled: dict[str, list[int]] = defaultdict(list)
        pull_lock = threading.Lock()
        pulled_count = [0] * PARTITIONS
        errors: list[BaseException] = []

        def consume(member: int) -> None:
            try:
                parts = mq.round_robin(PARTITIONS, 2, member)
                remaining = sum(1 for _ in parts)
                while remaining:
                    for p in parts:
                        msgs = b.poll("s", "pull", p, max=16, timeout=0.005)
                        if not msgs:
                            continue
                        if rnd.random() < 0.05:
                            b.nack("s", "pull", p)  # at-least-once: these come again
                        else:
                            with pull_lock:
                                for m in msgs:
                                    assert m.key is not None
                                    pulled[m.key.decode()].append(int(m.value))
                            b.ack("s", "pull", p, msgs[-1].offset)
                            pulled_count[p] = b.group_info("s", "pull", p).committed
                    remaining = sum(
                        1
                        for p in parts
                        if pulled_count[p] < b.partition_info("s", p).end
                        or not producers_done.is_set()
                    )
            except BaseException as e:
                errors.append(e)
                b.close()

        pushed: dict[str, list[int]] = defaultdict(list)
        push_lock = threading.Lock()

        def handler(m: mq.Message) -> bool:
            if rnd.random() < 0.03:
                return False
            with push_lock:
                assert m.key is not None
                pushed[m.key.decode()].append(int(m.value))
            return True

        producers_done = threading.Event()
        with b.open_subscription("s", "push", handler, prefetch=8):
            consumers = [threading.Thread(target=consume, args=(i,)) for i in range(2)]
            producers = [
                threading.Thread(target=_produce, args=(b, i, i % 2 == 1)) for i in range(PRODUCERS)
            ]
            for t in consumers + producers:
                t.start()
            for t in producers:
                t.join(60)
            producers_done.set()
            for t in consumers:
                t.join(60)
            assert not errors, errors
            wait_until(
                lambda: (
                    sum(b.group_info("s", "push", p).committed for p in range(PARTITIONS)) == total
                ),
                timeout=30,
            )
        assert sum(b.partition_info("s", p).end for p in range(PARTITIONS)) == total
        assert sum(b.partition_info("s", p).producer_waits for p in range(PARTITIONS)) > 0
        _check(pulled)
        _check(pushed)
