"""ack_poll (mq 1.1): an ack that travels with the next poll is the ack, then the poll; a
rejected ack polls nothing; the ack stands whatever the poll finds; waits end as a poll's."""

from __future__ import annotations

import signal
import threading
import time

import pytest
from conftest import blocked_calls, python_child, wait_until

import mq


def _loaded(b: mq.Broker, n: int = 5) -> None:
    b.create_topic("t", capacity=8)
    b.subscribe("t", "g")
    for i in range(n):
        b.publish("t", b"m%d" % i)


def _state(b: mq.Broker) -> tuple[int, int, int]:
    g = b.group_info("t", "g", 0)
    return (g.committed, g.next, g.in_flight)


def test_equals_ack_then_poll() -> None:
    with mq.Broker() as one, mq.Broker() as two:
        _loaded(one)
        _loaded(two)
        assert [m.offset for m in one.poll("t", "g", 0, max=2, timeout=0)] == [0, 1]
        two.poll("t", "g", 0, max=2, timeout=0)
        got = one.ack_poll("t", "g", 0, 0, max=2, timeout=0)
        two.ack("t", "g", 0, 0)
        want = two.poll("t", "g", 0, max=2, timeout=0)
        assert [(m.offset, m.value, m.delivery_count) for m in got] == [
            (m.offset, m.value, m.delivery_count) for m in want
        ]
        assert [m.offset for m in got] == [2, 3]
        assert _state(one) == _state(two) == (1, 4, 3)
        assert one.describe("t", 0) == two.describe("t", 0)


def test_a_rejected_ack_polls_nothing(broker: mq.Broker) -> None:
    _loaded(broker)
    broker.poll("t", "g", 0, max=2, timeout=0)
    before = _state(broker)
    with pytest.raises(
        mq.NotInFlight, match=r"offset 4 is not in flight for g \(in flight: 0\.\.1\)"
    ):
        broker.ack_poll("t", "g", 0, 4, timeout=None)  # would wait forever if it polled
    assert _state(broker) == before
    with pytest.raises(mq.BadPartition):
        broker.ack_poll("t", "g", 3, 1)
    with pytest.raises(mq.InvalidArgument):
        broker.ack_poll("t", "g", 0, 1, max=0)
    with pytest.raises(TypeError):
        broker.ack_poll("t", "g", 0, "1")  # type: ignore[arg-type]
    with pytest.raises(mq.NoSuchGroup):
        broker.ack_poll("t", "nope", 0, 1)
    assert _state(broker) == before


def test_the_ack_stands_when_nothing_comes(broker: mq.Broker) -> None:
    _loaded(broker, 1)
    broker.poll("t", "g", 0, timeout=0)
    assert broker.ack_poll("t", "g", 0, 0, timeout=0) == []
    assert _state(broker) == (1, 1, 0)
    broker.publish("t", b"m1")
    broker.poll("t", "g", 0, timeout=0)
    assert broker.ack_poll("t", "g", 0, 1, timeout=0.02) == []  # the timeout ran out
    assert _state(broker) == (2, 2, 0)


def test_waits_in_another_thread_wake_on_publish_and_cancel(broker: mq.Broker) -> None:
    _loaded(broker, 1)
    broker.poll("t", "g", 0, timeout=0)
    got: list[object] = []
    th = threading.Thread(target=lambda: got.append(broker.ack_poll("t", "g", 0, 0, timeout=None)))
    th.start()
    wait_until(lambda: blocked_calls() == 1, what="ack_poll waiting")
    assert _state(broker) == (1, 1, 0)  # acked before it waits
    broker.publish("t", b"late")
    th.join(5)
    assert [[m.value for m in ms] for ms in got] == [[b"late"]]  # type: ignore[attr-defined]
    tok = mq.CancelToken()
    errors: list[BaseException] = []

    def cancelled() -> None:
        try:
            broker.ack_poll("t", "g", 0, 1, timeout=None, cancel=tok)
        except BaseException as e:
            errors.append(e)

    th = threading.Thread(target=cancelled)
    th.start()
    wait_until(lambda: blocked_calls() == 1, what="ack_poll waiting")
    tok.cancel()
    th.join(5)
    assert [type(e) for e in errors] == [mq.Cancelled]
    assert _state(broker) == (2, 2, 0)  # the ack stands


def test_a_wait_in_the_main_thread_wakes_and_acks_once(broker: mq.Broker) -> None:
    _loaded(broker, 1)
    broker.poll("t", "g", 0, timeout=0)

    def publish_when_waiting() -> None:
        wait_until(lambda: blocked_calls() == 1)
        broker.publish("t", b"late")

    th = threading.Thread(target=publish_when_waiting)
    th.start()
    got = broker.ack_poll("t", "g", 0, 0, timeout=10)
    th.join(5)
    assert [m.value for m in got] == [b"late"]
    assert _state(broker) == (1, 2, 1)


