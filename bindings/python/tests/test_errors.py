"""Bad input of Python's own kinds, closed objects, and the status-to-exception mapping."""

from __future__ import annotations

import pytest

import mq
from mq._native import ffi, lib
from mq.errors import _BY_STATUS, error_for


def test_every_exception_names_its_c_status() -> None:
    for status, cls in _BY_STATUS.items():
        assert cls.status_name == ffi.string(lib.mq_status_name(status)).decode()
    # every status of the header has a class (MQ_OK aside)
    for status in range(1, 30):
        name = ffi.string(lib.mq_status_name(status)).decode()
        if name != "MQ_UNKNOWN_STATUS":
            assert status in _BY_STATUS, name
    unknown = error_for(99, "what")
    assert type(unknown) is mq.MQError and unknown.status == 99


def test_exceptions_subclass_the_builtin_they_mean(broker: mq.Broker) -> None:
    with pytest.raises(ValueError):
        broker.create_topic("bad name")
    with pytest.raises(LookupError):
        broker.poll("nope", "g", 0, timeout=0)
    broker.create_topic("t")
    with pytest.raises(mq.NoSuchGroup):
        broker.poll("t", "nope", 0, timeout=0)
    broker.subscribe("t", "g")
    with pytest.raises(IndexError):
        broker.poll("t", "g", 5, timeout=0)
    with pytest.raises(mq.AlreadyExists):
        broker.create_topic("t")


def test_messages_come_from_the_library(broker: mq.Broker) -> None:
    broker.create_topic("t")
    broker.subscribe("t", "billing")
    with pytest.raises(mq.NotInFlight) as e:
        broker.ack("t", "billing", 0, 7)
    assert e.value.message == "offset 7 is not in flight for billing (nothing is)"
    assert (
        str(e.value) == "MQ_ERR_NOT_IN_FLIGHT: offset 7 is not in flight for billing (nothing is)"
    )
    assert e.value.status == 16


@pytest.mark.parametrize(
    "call",
    [
        lambda b: b.create_topic(42),
        lambda b: b.create_topic("t", partitions="2"),
        lambda b: b.publish("t", 42),
        lambda b: b.publish("t", b"v", key=3.5),
        lambda b: b.publish("t", b"v", headers=[b"no-pair"]),
        lambda b: b.publish("t", b"v", timeout="soon"),
        lambda b: b.poll("t", "g", "0"),
        lambda b: b.poll("t", None, 0),
        lambda b: b.publish_many("t", [object()]),
        lambda b: b.publish_many("t", 5),
        lambda b: b.publish("t", b"v", cancel=object()),
        lambda b: b.open_subscription("t", "g", "not callable"),
    ],
)
def test_wrong_types_raise_type_error(broker: mq.Broker, call: object) -> None:
    broker.create_topic("t") if "t" not in broker.topics() else None
    with pytest.raises(TypeError):
        call(broker)  # type: ignore[operator]


@pytest.mark.parametrize(
    "call",
    [
        lambda b: b.create_topic("n", partitions=0),
        lambda b: b.create_topic("n", capacity=-1),
        lambda b: b.create_topic("n", max_bytes=-5),
        lambda b: b.create_topic("n", ack_timeout=-1.0),
        lambda b: b.poll("t", "g", 0, max=0, timeout=0),
        lambda b: b.poll("t", "g", 0, max=-3, timeout=0),
        lambda b: b.poll("t", "g", 0, timeout=-1),
        lambda b: b.poll("t", "g", 0, timeout=float("nan")),
        lambda b: b.publish("t", b"v", timeout=-0.5),
        lambda b: b.poll("t", "g", 2**40, timeout=0),
        lambda b: b.ack("t", "g", 0, 2**70),
        lambda b: b.nack("t", "g", 0, delay=-1),
        lambda b: b.create_topic("nul\0name"),
        lambda b: b.subscribe("t", "g2", max_deliveries=3),
        lambda b: mq.Broker(max_message_bytes=0),
        lambda b: mq.Broker(spin=-1.0),
    ],
)
def test_bad_values_raise_value_errors(broker: mq.Broker, call: object) -> None:
    broker.create_topic("t")
    broker.subscribe("t", "g")
    with pytest.raises(ValueError) as e:
        call(broker)  # type: ignore[operator]
    if isinstance(e.value, mq.MQError):
        assert e.value.message


def test_closed_broker_raises_closed_but_answers_introspection() -> None:
    b = mq.Broker()
    b.create_topic("t")
    b.subscribe("t", "g")
    b.close()
    assert b.closed
    with pytest.raises(mq.Closed):
        b.publish("t", b"x")
    with pytest.raises(mq.Closed):
        b.poll("t", "g", 0)
    with pytest.raises(mq.Closed):
        b.open_subscription("t", "g", lambda m: None)
    with pytest.raises(mq.Closed):
        b.join("t", "g")
    assert b.topics() == ["t"]
    assert b.describe("t", 0) == "log empty, next offset 0, backlog 0/1024; g 0/0"
    b.close()  # idempotent


def test_use_after_close_of_subscription_and_member(broker: mq.Broker) -> None:
    broker.create_topic("t", partitions=2)
    sub = broker.open_subscription("t", "push", lambda m: None)
    sub.close()
    sub.close()
    assert sub.closed
    m = broker.join("t", "live")
    m.close()
    m.close()
    with pytest.raises(mq.Closed):
        m.poll(timeout=0)
    with pytest.raises(mq.Closed):
        m.ack(0, 0)
    with pytest.raises(mq.Closed):
        m.assignment()


def test_constructors_are_not_public() -> None:
    with pytest.raises(TypeError):
        mq.Subscription()
    with pytest.raises(TypeError):
        mq.Member()
