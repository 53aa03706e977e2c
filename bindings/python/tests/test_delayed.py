"""Delayed delivery (mq 1.5): ``delay=`` on publish, publish_many and their coroutines, and
:attr:`mq.Record.delay` per record. The message is appended at once; no group is handed it
before the broker clock reaches its publish time + delay, and it holds its partition's later
messages until then."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

import mq


def offsets(b: mq.Broker, group: str = "g") -> list[int]:
    return [m.offset for m in b.poll("t", group, 0, max=100, timeout=0)]


@pytest.fixture
def delayed(clock: mq.ManualClock) -> mq.Broker:
    b = mq.Broker(clock=clock)
    b.create_topic("t", capacity=100)
    b.subscribe("t", "g")
    return b


def test_a_delayed_message_waits_for_its_time_and_comes_at_it(
    delayed: mq.Broker, clock: mq.ManualClock
) -> None:
    with delayed as b:
        assert b.publish("t", b"later", delay=5.0) == (0, 0)
        # Appended and counted at once: only its hand-out waits.
        assert b.partition_info("t", 0).end == 1
        assert offsets(b) == []
        clock.advance(4.999)
        assert offsets(b) == []
        clock.advance(0.001)
        msgs = b.poll("t", "g", 0, timeout=0)
        assert [(m.value, m.delivery_count) for m in msgs] == [(b"later", 1)]


def test_a_delayed_message_holds_the_ones_behind_it(
    delayed: mq.Broker, clock: mq.ManualClock
) -> None:
    with delayed as b:
        b.subscribe("t", "h")
        b.publish("t", b"a")
        b.publish("t", b"b", key=None, delay=0.1)
        b.publish("t", b"c")
        assert offsets(b) == [0]
        assert offsets(b, "h") == [0]
        clock.advance(0.099)
        assert offsets(b) == []
        clock.advance(0.001)
        assert offsets(b) == [1, 2]
        assert offsets(b, "h") == [1, 2]


def test_batch_records_carry_their_own_delays(delayed: mq.Broker, clock: mq.ManualClock) -> None:
    with delayed as b:
        assert b.publish_many(
            "t", [b"x", mq.Record(b"y", delay=0.05), mq.Record(b"z", key=b"k", delay=0.01)]
        ) == [(0, 0), (0, 1), (0, 2)]
        assert offsets(b) == [0]
        clock.advance(0.01)  # z is due, but waits behind y
        assert offsets(b) == []
        clock.advance(0.04)
        assert offsets(b) == [1, 2]


def test_the_batch_delay_is_the_default_of_its_records(
    delayed: mq.Broker, clock: mq.ManualClock
) -> None:
    with delayed as b:
        # Plain values take the batch's delay; a Record's own delay (0 too) wins.
        b.publish_many("t", [mq.Record(b"now", delay=0)], delay=1.0)
        b.publish_many("t", [b"p", b"q"], delay=1.0)
        b.publish_many("t", [(b"k", b"r"), mq.Record(b"s", delay=3.0)], delay=2.0)
        assert offsets(b) == [0]
        clock.advance(1.0)
        assert offsets(b) == [1, 2]
        clock.advance(1.0)
        assert offsets(b) == [3]
        clock.advance(1.0)
        assert offsets(b) == [4]


def test_a_bad_delay_is_refused_with_mq_text(delayed: mq.Broker) -> None:
    with delayed as b:
        with pytest.raises(mq.InvalidArgument) as e:
            b.publish("t", b"bad", delay=-0.001)
        assert str(e.value).endswith(
            "record 0: delay_ms is -1; it must be 0 to 1099511627776 ms (2^40 ms)"
        )
        assert not hasattr(e.value, "results")  # a single publish, not a batch
        with pytest.raises(mq.InvalidArgument) as e:
            b.publish_many("t", [b"ok", mq.Record(b"bad", delay=(2**40 + 1) / 1000)])
        assert "record 1: delay_ms is 1099511627777; it must be 0 to 1099511627776 ms" in str(
            e.value
        )
        assert e.value.published == 0  # type: ignore[attr-defined]
        assert e.value.results == [(-1, -1), (-1, -1)]  # type: ignore[attr-defined]
        # A tiny negative delay is not rounded to "at once".
        with pytest.raises(mq.InvalidArgument, match="delay_ms is -1;"):
            b.publish_many("t", [b"x"], delay=-1e-9)
        with pytest.raises(TypeError, match="delay must be a number of seconds"):
            b.publish("t", b"x", delay="1")  # type: ignore[arg-type]
        with pytest.raises(mq.InvalidArgument, match="NaN"):
            b.publish("t", b"x", delay=float("nan"))
        assert b.partition_info("t", 0).end == 0  # nothing was appended


def test_a_sub_millisecond_delay_is_one_millisecond(
    delayed: mq.Broker, clock: mq.ManualClock
) -> None:
    with delayed as b:
        b.publish("t", b"a", delay=1e-6)
        assert offsets(b) == []
        clock.advance(0.001)
        assert offsets(b) == [0]


def test_the_coroutines_take_delays(delayed: mq.Broker, clock: mq.ManualClock) -> None:
    async def main() -> None:
        assert await delayed.publish_async("t", b"a", delay=1.0) == (0, 0)
        assert await delayed.publish_many_async(
            "t", [b"b", mq.Record(b"c", delay=3.0)], delay=2.0
        ) == [(0, 1), (0, 2)]
        with pytest.raises(mq.InvalidArgument, match="record 0: delay_ms is -5;"):
            await delayed.publish_async("t", b"bad", delay=-0.005)

    with delayed as b:
        asyncio.run(main())
        for due in ([0], [1], [2]):
            assert offsets(b) == []
            clock.advance(1.0)
            assert offsets(b) == due


def test_a_blocking_poll_wakes_when_a_delayed_message_is_due(broker: mq.Broker) -> None:
    # The real clock: the poll waits far longer than the delay, and returns when it is due.
    broker.create_topic("t")
    broker.subscribe("t", "g")
    got: list[list[mq.Message]] = []
    start = time.monotonic()
    broker.publish("t", b"soon", delay=0.05)
    t = threading.Thread(target=lambda: got.append(broker.poll("t", "g", 0, timeout=10.0)))
    t.start()
    t.join(10.0)
    took = time.monotonic() - start
    assert [m.value for m in got[0]] == [b"soon"]
    assert 0.05 <= took < 5.0


def test_a_pending_poll_async_wakes_when_a_delayed_message_is_due(broker: mq.Broker) -> None:
    broker.create_topic("t")
    broker.subscribe("t", "g")

    async def main() -> float:
        start = time.monotonic()
        await broker.publish_async("t", b"soon", delay=0.05)
        msgs = await broker.poll_async("t", "g", 0, timeout=10.0)
        assert [m.value for m in msgs] == [b"soon"]
        return time.monotonic() - start

    assert 0.05 <= asyncio.run(main()) < 5.0