def test_the_ack_makes_room_for_a_waiting_publisher(broker: mq.Broker) -> None:
    broker.create_topic("t", capacity=2)
    broker.subscribe("t", "g")
    broker.publish("t", b"a")
    broker.publish("t", b"b")
    broker.poll("t", "g", 0, max=1, timeout=0)
    out: list[tuple[int, int]] = []
    th = threading.Thread(target=lambda: out.append(broker.publish("t", b"c", timeout=10)))
    th.start()
    wait_until(lambda: broker.partition_info("t", 0).producer_waits == 1, what="publisher waits")
    assert [m.value for m in broker.ack_poll("t", "g", 0, 0, max=5, timeout=0)] == [b"b"]
    th.join(5)
    assert out == [(0, 2)]


def test_member_ack_poll(broker: mq.Broker) -> None:
    broker.create_topic("t", partitions=2)
    a = broker.join("t", "g", member_id="a")
    assert a.assignment().partitions == (0, 1)
    broker.publish("t", b"x0", key=b"k")
    broker.publish("t", b"x1", key=b"k")
    p = mq.key_partition(b"k", 2)
    (m,) = a.poll(max=1, timeout=0)
    (n,) = a.ack_poll(p, m.offset, max=1, timeout=0)
    assert (n.partition, n.offset, n.value) == (p, 1, b"x1")
    assert broker.group_info("t", "g", p).committed == 1
    with pytest.raises(mq.NotInFlight):
        a.ack_poll(p, m.offset, timeout=None)  # already acked: nothing polled, no wait
    with pytest.raises(mq.BadPartition):
        a.ack_poll(5, 0)
    assert a.ack_poll(p, n.offset, timeout=0) == []
    assert broker.group_info("t", "g", p).committed == 2
    b = broker.join("t", "g", member_id="b")
    with pytest.raises(mq.Rebalanced):
        a.ack_poll(p, 2, timeout=0)
    a.assignment()
    mine = a.assignment().partitions
    with pytest.raises(mq.Fenced):
        a.ack_poll(1 - mine[0], 0, timeout=0)
    b.close()
    a.close()
    with pytest.raises(mq.Closed):
        a.ack_poll(p, 0)


def test_close_wakes_a_member_ack_poll_and_the_ack_stands(broker: mq.Broker) -> None:
    broker.create_topic("t")
    m = broker.join("t", "g")
    m.assignment()
    broker.publish("t", b"x")
    (msg,) = m.poll(timeout=0)
    got: list[BaseException] = []

    def wait() -> None:
        try:
            m.ack_poll(0, msg.offset, timeout=None)
        except BaseException as e:
            got.append(e)

    th = threading.Thread(target=wait)
    th.start()
    wait_until(lambda: blocked_calls() == 1, what="member ack_poll waiting")
    assert broker.group_info("t", "g", 0).committed == 1
    m.close()
    th.join(5)
    assert [type(e) for e in got] == [mq.Closed]


CHILD = """
import sys, threading, time
import mq
from mq._native import lib

b = mq.Broker()
b.create_topic("t")
b.subscribe("t", "g")
what = "{what}"
m = b.join("t", "live") if what == "member" else None
b.publish("t", b"x")
if m is not None:
    m.assignment()
    m.poll(timeout=0)
else:
    b.poll("t", "g", 0, timeout=0)

def report_when_blocked():
    while lib.mqpy_blocked_calls() < 1:
        time.sleep(0.001)
    print("blocked", flush=True)

threading.Thread(target=report_when_blocked, daemon=True).start()
try:
    if m is not None:
        m.ack_poll(0, 0, timeout=None)
    else:
        b.ack_poll("t", "g", 0, 0, timeout=None)
    print("returned", flush=True)
except KeyboardInterrupt:
    group = "live" if m is not None else "g"
    print("interrupted", time.monotonic(), b.group_info("t", group, 0).committed, flush=True)
"""


@pytest.mark.parametrize("what", ["group", "member"])
def test_ctrl_c_ends_a_waiting_ack_poll_and_the_ack_stands(what: str) -> None:
    child = python_child(CHILD.replace("{what}", what))
    try:
        assert child.stdout is not None
        line = child.stdout.readline()
        assert line == "blocked\n", (line, child.stderr.read() if child.stderr else "")
        sent = time.monotonic()
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=10)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    words = out.split()
    assert words[:1] == ["interrupted"], (out, err)
    assert float(words[1]) - sent < 0.1
    assert words[2] == "1", "the ack was made before the wait"


SIGNAL_NOT_RAISING = """
import os, signal, threading, time
import mq
from mq._native import lib
seen = []
signal.signal(signal.SIGUSR1, lambda *a: seen.append(1))
b = mq.Broker()
b.create_topic("t")
b.subscribe("t", "g")
b.publish("t", b"first")
b.poll("t", "g", 0, timeout=0)
def later():
    while lib.mqpy_blocked_calls() < 1:
        time.sleep(0.001)
    os.kill(os.getpid(), signal.SIGUSR1)
    while not seen:
        time.sleep(0.001)
    while lib.mqpy_blocked_calls() < 1:  # waiting again after the handler ran
        time.sleep(0.001)
    b.publish("t", b"late")
threading.Thread(target=later, daemon=True).start()
print([m.value for m in b.ack_poll("t", "g", 0, 0, timeout=None)], seen)
"""


def test_a_signal_that_does_not_raise_resumes_the_wait_without_a_second_ack() -> None:
    child = python_child(SIGNAL_NOT_RAISING)
    out, err = child.communicate(timeout=20)
    assert out.strip() == "[b'late'] [1]", err
