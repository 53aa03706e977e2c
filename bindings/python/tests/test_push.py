"""Push subscriptions: handler outcomes, raising handlers, the error hook, closing rules."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from conftest import wait_until

import mq


@pytest.fixture
def hook() -> Iterator[list[tuple[BaseException, str]]]:
    seen: list[tuple[BaseException, str]] = []
    old = mq.set_error_hook(lambda e, where: seen.append((e, where)))
    yield seen
    mq.set_error_hook(old)


def test_the_reference_push_step(broker: mq.Broker) -> None:
    broker.create_topic("payments", capacity=10)
    calls: list[tuple[bytes, int, bool]] = []
    failed: list[int] = []

    def handler(m: mq.Message) -> bool:
        ok = not (m.value == b"pay-2" and not failed)
        if not ok:
            failed.append(m.offset)
        calls.append((m.value, m.offset, ok))
        return ok

    with broker.open_subscription("payments", "ledger", handler):
        for p in (b"pay-1", b"pay-2", b"pay-3"):
            broker.publish("payments", p)
        wait_until(lambda: broker.group_info("payments", "ledger", 0).committed == 3)
    assert calls == [
        (b"pay-1", 0, True),
        (b"pay-2", 1, False),
        (b"pay-2", 1, True),
        (b"pay-3", 2, True),
    ]
    assert broker.describe("payments", 0) == "log empty, next offset 3, backlog 0/10; ledger 3/3"


def _fails_once(m: mq.Message) -> None:
    if m.delivery_count == 1:
        raise ZeroDivisionError("fails the first time")


def test_a_raising_handler_nacks_and_reports(
    broker: mq.Broker, hook: list[tuple[BaseException, str]]
) -> None:
    broker.create_topic("t")
    seen: list[tuple[bytes, int]] = []

    def handler(m: mq.Message) -> None:
        seen.append((m.value, m.delivery_count))
        if m.delivery_count == 1:
            raise RuntimeError("first time fails")

    with broker.open_subscription("t", "g", handler):
        broker.publish("t", b"a")
        wait_until(lambda: broker.group_info("t", "g", 0).committed == 1)
    assert seen == [(b"a", 1), (b"a", 2)]  # raised once: nacked, not acked
    assert len(hook) == 1 and isinstance(hook[0][0], RuntimeError)
    assert "nacked" in hook[0][1]


def test_base_exceptions_in_handlers_never_reach_the_library(
    broker: mq.Broker, hook: list[tuple[BaseException, str]]
) -> None:
    broker.create_topic("t")
    n = []

    def handler(m: mq.Message) -> None:
        n.append(1)
        if len(n) == 1:
            raise SystemExit(3)
        if len(n) == 2:
            raise KeyboardInterrupt

    with broker.open_subscription("t", "g", handler):
        broker.publish("t", b"a")
        wait_until(lambda: broker.group_info("t", "g", 0).committed == 1)
    assert len(n) == 3
    assert [type(e) for e, _ in hook] == [SystemExit, KeyboardInterrupt]


def test_a_failing_error_hook_is_contained(
    broker: mq.Broker, capsys: pytest.CaptureFixture[str]
) -> None:
    def bad_hook(e: BaseException, where: str) -> None:
        raise ValueError("hook broke")

    old = mq.set_error_hook(bad_hook)
    try:
        broker.create_topic("t")
        with broker.open_subscription("t", "g", _fails_once):
            broker.publish("t", b"a")
            wait_until(lambda: broker.group_info("t", "g", 0).committed == 1)
    finally:
        mq.set_error_hook(old)
    assert "the error hook raised" in capsys.readouterr().err


def test_the_default_hook_logs(broker: mq.Broker, caplog: pytest.LogCaptureFixture) -> None:
    broker.create_topic("t")
    with broker.open_subscription("t", "g", _fails_once):
        broker.publish("t", b"a")
        wait_until(lambda: broker.group_info("t", "g", 0).committed == 1)
    assert any(
        r.name == "mq" and r.exc_info and r.exc_info[0] is ZeroDivisionError for r in caplog.records
    )


def test_closing_from_its_own_handler_raises_deadlock(broker: mq.Broker) -> None:
    broker.create_topic("t")
    errors: list[BaseException] = []
    holder: list[mq.Subscription] = []
    ready = threading.Event()

    def handler(m: mq.Message) -> None:
        ready.wait(5)
        try:
            holder[0].close()
        except BaseException as e:
            errors.append(e)

    sub = broker.open_subscription("t", "g", handler)
    holder.append(sub)
    ready.set()
    broker.publish("t", b"a")
    wait_until(lambda: errors != [])
    assert type(errors[0]) is mq.Deadlock
    assert "own handler" in errors[0].message
    sub.close()  # from outside it works
    assert sub.closed


def test_handler_side_lease_and_nack_delay(clock: mq.ManualClock) -> None:
    with mq.Broker(clock=clock) as b:
        b.create_topic("t")
        seen: list[int] = []
        results: list[str] = []

        def handler(m: mq.Message) -> bool:
            seen.append(m.delivery_count)
            mq.extend_lease()
            if m.delivery_count == 1:
                mq.set_nack_delay(0.05)
                try:
                    mq.set_nack_delay(-1)
                except mq.InvalidArgument:
                    results.append("negative refused")
                mq.set_nack_delay(0.05)
                return False
            return True

        with b.open_subscription("t", "g", handler):
            b.publish("t", b"a")
            wait_until(lambda: b.group_info("t", "g", 0).paused_until_ns != 0)
            assert b.group_info("t", "g", 0).paused_until_ns == clock.now_ns() + 50_000_000
            clock.advance(0.05)  # the loop rechecks after the pause in real time too
            wait_until(lambda: b.group_info("t", "g", 0).committed == 1)
        assert seen == [1, 2] and results == ["negative refused"]
    with pytest.raises(mq.InvalidArgument):
        mq.extend_lease()  # not in a handler
    with pytest.raises(mq.InvalidArgument):
        mq.set_nack_delay(1.0)


def test_explicit_partitions_and_ownership(broker: mq.Broker) -> None:
    broker.create_topic("t", partitions=3)
    got: list[int] = []
    with broker.open_subscription("t", "g", lambda m: got.append(m.partition), partitions=[0, 2]):
        with pytest.raises(mq.PartitionOwned):
            broker.open_subscription("t", "g", lambda m: None, partitions=[2])
        for i in range(3):
            broker.publish("t", b"x", key=str(i).encode())
        wait_until(
            lambda: (
                sum(broker.group_info("t", "g", p).committed for p in (0, 2))
                == sum(broker.partition_info("t", p).end for p in (0, 2))
            )
        )
    assert set(got) <= {0, 2}
    with pytest.raises(mq.InvalidArgument):
        broker.open_subscription("t", "g2", lambda m: None, partitions=[])


def test_broker_close_closes_its_subscriptions(broker: mq.Broker) -> None:
    broker.create_topic("t")
    sub = broker.open_subscription("t", "g", lambda m: None)
    broker.close()
    assert sub.closed
    sub.close()


def test_broker_close_from_a_handler_does_not_hang() -> None:
    b = mq.Broker()
    b.create_topic("t")
    done = threading.Event()

    def handler(m: mq.Message) -> None:
        b.close()
        done.set()

    sub = b.open_subscription("t", "g", handler)
    b.publish("t", b"a")
    assert done.wait(5)
    sub.close()
    assert sub.closed and b.closed


@pytest.mark.parametrize("order", ["sub-first", "broker-first", "gc-only"])
def test_any_close_order(order: str) -> None:
    import gc

    b = mq.Broker()
    b.create_topic("t", partitions=2)
    sub = b.open_subscription("t", "push", lambda m: None, partitions=[0])
    member = b.join("t", "live")
    if order == "sub-first":
        sub.close()
        member.close()
        b.close()
    elif order == "broker-first":
        b.close()
        sub.close()
        member.close()
    else:
        del b
        gc.collect()
        sub.close()
        member.close()
    del sub, member
    gc.collect()


@pytest.mark.parametrize("partitions", [None, [0]])
def test_session_timeout_is_checked_as_mq_h_says(
    broker: mq.Broker, partitions: list[int] | None
) -> None:
    # mq 1.3: 1 ms to 2**40 ms. In-process only the check shows that the value reaches mq: its
    # refusal of 0 names the C field (the binding itself refuses only what C cannot hold).
    broker.create_topic("t")
    with pytest.raises(mq.InvalidArgument, match="session_timeout_ms is 0"):
        broker.open_subscription("t", "g", lambda m: None, partitions=partitions, session_timeout=0)
    for ok in (0.001, 0.0001, 2**40 / 1000, 10.0):  # 0.0001 s rounds up to 1 ms, not to 0
        with broker.open_subscription(
            "t", "g", lambda m: None, partitions=partitions, session_timeout=ok
        ):
            pass
    for bad in (2**40 / 1000 + 0.001, -1.0, float("nan")):
        with pytest.raises(mq.InvalidArgument):
            broker.open_subscription(
                "t", "g", lambda m: None, partitions=partitions, session_timeout=bad
            )
    with pytest.raises(TypeError):
        broker.open_subscription("t", "g", lambda m: None, session_timeout="10")  # type: ignore[arg-type]
    # Nothing refused above claimed a partition.
    with broker.open_subscription("t", "g", lambda m: None, partitions=[0]):
        pass
