"""Group members: assignment, rebalance callbacks, custom assignors, fencing."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import pytest
from conftest import blocked_calls, wait_until

import mq


def test_members_split_partitions_and_are_fenced(broker: mq.Broker) -> None:
    broker.create_topic("t", partitions=4)
    gens: list[tuple[str, int]] = []
    a = broker.join("t", "g", member_id="a", on_rebalance=lambda m, g: gens.append((m.id, g)))
    assert a.id == "a"
    assert a.assignment() == mq.Assignment(1, (0, 1, 2, 3))
    b = broker.join("t", "g", member_id="b")
    with pytest.raises(mq.Rebalanced):
        a.poll(timeout=0)
    assert a.assignment() == mq.Assignment(2, (0, 2))
    assert b.assignment() == mq.Assignment(2, (1, 3))
    broker.publish("t", b"x", key=b"k")
    p = mq.key_partition(b"k", 4)
    owner, other = (a, b) if p in (0, 2) else (b, a)
    (m,) = owner.poll(timeout=0)
    with pytest.raises(mq.Fenced):
        other.ack(p, m.offset)
    owner.ack(p, m.offset)
    b.close()
    assert gens == [("a", 1), ("a", 2), ("a", 3)]
    a.close()


def test_rebalance_callback_sees_its_member_during_join(broker: mq.Broker) -> None:
    broker.create_topic("t", partitions=2)
    seen: list[tuple[int, tuple[int, ...]]] = []

    def cb(m: mq.Member, gen: int) -> None:
        seen.append((gen, m.assignment().partitions))
        with pytest.raises(mq.Deadlock):
            m.close()

    with broker.join("t", "g", on_rebalance=cb):
        pass
    assert seen == [(1, (0, 1))]


def test_python_assignor_and_a_failing_one(broker: mq.Broker) -> None:
    reported: list[str] = []
    old = mq.set_error_hook(lambda e, where: reported.append(where))
    try:
        broker.create_topic("t", partitions=3)

        def all_to_last(partitions: int, ids: Sequence[str]) -> list[int]:
            return [len(ids) - 1] * partitions

        a = broker.join("t", "g", member_id="a", assignor=all_to_last)
        b = broker.join("t", "g", member_id="b")
        a.assignment()
        assert b.assignment().partitions == (0, 1, 2)
        a.close()
        b.close()

        def broken(partitions: int, ids: Sequence[str]) -> list[int]:
            raise RuntimeError("nope")

        c = broker.join("t", "h", assignor=broken)
        assert c.assignment().partitions == (0, 1, 2)  # round robin instead
        c.close()
    finally:
        mq.set_error_hook(old)
    assert any("assignor" in r for r in reported)


def test_close_wakes_a_member_poll_in_another_thread(broker: mq.Broker) -> None:
    broker.create_topic("t")
    m = broker.join("t", "g")
    m.assignment()
    got: list[BaseException] = []

    def poll() -> None:
        try:
            m.poll(timeout=None)
        except BaseException as e:
            got.append(e)

    th = threading.Thread(target=poll)
    th.start()
    wait_until(lambda: blocked_calls() == 1, what="member poll waiting")
    m.close()
    th.join(5)
    assert [type(e) for e in got] == [mq.Closed]


def test_session_timeout_removes_a_silent_member(clock: mq.ManualClock) -> None:
    with mq.Broker(clock=clock) as b:
        b.create_topic("t", partitions=2)
        a = b.join("t", "g", member_id="a", session_timeout=1.0)
        a.assignment()
        clock.advance(2.0)
        c = b.join("t", "g", member_id="c")
        assert c.assignment().partitions == (0, 1)
        with pytest.raises(mq.Fenced):
            a.assignment()
        a.close()
        c.close()


@pytest.mark.parametrize("call", ["poll", "ack_poll"])
def test_broker_close_wakes_a_member_poll_with_the_callers_token(call: str) -> None:
    # The member's close cannot trigger a token the caller owns: the broker's close wakes it.
    b = mq.Broker()
    b.create_topic("t")
    m = b.join("t", "g")
    m.assignment()
    b.publish("t", b"x")
    (msg,) = m.poll(timeout=0)
    tok = mq.CancelToken()
    got: list[BaseException] = []

    def wait() -> None:
        try:
            if call == "poll":
                m.poll(timeout=None, cancel=tok)
            else:
                m.ack_poll(0, msg.offset, timeout=None, cancel=tok)
        except BaseException as e:
            got.append(e)

    th = threading.Thread(target=wait)
    th.start()
    wait_until(lambda: blocked_calls() == 1, what="member poll waiting")
    closer = threading.Thread(target=b.close)
    closer.start()
    th.join(5)
    closer.join(5)
    if th.is_alive():
        tok.cancel()  # let the test end
        th.join(5)
    assert not closer.is_alive()
    assert [type(e) for e in got] == [mq.Closed]
    assert m.closed and not tok.cancelled
