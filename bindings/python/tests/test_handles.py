"""Publishers and cursors (mq 1.7): the named calls' behaviour through handles, their errors,
and every order of closing, dropping and collecting them and their broker."""

from __future__ import annotations

import gc
import threading
import weakref
from collections.abc import Iterator
from typing import Any, Callable

import pytest
from conftest import blocked_calls, python_child, wait_until

import mq
from mq._native import ffi


@pytest.fixture
def b() -> Iterator[mq.Broker]:
    with mq.Broker() as broker:
        broker.create_topic("t", capacity=4)
        broker.subscribe("t", "g")
        yield broker


def got(msgs: list[mq.Message]) -> list[tuple[int, bytes]]:
    return [(m.offset, m.value) for m in msgs]


def test_round_trip(b: mq.Broker) -> None:
    with b.publisher("t") as pub, b.cursor("t", "g", 0) as cur:
        assert pub.topic == "t" and (cur.topic, cur.group, cur.partition) == ("t", "g", 0)
        assert pub.publish(b"a", key=b"k", headers=[(b"h", b"1")]) == (0, 0)
        assert pub.publish_many([b"b", mq.Record(b"c", key=b"k2"), (None, "d")]) == [
            (0, 1),
            (0, 2),
            (0, 3),
        ]
        msgs = cur.poll(max=2, timeout=0)
        assert got(msgs) == [(0, b"a"), (1, b"b")]
        assert msgs[0].topic == "t" and msgs[0].key == b"k" and msgs[0].headers == ((b"h", b"1"),)
        assert got(cur.ack_poll(1, max=5, timeout=0)) == [(2, b"c"), (3, b"d")]
        cur.ack(3)
        assert b.group_info("t", "g", 0).committed == 4
        assert cur.poll(timeout=0) == []


def test_a_cursor_and_the_named_calls_share_the_group_position(b: mq.Broker) -> None:
    pub, cur = b.publisher("t"), b.cursor("t", "g", 0)
    for v in (b"a", b"b", b"c"):
        b.publish("t", v)
    assert got(cur.poll(max=1, timeout=0)) == [(0, b"a")]
    assert got(b.poll("t", "g", 0, max=1, timeout=0)) == [(1, b"b")]
    b.ack("t", "g", 0, 0)
    with pytest.raises(mq.NotInFlight):
        cur.ack(0)  # the named ack moved the position the cursor sees
    pub.publish(b"d")
    assert got(cur.ack_poll(1, timeout=0)) == [(2, b"c"), (3, b"d")]
    assert got(b.ack_poll("t", "g", 0, 3, timeout=0)) == []
    assert b.group_info("t", "g", 0).committed == 4


def test_a_full_partition_and_a_delayed_record_behave_as_named() -> None:
    clock = mq.ManualClock()
    with mq.Broker(clock=clock) as c:
        c.create_topic("t", capacity=1)
        c.subscribe("t", "g")
        pub, cur = c.publisher("t"), c.cursor("t", "g", 0)
        assert pub.publish(b"later", delay=1.0) == (0, 0)
        with pytest.raises(mq.Full) as full:
            pub.publish(b"x", timeout=0)
        assert not hasattr(full.value, "results")  # a single publish, as the named one
        with pytest.raises(mq.Full) as batch:
            pub.publish_many([b"y"], timeout=0)
        e: Any = batch.value
        assert (e.results, e.published) == ([(0, -1)], 0)  # nothing appended
        assert cur.poll(timeout=0) == []  # not due yet
        clock.advance(1.0)
        assert got(cur.poll(timeout=0)) == [(0, b"later")]


