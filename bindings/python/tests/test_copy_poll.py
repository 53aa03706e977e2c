"""Polls copy through mq's copying poll (mq 1.3, layout 1) into a buffer per thread, grown when
a message does not fit (MQ_ERR_TOO_LARGE: nothing handed out, the poll again with room); push
handlers copy the view mq lends them. Every path must give the same messages."""

from __future__ import annotations

import threading
from typing import Callable, TypeVar

import mq
from mq import _native

T = TypeVar("T")
BIG = 1 << 20  # the default max_message_bytes, far above a thread's first buffer


def in_fresh_thread(fn: Callable[[], T]) -> T:
    """Runs fn in a new thread, so its polls start with a new (small) buffer."""
    out: list[T] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            out.append(fn())
        except BaseException as e:
            errors.append(e)

    t = threading.Thread(target=run)
    t.start()
    t.join(60)
    assert not t.is_alive()
    if errors:
        raise errors[0]
    return out[0]


def _mixed(b: mq.Broker) -> list[mq.Message]:
    """Messages of every shape into "t" (6) and, dead-lettered by group "one", into "dlq" (its
    first 3). Returns what "one" then got of "t" (offsets 3 to 5)."""
    b.create_topic("dlq")
    b.create_topic("t")
    b.subscribe("dlq", "one")
    b.subscribe("dlq", "batch")
    b.subscribe("t", "one", max_deliveries=1, dead_letter_topic="dlq")
    b.subscribe("t", "batch")
    b.publish_many(
        "t",
        [
            b"plain",
            (b"k1", b"keyed"),
            mq.Record(b"with headers", key=b"", headers=[(b"h1", b"v1"), (b"", b"")]),
            b"",
            mq.Record(b"x" * 5000, key=b"k2" * 300, headers=[(b"n" * 700, b"v" * 900)]),
            (None, b"last"),
        ],
    )
    b.poll("t", "one", 0, max=3, timeout=0)
    b.nack("t", "one", 0)
    # Handed out once, never acked: this poll moves them to "dlq" and hands out the rest.
    return b.poll("t", "one", 0, max=10, timeout=0)


def test_batch_and_single_polls_copy_the_same_messages() -> None:
    with mq.Broker() as b:
        rest = _mixed(b)
        assert b.poll("t", "batch", 0, max=10, timeout=0)[3:] == rest
        batch = b.poll("dlq", "batch", 0, max=10, timeout=0)
        one = [b.poll("dlq", "one", 0, max=1, timeout=0)[0] for _ in range(3)]
        assert len(batch) == 3 and batch == one


def test_the_layout_is_read_field_for_field() -> None:
    with mq.Broker() as b:
        rest = _mixed(b)
        got = b.poll("dlq", "batch", 0, max=10, timeout=0)
        # Dead letters carry their origin in headers too (after the message's own).
        own = [tuple(h for h in m.headers if not h[0].startswith(b"mq.dead_letter.")) for m in got]
        assert [(m.key, m.value, hs) for m, hs in zip(got, own)] == [
            (None, b"plain", ()),
            (b"k1", b"keyed", ()),
            (b"", b"with headers", ((b"h1", b"v1"), (b"", b""))),
        ]
        assert [m.headers[len(hs) :][0] for m, hs in zip(got, own)] == [
            (b"mq.dead_letter.topic", b"t")
        ] * 3
        assert [m.dead_letter for m in got] == [
            mq.DeadLetter("t", "one", 0, i, 1) for i in range(3)
        ]
        assert [(m.topic, m.partition, m.offset, m.delivery_count, m.lost) for m in got] == [
            ("dlq", 0, i, 1, 0) for i in range(3)
        ]
        assert [(m.offset, m.key, m.value, m.headers, m.dead_letter) for m in rest] == [
            (3, None, b"", (), None),
            (4, b"k2" * 300, b"x" * 5000, ((b"n" * 700, b"v" * 900),), None),
            (5, None, b"last", (), None),
        ]
        assert 0 < rest[0].timestamp_ns <= rest[1].timestamp_ns <= rest[2].timestamp_ns


