"""Share groups (mq 1.6): ``subscribe(share=..., max_acquired=...)``, ``Broker.settle`` (and
``Messages.settle``), and the share fields of ``GroupInfo``. Any number of polls share a
partition; each acquires messages no other poll holds, each under its own lock, settled one by
one; the delivery count is the acquisition's token."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator

import pytest
from conftest import blocked_calls, wait_until

import mq

ACCEPT, RELEASE, REJECT, RENEW = (
    mq.Settle.ACCEPT,
    mq.Settle.RELEASE,
    mq.Settle.REJECT,
    mq.Settle.RENEW,
)


@pytest.fixture
def shared(clock: mq.ManualClock) -> Iterator[mq.Broker]:
    """A broker on the manual clock with topic t (ack timeout 1 s), its dead-letter topic dlt
    and share group w."""
    with mq.Broker(clock=clock) as b:
        b.create_topic("t", capacity=100, ack_timeout=1.0)
        b.create_topic("dlt")
        b.subscribe("t", "w", share=mq.ShareMode.ALL)
        yield b


def got(b: mq.Broker, group: str = "w", max: int = 100, topic: str = "t") -> list[tuple[int, int]]:
    """(offset, delivery_count) of what a non-blocking poll acquires."""
    return [(m.offset, m.delivery_count) for m in b.poll(topic, group, 0, max=max, timeout=0)]


def publish(b: mq.Broker, *values: bytes, key: bytes | None = None) -> None:
    for v in values:
        b.publish("t", v, key=key)


def test_the_enums_are_mqs_values() -> None:
    from mq._native import lib

    assert [int(m) for m in mq.ShareMode] == [lib.MQ_SHARE_NONE, lib.MQ_SHARE_ALL, lib.MQ_SHARE_KEY]
    assert [int(a) for a in mq.Settle] == [
        lib.MQ_SETTLE_ACCEPT,
        lib.MQ_SETTLE_RELEASE,
        lib.MQ_SETTLE_REJECT,
        lib.MQ_SETTLE_RENEW,
    ]


def test_two_consumers_of_one_partition_acquire_different_messages(shared: mq.Broker) -> None:
    b = shared
    publish(b, b"a", b"b", b"c", b"d", b"e")
    first = got(b, max=2)
    second = got(b, max=2)
    assert first == [(0, 1), (1, 1)]
    assert second == [(2, 1), (3, 1)]
    info = b.group_info("t", "w", 0)
    assert (info.acquired, info.available, info.delivered_once) == (4, 1, 4)
    # An ordered group beside it is untouched and still gets everything in order.
    b.subscribe("t", "o", start=mq.Start.EARLIEST)
    assert got(b, "o") == [(0, 1), (1, 1), (2, 1), (3, 1), (4, 1)]


def test_workers_on_threads_share_one_partition_and_each_message_is_done_once(
    broker: mq.Broker,
) -> None:
    broker.create_topic("t", capacity=1000)
    broker.subscribe("t", "w", share=mq.ShareMode.ALL, max_acquired=8)
    n = 400
    broker.publish_many("t", [str(i).encode() for i in range(n)])
    done: list[list[int]] = [[] for _ in range(4)]

    def work(mine: list[int]) -> None:
        while True:
            msgs = broker.poll("t", "w", 0, max=3, timeout=0.2)
            if not msgs:
                if broker.group_info("t", "w", 0).committed == n:
                    return
                continue
            for m in msgs:
                mine.append(int(m.value))
                broker.settle("t", "w", 0, m.offset, m.delivery_count, ACCEPT)

    threads = [threading.Thread(target=work, args=(d,)) for d in done]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads)
    everything = sorted(v for d in done for v in d)
    assert everything == list(range(n))  # each exactly once: no lock ran out (30 s)
    info = broker.group_info("t", "w", 0)
    assert (info.committed, info.acquired, info.available) == (n, 0, 0)


def test_accept_in_any_order_moves_the_frontier_to_the_oldest_unsettled(
    shared: mq.Broker,
) -> None:
    b = shared
    publish(b, b"a", b"b", b"c")
    assert got(b) == [(0, 1), (1, 1), (2, 1)]
    b.settle("t", "w", 0, 1, 1, ACCEPT)
    assert b.group_info("t", "w", 0).committed == 0
    b.settle("t", "w", 0, 0, 1, ACCEPT)
    info = b.group_info("t", "w", 0)
    assert (info.committed, info.next, info.acquired) == (2, 3, 1)
    b.settle("t", "w", 0, 2, 1, mq.Settle.ACCEPT)
    info = b.group_info("t", "w", 0)
    assert (info.committed, info.acquired, info.oldest_unsettled_age_ns) == (3, 0, -1)
    assert got(b) == []


def test_release_hands_it_out_again_and_fences_the_old_delivery(shared: mq.Broker) -> None:
    b = shared
    publish(b, b"a", b"b")
    assert got(b) == [(0, 1), (1, 1)]
    b.settle("t", "w", 0, 0, 1, RELEASE)
    assert got(b) == [(0, 2)]
    with pytest.raises(mq.NotInFlight) as e:
        b.settle("t", "w", 0, 0, 1, ACCEPT)
    assert str(e.value).endswith(
        "cannot accept offset 0 of partition 0 for share group w with delivery count 1: "
        "another poll acquired it since (its delivery count is higher)"
    )
    assert e.value.status_name == "MQ_ERR_NOT_IN_FLIGHT"
    b.settle("t", "w", 0, 0, 2, ACCEPT)
    with pytest.raises(mq.NotInFlight, match="it is settled"):
        b.settle("t", "w", 0, 0, 2, ACCEPT)
    with pytest.raises(mq.NotInFlight, match="it is not published"):
        b.settle("t", "w", 0, 9, 1, ACCEPT)
    info = b.group_info("t", "w", 0)
    assert (info.acquired, info.delivered_once, info.delivered_twice) == (1, 1, 0)


def test_release_with_a_delay_waits_for_the_clock(shared: mq.Broker, clock: mq.ManualClock) -> None:
    b = shared
    publish(b, b"a")
    assert got(b) == [(0, 1)]
    b.settle("t", "w", 0, 0, 1, RELEASE, delay=0.5)
    info = b.group_info("t", "w", 0)
    assert (info.acquired, info.available, info.delayed) == (0, 0, 1)
    clock.advance(0.499)
    assert got(b) == []
    clock.advance(0.001)
    assert got(b) == [(0, 2)]


def test_a_lock_runs_out_unless_renewed(shared: mq.Broker, clock: mq.ManualClock) -> None:
    b = shared
    publish(b, b"a", b"b")
    assert got(b) == [(0, 1), (1, 1)]
    clock.advance(0.6)
    b.settle("t", "w", 0, 1, 1, RENEW)  # offset 1's lock starts over: 1 s from now
    clock.advance(0.4)  # offset 0's lock (1 s) ran out
    with pytest.raises(mq.NotInFlight, match="not acquired"):
        b.settle("t", "w", 0, 0, 1, ACCEPT)
    assert got(b) == [(0, 2)]
    info = b.group_info("t", "w", 0)
    assert (info.delivered_once, info.delivered_twice) == (1, 1)
    assert info.oldest_unsettled_age_ns == 1_000_000_000  # offset 0, published at clock 0
    b.settle("t", "w", 0, 1, 1, ACCEPT)  # still held: the renewal kept it
    clock.advance(1.0)
    with pytest.raises(mq.NotInFlight):
        b.settle("t", "w", 0, 0, 2, RENEW)
    assert got(b) == [(0, 3)]
    assert b.group_info("t", "w", 0).delivered_thrice == 1


def test_reject_drops_without_a_dead_letter_topic(shared: mq.Broker) -> None:
    b = shared
    publish(b, b"a", b"b")
    assert got(b) == [(0, 1), (1, 1)]
    b.settle("t", "w", 0, 0, 1, REJECT)
    info = b.group_info("t", "w", 0)
    assert (info.rejected, info.dead_lettered, info.committed, info.acquired) == (1, 0, 1, 1)
    b.settle("t", "w", 0, 1, 1, RELEASE)
    assert got(b) == [(1, 2)]  # the rejected one never comes back


def test_reject_goes_to_the_dead_letter_topic_with_its_origin(clock: mq.ManualClock) -> None:
    with mq.Broker(clock=clock) as b:
        b.create_topic("t")
        b.create_topic("dlt")
        b.subscribe("t", "s", share=mq.ShareMode.ALL, max_deliveries=2, dead_letter_topic="dlt")
        b.subscribe("dlt", "reader", start=mq.Start.EARLIEST)
        b.publish("t", b"poison", key=b"k")
        b.publish("t", b"flaky")
        assert got(b, "s") == [(0, 1), (1, 1)]
        b.settle("t", "s", 0, 0, 1, REJECT)
        (dead,) = b.poll("dlt", "reader", 0, timeout=0)
        assert (dead.value, dead.key) == (b"poison", b"k")
        assert dead.dead_letter == mq.DeadLetter("t", "s", 0, 0, 1)
        # max_deliveries: released twice, it is dead-lettered instead of a third hand-out.
        b.settle("t", "s", 0, 1, 1, RELEASE)
        assert got(b, "s") == [(1, 2)]
        b.settle("t", "s", 0, 1, 2, RELEASE)
        assert got(b, "s") == []
        (dead,) = b.poll("dlt", "reader", 0, timeout=0)
        assert dead.dead_letter == mq.DeadLetter("t", "s", 0, 1, 2)
        info = b.group_info("t", "s", 0)
        assert (info.rejected, info.dead_lettered, info.committed) == (1, 2, 2)


def test_key_shared_keeps_per_key_order(clock: mq.ManualClock) -> None:
    with mq.Broker(clock=clock) as b:
        b.create_topic("t")
        b.subscribe("t", "k", share=mq.ShareMode.KEY)
        b.publish("t", b"a1", key=b"a")
        b.publish("t", b"a2", key=b"a")
        b.publish("t", b"b1", key=b"b")
        b.publish("t", b"n1")
        assert got(b, "k") == [(0, 1), (2, 1), (3, 1)]  # a2 waits behind a1
        assert got(b, "k") == []
        b.settle("t", "k", 0, 0, 1, RELEASE)
        assert got(b, "k") == [(0, 2)]  # a1 again, still before a2
        b.settle("t", "k", 0, 0, 2, ACCEPT)
        assert [m.value for m in b.poll("t", "k", 0, timeout=0)] == [b"a2"]
    # A plain share group would have handed a2 out at once.
    with mq.Broker(clock=clock) as b:
        b.create_topic("t")
        b.subscribe("t", "s", share=mq.ShareMode.ALL)
        b.publish("t", b"a1", key=b"a")
        b.publish("t", b"a2", key=b"a")
        assert got(b, "s") == [(0, 1), (1, 1)]


def test_max_acquired_bounds_what_is_acquired_at_once(shared: mq.Broker) -> None:
    b = shared
    b.subscribe("t", "few", share=mq.ShareMode.ALL, max_acquired=2)
    publish(b, b"a", b"b", b"c")
    assert got(b, "few") == [(0, 1), (1, 1)]
    assert got(b, "few") == []
    b.settle("t", "few", 0, 1, 1, ACCEPT)
    assert got(b, "few") == [(2, 1)]


# A poll waiting at max_acquired must wake when a settlement frees a place (mq.h: it "waits until
# a message is settled or a lock runs out"), whichever settlement it is.
@pytest.mark.parametrize("action", [RELEASE, ACCEPT, REJECT], ids=["release", "accept", "reject"])
def test_a_poll_waiting_at_max_acquired_wakes_on_a_settlement(
    clock: mq.ManualClock, action: mq.Settle
) -> None:
    # The manual clock never moves here: neither a lock nor the poll's wait can run out.
    b = mq.Broker(clock=clock)
    try:
        b.create_topic("t")
        b.subscribe("t", "w", share=mq.ShareMode.ALL, max_acquired=1)
        b.publish("t", b"a")
        b.publish("t", b"b")
        (first,) = b.poll("t", "w", 0, timeout=0)
        out: list[list[tuple[int, int]]] = []
        before = blocked_calls()

        def wait() -> None:
            try:
                out.append([(m.offset, m.delivery_count) for m in b.poll("t", "w", 0, timeout=60)])
            except mq.Closed:
                pass

        t = threading.Thread(target=wait)
        t.start()
        wait_until(lambda: blocked_calls() > before, what="the poll to wait")
        b.settle("t", "w", 0, first.offset, first.delivery_count, action)
        t.join(3)  # a bound, not a synchronisation: the settlement wakes it at once
        woke = not t.is_alive()
    finally:
        b.close()  # ends a poll left waiting (mq.Closed)
    t.join()
    assert woke, "the poll still waited after the settlement"
    assert out == [[(0, 2)]] if action == RELEASE else out == [[(1, 1)]]


def test_ack_accepts_and_nack_releases_everything_acquired(shared: mq.Broker) -> None:
    b = shared
    publish(b, b"a", b"b", b"c")
    assert got(b) == [(0, 1), (1, 1), (2, 1)]
    b.ack("t", "w", 0, 1)  # accepts offset 1 alone, not cumulatively
    assert b.group_info("t", "w", 0).committed == 0
    b.nack("t", "w", 0)
    assert got(b) == [(0, 2), (2, 2)]


def test_settle_refusals(shared: mq.Broker) -> None:
    b = shared
    b.subscribe("t", "o")
    publish(b, b"a")
    assert got(b) == [(0, 1)]
    with pytest.raises(mq.InvalidArgument, match="only MQ_SETTLE_RELEASE takes a delay"):
        b.settle("t", "w", 0, 0, 1, RENEW, delay=0.005)
    with pytest.raises(mq.InvalidArgument, match="group o is not a share group"):
        b.settle("t", "o", 0, 0, 1, ACCEPT)
    with pytest.raises(mq.InvalidArgument):
        b.settle("t", "w", 0, 0, 1, 7)  # type: ignore[arg-type]
    with pytest.raises(mq.NoSuchGroup):
        b.settle("t", "nobody", 0, 0, 1, ACCEPT)
    with pytest.raises(mq.NoSuchTopic):
        b.settle("nothing", "w", 0, 0, 1, ACCEPT)
    with pytest.raises(mq.BadPartition):
        b.settle("t", "w", 5, 0, 1, ACCEPT)
    with pytest.raises(mq.InvalidArgument, match="delivery_count -1 is out of range"):
        b.settle("t", "w", 0, 0, -1, ACCEPT)
    with pytest.raises(mq.InvalidArgument, match="delay must be >= 0"):
        b.settle("t", "w", 0, 0, 1, RELEASE, delay=-1.0)
    with pytest.raises(TypeError):
        b.settle("t", "w", 0, "0", 1, ACCEPT)  # type: ignore[arg-type]
    # None of it touched the acquisition.
    b.settle("t", "w", 0, 0, 1, ACCEPT)
    assert b.group_info("t", "w", 0).committed == 1


def test_share_options_are_refused_where_they_do_not_apply(broker: mq.Broker) -> None:
    broker.create_topic("t", partitions=2)
    with pytest.raises(mq.InvalidArgument, match="max_acquired is 5 but the group is not a share"):
        broker.subscribe("t", "bad", max_acquired=5)
    with pytest.raises(mq.InvalidArgument):
        broker.subscribe("t", "bad", share=3)  # type: ignore[arg-type]
    with pytest.raises(mq.InvalidArgument):
        broker.subscribe("t", "bad", share=mq.ShareMode.ALL, max_acquired=1_000_001)
    with pytest.raises(mq.InvalidArgument, match="max_acquired -1 is out of range"):
        broker.subscribe("t", "bad", share=mq.ShareMode.ALL, max_acquired=-1)
    assert broker.groups("t") == []
    broker.subscribe("t", "w", share=mq.ShareMode.KEY, max_acquired=1_000_000)
    # Push subscriptions and members take partitions exclusively: not a share group.
    with pytest.raises(mq.InvalidArgument):
        broker.open_subscription("t", "w", lambda m: None)
    with pytest.raises(mq.InvalidArgument):
        broker.join("t", "w")
    assert broker.groups("t") == ["w"]


def test_ordered_groups_report_no_share_state(broker: mq.Broker) -> None:
    broker.create_topic("t")
    broker.subscribe("t", "o")
    broker.publish("t", b"a")
    broker.poll("t", "o", 0, timeout=0)
    info = broker.group_info("t", "o", 0)
    assert (info.in_flight, info.acquired, info.available, info.rejected) == (1, 0, 0, 0)


def test_consume_settles_what_each_worker_took(broker: mq.Broker) -> None:
    broker.create_topic("t")
    broker.subscribe("t", "w", share=mq.ShareMode.ALL)
    broker.publish_many("t", [b"a", b"b", b"c", b"d"])

    async def main() -> list[bytes]:
        one = broker.consume("t", "w", 0, max=2)
        two = broker.consume("t", "w", 0, max=2)
        a = await one.__anext__()
        c = await two.__anext__()  # the other worker's poll took what the first did not hold
        assert (a.offset, c.offset) == (0, 2)
        one.settle(a, mq.Settle.ACCEPT)
        two.settle(c, mq.Settle.RELEASE)
        with pytest.raises(mq.NotInFlight):
            two.settle(c, mq.Settle.ACCEPT)
        b = await one.__anext__()
        d = await two.__anext__()
        one.settle(b, mq.Settle.ACCEPT)
        two.settle(d, mq.Settle.ACCEPT)
        again = await one.__anext__()
        assert (again.offset, again.delivery_count) == (2, 2)
        one.settle(again, mq.Settle.ACCEPT)
        return [m.value for m in (a, b, d, again)]

    assert asyncio.run(main()) == [b"a", b"b", b"d", b"c"]
    assert broker.group_info("t", "w", 0).committed == 4