def test_errors_map_as_the_named_calls(b: mq.Broker) -> None:
    with pytest.raises(mq.InvalidArgument):
        b.publisher("bad name")
    with pytest.raises(mq.NoSuchTopic):
        b.publisher("nothing")
    with pytest.raises(mq.NoSuchTopic):
        b.cursor("nothing", "g", 0)
    with pytest.raises(mq.InvalidArgument):
        b.cursor("t", "bad name", 0)
    with pytest.raises(mq.NoSuchGroup):
        b.cursor("t", "nobody", 0)
    with pytest.raises(mq.BadPartition):
        b.cursor("t", "g", 1)
    with pytest.raises(TypeError):
        b.cursor("t", "g", "0")  # type: ignore[arg-type]
    pub, cur = b.publisher("t"), b.cursor("t", "g", 0)
    with pytest.raises(mq.InvalidArgument, match="timeout"):
        pub.publish(b"x", timeout=-1)
    with pytest.raises(TypeError):
        pub.publish(42)  # type: ignore[arg-type]
    with pytest.raises(mq.InvalidArgument):
        cur.poll(max=0)
    with pytest.raises(mq.InvalidArgument):
        cur.poll(max=-1)
    with pytest.raises(TypeError):
        cur.poll(cancel=object())  # type: ignore[arg-type]
    with pytest.raises(mq.InvalidArgument):
        cur.ack(1 << 63)
    with pytest.raises(mq.TooLarge):
        pub.publish(b"x" * (2 << 20))


def test_a_cursor_holds_its_group_and_a_publisher_its_topic(b: mq.Broker) -> None:
    pub, cur = b.publisher("t"), b.cursor("t", "g", 0)
    b.unsubscribe("t", "g")
    for call in (lambda: cur.poll(timeout=0), lambda: cur.ack(0), lambda: cur.ack_poll(0)):
        with pytest.raises(mq.NoSuchGroup):
            call()
    b.subscribe("t", "g")  # a new group of that name: not the cursor's
    with pytest.raises(mq.NoSuchGroup, match="close this cursor"):
        cur.poll(timeout=0)
    cur2 = b.cursor("t", "g", 0)
    b.delete_topic("t")
    b.create_topic("t")
    for topic_call in (
        lambda: pub.publish(b"x"),
        lambda: pub.publish_many([b"x"]),
        lambda: cur2.poll(timeout=0),
    ):
        with pytest.raises(mq.NoSuchTopic):
            topic_call()
    assert b.publisher("t").publish(b"y") == (0, 0)


def test_the_broker_closed_makes_the_handles_closed(b: mq.Broker) -> None:
    pub, cur = b.publisher("t"), b.cursor("t", "g", 0)
    b.close()
    calls: list[Callable[[], object]] = [
        lambda: pub.publish(b"x"),
        lambda: pub.publish_many([b"x"]),
        lambda: cur.poll(timeout=0),
        lambda: cur.ack(0),
        lambda: cur.ack_poll(0),
        lambda: b.publisher("t"),
        lambda: b.cursor("t", "g", 0),
    ]
    for call in calls:
        with pytest.raises(mq.Closed, match="the broker is closed"):
            call()
    pub.close()
    cur.close()


def test_a_closed_handle_raises_closed_and_closes_twice(b: mq.Broker) -> None:
    pub, cur = b.publisher("t"), b.cursor("t", "g", 0)
    pub.close()
    cur.close()
    assert pub.closed and cur.closed
    for call in (lambda: pub.publish(b"x"), lambda: pub.publish_many([])):
        with pytest.raises(mq.Closed, match="the publisher is closed"):
            call()
    for cursor_call in (lambda: cur.poll(), lambda: cur.ack(0), lambda: cur.ack_poll(0)):
        with pytest.raises(mq.Closed, match="the cursor is closed"):
            cursor_call()
    pub.close()
    cur.close()
    b.close()
    with pytest.raises(TypeError):
        mq.Cursor()


@pytest.mark.parametrize("order", ["handles first", "broker first"])
def test_closing_in_either_order(order: str) -> None:
    broker = mq.Broker()
    broker.create_topic("t")
    broker.subscribe("t", "g")
    pub, cur = broker.publisher("t"), broker.cursor("t", "g", 0)
    pub.publish(b"x")
    if order == "handles first":
        pub.close()
        cur.close()
        broker.close()
    else:
        broker.close()
        with pytest.raises(mq.Closed):
            cur.poll(timeout=0)
        cur.close()
        pub.close()