def test_a_push_handler_gets_what_a_poll_gets() -> None:
    with mq.Broker() as b:
        _mixed(b)
        polled = b.poll("dlq", "batch", 0, max=10, timeout=0)
        polled += b.poll("t", "batch", 0, max=10, timeout=0)
        assert len(polled) == 9
        pushed: list[mq.Message] = []
        done = threading.Event()

        def handler(m: mq.Message) -> None:
            pushed.append(m)
            if len(pushed) == 9:
                done.set()

        b.subscribe("dlq", "push", start=mq.Start.EARLIEST)
        b.subscribe("t", "push", start=mq.Start.EARLIEST)
        with b.open_subscription("dlq", "push", handler), b.open_subscription("t", "push", handler):
            assert done.wait(10)
        pushed.sort(key=lambda m: (m.topic != "dlq", m.offset))
        assert pushed == polled


def test_a_message_larger_than_the_buffer_grows_it_and_is_handed_out_once() -> None:
    with mq.Broker() as b:
        b.create_topic("t", capacity=16)
        b.subscribe("t", "g")
        values = [bytes([65 + i]) * BIG for i in range(3)] + [b"small"]
        b.publish_many("t", values)

        def consume() -> list[mq.Message]:
            first_cap = _native.poll_buffer().cap
            assert first_cap < BIG
            got: list[mq.Message] = []
            while len(got) < 4:
                batch = b.poll("t", "g", 0, max=10, timeout=0)
                assert batch, "a poll that found messages must hand one out"
                got += batch
            assert _native.poll_buffer().cap > BIG
            return got

        got = in_fresh_thread(consume)
        assert [m.value for m in got] == values
        assert [m.delivery_count for m in got] == [1] * 4  # a poll that did not fit counts none
        assert b.group_info("t", "g", 0).next == 4


def test_ack_poll_that_does_not_fit_keeps_its_ack_and_polls_again() -> None:
    with mq.Broker() as b:
        b.create_topic("t")
        b.subscribe("t", "g")
        b.publish("t", b"small")
        b.publish("t", b"B" * BIG)

        def consume() -> list[mq.Message]:
            (m,) = b.poll("t", "g", 0, max=1, timeout=0)
            return b.ack_poll("t", "g", 0, m.offset, max=4, timeout=0)

        (big,) = in_fresh_thread(consume)
        assert (big.offset, big.value, big.delivery_count) == (1, b"B" * BIG, 1)
        info = b.group_info("t", "g", 0)
        assert (info.committed, info.next) == (1, 2)  # the ack stood, made once


def test_member_polls_grow_their_buffer_too() -> None:
    with mq.Broker() as b:
        b.create_topic("t")
        b.subscribe("t", "g")
        with b.join("t", "g") as member:
            b.publish("t", b"small")
            b.publish("t", b"C" * BIG)
            b.publish("t", b"D" * BIG)

            def consume() -> list[bytes]:
                (m,) = member.poll(max=1, timeout=0)
                got = [m.value]
                got += [x.value for x in member.ack_poll(m.partition, m.offset, max=1, timeout=0)]
                got += [x.value for x in member.poll(max=4, timeout=0)]
                return got

            assert in_fresh_thread(consume) == [b"small", b"C" * BIG, b"D" * BIG]
            assert b.group_info("t", "g", 0).committed == 1


def test_batches_grow_to_whole_polls_then_allocate_nothing() -> None:
    # 64 messages of 4 KiB do not fit a thread's first buffer: it grows from batches that
    # filled it until a poll takes all 64, and then the same buffer serves every poll.
    with mq.Broker() as b:
        b.create_topic("t", capacity=64)
        b.subscribe("t", "g")

        def rounds() -> tuple[list[int], int]:
            firsts: list[int] = []
            buffers = set()
            for r in range(8):
                b.publish_many("t", [bytes([r]) * 4096] * 64)
                got: list[mq.Message] = []
                while len(got) < 64:
                    batch = b.poll("t", "g", 0, max=64, timeout=0)
                    if not got:
                        firsts.append(len(batch))
                    got += batch
                assert all(m.value == bytes([r]) * 4096 for m in got)
                b.ack("t", "g", 0, got[-1].offset)
                if r >= 5:
                    buffers.add(id(_native.poll_buffer().mem))
            return firsts, len(buffers)

        firsts, distinct = in_fresh_thread(rounds)
        assert firsts[0] < 64 and firsts[-3:] == [64, 64, 64], firsts
        assert distinct == 1