def test_the_broker_collected_first_leaves_closed_handles() -> None:
    broker = mq.Broker()
    broker.create_topic("t")
    broker.subscribe("t", "g")
    pub, cur = broker.publisher("t"), broker.cursor("t", "g", 0)
    gone = weakref.ref(broker)
    del broker  # the handles do not keep it: it is freed here
    gc.collect()
    assert gone() is None
    with pytest.raises(mq.Closed):
        pub.publish(b"x")
    with pytest.raises(mq.Closed):
        cur.poll(timeout=0)
    del pub  # collected without close
    cur.close()


@pytest.mark.parametrize("first", ["broker", "handles"])
def test_collected_together_in_a_cycle(first: str) -> None:
    class Holder:
        pass

    h = Holder()
    h.me = h  # type: ignore[attr-defined]
    broker = mq.Broker()
    broker.create_topic("t")
    broker.subscribe("t", "g")
    handles = [broker.publisher("t"), broker.cursor("t", "g", 0)]
    # The list goes with h, and drops its items last to first: the last one is freed first.
    h.objs = [*handles, broker] if first == "broker" else [broker, *handles]  # type: ignore[attr-defined]
    refs = [weakref.ref(o) for o in (broker, *handles)]
    del broker, handles, h
    gc.collect()
    assert [r() for r in refs] == [None, None, None]


def test_a_blocking_cursor_poll_wakes_on_a_publish(b: mq.Broker) -> None:
    pub, cur = b.publisher("t"), b.cursor("t", "g", 0)
    out: list[list[mq.Message]] = []
    before = blocked_calls()
    t = threading.Thread(target=lambda: out.append(cur.poll(timeout=None)))
    t.start()
    wait_until(lambda: blocked_calls() > before, what="the cursor poll to wait")
    pub.publish(b"wake")
    t.join(10)
    assert not t.is_alive() and got(out[0]) == [(0, b"wake")]


def test_a_blocking_cursor_poll_wakes_on_the_broker_close(b: mq.Broker) -> None:
    cur = b.cursor("t", "g", 0)
    b.publish("t", b"a")
    assert got(cur.poll(timeout=0)) == [(0, b"a")]
    errors: list[BaseException] = []

    def poll() -> None:
        try:
            cur.ack_poll(0, timeout=None)
        except BaseException as e:
            errors.append(e)

    before = blocked_calls()
    t = threading.Thread(target=poll)
    t.start()
    wait_until(lambda: blocked_calls() > before, what="the cursor poll to wait")
    b.close()
    t.join(10)
    assert not t.is_alive() and len(errors) == 1 and isinstance(errors[0], mq.Closed)


def counting_frees(monkeypatch: pytest.MonkeyPatch, cls: type[Any]) -> list[str]:
    """The names of the threads that free a handle of ``cls`` (one entry per free)."""
    frees: list[str] = []
    free = cls._free

    def counted(h: Any) -> None:
        frees.append(threading.current_thread().name)
        free(h)

    monkeypatch.setattr(cls, "_free", staticmethod(counted))
    return frees


def run_blocked(call: Callable[[], object], what: str) -> tuple[threading.Thread, list[object]]:
    """Runs ``call`` on a thread named "caller" and returns once it waits in mq; the list gets
    what it returned or raised."""
    out: list[object] = []

    def run() -> None:
        try:
            out.append(call())
        except BaseException as e:
            out.append(e)

    before = blocked_calls()
    t = threading.Thread(target=run, name="caller")
    t.start()
    wait_until(lambda: blocked_calls() > before, what=what)
    return t, out


@pytest.mark.parametrize("call", ["poll", "ack_poll"])
@pytest.mark.parametrize("with_token", [False, True], ids=["no token", "caller's token"])
def test_close_wakes_a_waiting_cursor_poll_with_closed(
    b: mq.Broker, monkeypatch: pytest.MonkeyPatch, call: str, with_token: bool
) -> None:
    frees = counting_frees(monkeypatch, mq.Cursor)
    cur = b.cursor("t", "g", 0)
    b.publish("t", b"a")
    (first,) = cur.poll(timeout=0)
    token = mq.CancelToken() if with_token else None
    if call == "poll":
        t, out = run_blocked(lambda: cur.poll(timeout=None, cancel=token), "the cursor poll")
    else:
        t, out = run_blocked(
            lambda: cur.ack_poll(first.offset, timeout=None, cancel=token), "the cursor poll"
        )
    cur.close()  # wakes the poll, does not wait for it
    assert cur.closed
    t.join(10)
    assert not t.is_alive()
    (e,) = out
    assert isinstance(e, mq.Closed) and "cursor was closed" in str(e), e
    # Freed once, by the poll as it returned: never by close under it.
    assert frees == ["caller"] and cur._h == ffi.NULL
    assert token is None or not token.cancelled  # the caller's token is left alone
    cur.close()
    with pytest.raises(mq.Closed, match="the cursor is closed"):
        cur.poll(timeout=None)
    assert frees == ["caller"]
    if call == "ack_poll":
        assert b.group_info("t", "g", 0).committed == 1  # the ack stands


def test_the_callers_token_still_cancels_a_cursor_poll(
    b: mq.Broker, monkeypatch: pytest.MonkeyPatch
) -> None:
    frees = counting_frees(monkeypatch, mq.Cursor)
    cur = b.cursor("t", "g", 0)
    token = mq.CancelToken()
    t, out = run_blocked(lambda: cur.poll(timeout=None, cancel=token), "the cursor poll")
    token.cancel()
    t.join(10)
    assert not t.is_alive() and isinstance(out[0], mq.Cancelled)
    with pytest.raises(mq.Cancelled):  # still cancelled: at once, not woken by anything else
        cur.poll(timeout=None, cancel=token)
    token.reset()
    b.publish("t", b"a")
    assert got(cur.poll(timeout=None, cancel=token)) == [(0, b"a")]
    assert not token._links  # no call left linked to it
    assert frees == []
    cur.close()
    assert frees == ["MainThread"]


@pytest.mark.parametrize("call", ["publish", "publish_many"])
def test_close_wakes_a_publish_waiting_for_room_with_closed(
    b: mq.Broker, monkeypatch: pytest.MonkeyPatch, call: str
) -> None:
    frees = counting_frees(monkeypatch, mq.Publisher)
    pub = b.publisher("t")
    pub.publish_many([b"1", b"2", b"3", b"4"])  # capacity 4: full
    if call == "publish":
        t, out = run_blocked(lambda: pub.publish(b"5", timeout=None), "the publish")
    else:
        t, out = run_blocked(
            lambda: pub.publish_many([b"5", b"6"], timeout=None, cancel=mq.CancelToken()),
            "the publish",
        )
    pub.close()
    t.join(10)
    assert not t.is_alive()
    (e,) = out
    assert isinstance(e, mq.Closed) and "publisher was closed" in str(e), e
    if call == "publish_many":
        err: Any = e
        assert (err.results, err.published) == ([(0, -1), (0, -1)], 0)  # nothing went in
    assert frees == ["caller"] and pub._h == ffi.NULL
    assert b.partition_info("t", 0).end == 4
    with pytest.raises(mq.Closed, match="the publisher is closed"):
        pub.publish(b"x")
    pub.close()
    pub.__del__()  # what collection runs: nothing left to free
    assert frees == ["caller"]


def test_a_close_between_enter_and_wait_still_wakes_the_call(b: mq.Broker) -> None:
    # close() after the call was let in but before its token was registered: the
    # registration sees the close and triggers the token itself.
    cur = b.cursor("t", "g", 0)
    cur._enter()  # another call in progress: the close below leaves the handle alone
    enter = cur._enter
    monkey: Any = cur

    def enter_then_close() -> Any:
        h = enter()
        cur.close()
        return h

    monkey._enter = enter_then_close
    with pytest.raises(mq.Closed, match="cursor was closed"):
        cur.poll(timeout=None)
    assert cur._h != ffi.NULL
    cur._leave()  # the last call out frees it
    assert cur._h == ffi.NULL


MAIN_THREAD_WAITS = """
import os, signal, threading, time
import mq
from mq._native import lib

seen = []
signal.signal(signal.SIGUSR1, lambda *a: seen.append(1))
b = mq.Broker()
b.create_topic("t", capacity=1)
b.subscribe("t", "g")
pub, cur = b.publisher("t"), b.cursor("t", "g", 0)

def when_waiting(then):
    def run():
        while lib.mqpy_blocked_calls() < 1:
            time.sleep(0.001)
        then()
    threading.Thread(target=run, daemon=True).start()

def signal_then_publish():
    n = len(seen)
    os.kill(os.getpid(), signal.SIGUSR1)
    while len(seen) == n:
        time.sleep(0.001)
    while lib.mqpy_blocked_calls() < 1:  # waiting again after the handler ran
        time.sleep(0.001)
    b.publish("t", b"late")

for token in (None, mq.CancelToken()):
    # A signal whose handler does not raise: the wait goes on, on the call's own token.
    when_waiting(signal_then_publish)
    (m,) = cur.poll(timeout=None, cancel=token)
    cur.ack(m.offset)
    print("resumed", m.value.decode(), len(seen), token is not None and token.cancelled)
    # Ctrl-C ends the wait (the caller's token is not triggered by it).
    when_waiting(lambda: os.kill(os.getpid(), signal.SIGINT))
    try:
        cur.poll(timeout=None, cancel=token)
    except KeyboardInterrupt:
        print("interrupted", token is not None and token.cancelled)
# Close from another thread ends a wait of the main thread too.
when_waiting(cur.close)
try:
    cur.poll(timeout=None)
except mq.Closed as e:
    print("poll:", e)
pub.publish(b"fills it")
when_waiting(pub.close)
try:
    pub.publish(b"waits", timeout=None)
except mq.Closed as e:
    print("publish:", e)
"""


def test_waits_of_the_main_thread_on_signals_and_close() -> None:
    child = python_child(MAIN_THREAD_WAITS)
    out, err = child.communicate(timeout=30)
    assert child.returncode == 0, err
    assert out.splitlines() == [
        "resumed late 1 False",
        "interrupted False",
        "resumed late 2 False",
        "interrupted False",
        "poll: MQ_CLOSED: the cursor was closed while it waited",
        "publish: MQ_CLOSED: the publisher was closed while it waited",
    ], (out, err)


def test_a_share_group_through_cursors(b: mq.Broker) -> None:
    b.subscribe("t", "w", share=mq.ShareMode.ALL)
    pub = b.publisher("t")
    one, two = b.cursor("t", "w", 0), b.cursor("t", "w", 0)
    pub.publish_many([b"a", b"b", b"c"])
    first = one.poll(max=1, timeout=0)
    assert got(first) == [(0, b"a")]
    assert got(two.poll(max=5, timeout=0)) == [(1, b"b"), (2, b"c")]  # what one does not hold
    two.ack(2)  # accepts offset 2 alone
    b.settle("t", "w", 0, 1, 1, mq.Settle.RELEASE)  # settling stays by name
    one.ack(0)
    assert got(one.poll(timeout=0)) == [(1, b"b")]
    assert b.group_info("t", "w", 0).committed == 1


def test_exit_with_handles_open_and_a_cursor_poll_waiting() -> None:
    child = python_child(
        """
        import threading, mq
        from mq._native import lib
        b = mq.Broker()
        b.create_topic("t")
        b.subscribe("t", "g")
        pub, cur = b.publisher("t"), b.cursor("t", "g", 0)
        cur2 = b.cursor("t", "g", 0)
        threading.Thread(target=lambda: cur.poll(timeout=None)).start()  # not a daemon
        while lib.mqpy_blocked_calls() < 1:
            pass
        cur2.close()
        print("end of main", flush=True)
        """
    )
    out, err = child.communicate(timeout=30)
    assert child.returncode == 0, (child.returncode, err)
    assert out.strip() == "end of main"
    assert "Traceback" not in err, err
