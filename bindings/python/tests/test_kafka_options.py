"""The Kafka backend's options and statuses (mq 1.2) on the binding's own core, which is built
without the Kafka backend: the options reach mq_broker_new, which refuses a cluster clearly."""

from __future__ import annotations

from typing import Any

import pytest

import mq
from mq import _broker, _convert
from mq._native import ffi, lib
from mq.errors import error_for


def test_a_bootstrap_is_refused_by_a_core_without_the_kafka_backend() -> None:
    with pytest.raises(mq.UnsupportedError) as e:
        mq.Broker(kafka_bootstrap="127.0.0.1:9092", kafka_config={"client.id": "x"})
    assert e.value.status == lib.MQ_ERR_UNSUPPORTED == 23
    assert e.value.status_name == "MQ_ERR_UNSUPPORTED"
    # The library's own words, which name the switch of this package's build (CMakeLists.txt
    # defines MQ_KAFKA_HINT for the core), not the core's CMake option.
    assert e.value.message == (
        "this mq library was built without the Kafka backend; rebuild it with pip install with "
        "-C cmake.define.MQ_KAFKA=ON (needs librdkafka) to use kafka_bootstrap"
    )
    assert "-DMQ_KAFKA=ON" not in e.value.message
    assert str(e.value).startswith("MQ_ERR_UNSUPPORTED: ")
    assert isinstance(e.value, mq.MQError)


class _Recorder:
    """Stands for the cffi lib in mq._broker and records what mq_broker_new was given."""

    def __init__(self) -> None:
        self.seen: list[tuple[bytes | None, bytes | None]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(lib, name)

    def mqw_broker_new(self, opts: Any, out: Any, c: Any) -> int:
        def text(p: Any) -> bytes | None:
            return None if p == ffi.NULL else bytes(ffi.string(p))

        self.seen.append((text(opts.kafka_bootstrap), text(opts.kafka_config)))
        return int(lib.mqw_broker_new(opts, out, c))


def test_the_options_reach_mq_broker_new_as_c_text(monkeypatch: pytest.MonkeyPatch) -> None:
    rec = _Recorder()
    monkeypatch.setattr(_broker, "lib", rec)
    with pytest.raises(mq.UnsupportedError):
        mq.Broker(
            kafka_bootstrap="k1:9092,k2:9092",
            kafka_config={"client.id": "billing", "linger.ms": 5, "enable.idempotence": False},
        )
    with pytest.raises(mq.UnsupportedError):
        mq.Broker(kafka_bootstrap="k1:9092", kafka_config=[("acks", "all"), ("acks", "1")])
    # Without a cluster the settings are checked and passed, and mq ignores them.
    with mq.Broker(kafka_config={}) as b, mq.Broker(kafka_config={"a.b": "c=d"}) as b2:
        b.create_topic("t")
        b2.create_topic("t")
    assert rec.seen == [
        (b"k1:9092,k2:9092", b"client.id=billing\nlinger.ms=5\nenable.idempotence=false"),
        (b"k1:9092", b"acks=all\nacks=1"),
        (None, None),
        (None, b"a.b=c=d"),
    ]


@pytest.mark.parametrize(
    "config",
    [
        {"": "x"},
        {"a=b": "x"},
        {"a\nb": "x"},
        {"a\0b": "x"},
        {"client.id": "x\ny"},
        {"client.id": "x\0y"},
        [("ok", "1"), ("bad=name", "2")],
    ],
)
def test_settings_the_c_text_cannot_carry_are_refused_by_the_binding(config: Any) -> None:
    # Also without a bootstrap, where mq ignores the settings: the refusal is the binding's.
    for bootstrap in (None, "127.0.0.1:9092"):
        with pytest.raises(mq.InvalidArgument, match="name=value lines") as e:
            mq.Broker(kafka_bootstrap=bootstrap, kafka_config=config)
        assert isinstance(e.value, ValueError)


@pytest.mark.parametrize(
    "kw",
    [
        {"kafka_bootstrap": 9092},
        {"kafka_bootstrap": b"127.0.0.1:9092"},
        {"kafka_config": "client.id=x"},
        {"kafka_config": 5},
        {"kafka_config": {5: "x"}},
        {"kafka_config": {"linger.ms": 0.5}},
        {"kafka_config": ["client.id"]},
        {"kafka_config": ["ab"]},
    ],
)
def test_wrong_types_of_kafka_options_raise_type_error(kw: dict[str, Any]) -> None:
    # The binding's own words ("... must be ..."), not Python's for an unknown keyword.
    with pytest.raises(TypeError, match="must be"):
        mq.Broker(**kw)


def test_an_empty_bootstrap_is_refused_not_taken_for_none() -> None:
    with pytest.raises(mq.InvalidArgument, match="None for the in-process log"):
        mq.Broker(kafka_bootstrap="")


def test_the_joined_text() -> None:
    assert _convert.kafka_config(None) is None
    assert _convert.kafka_config({}) is None
    assert _convert.kafka_config({"x": True, "y": 0, "z": ""}) == b"x=true\ny=0\nz="
    assert _convert.kafka_config({"sasl.password": "p=ä"}) == "sasl.password=p=ä".encode()


def test_the_new_statuses_map_to_their_exceptions() -> None:
    for status, cls, name in (
        (23, mq.UnsupportedError, "MQ_ERR_UNSUPPORTED"),
        (24, mq.BackendError, "MQ_ERR_BACKEND"),
    ):
        err = error_for(status, "the library's words")
        assert type(err) is cls and issubclass(cls, mq.MQError)
        assert (err.status, err.status_name, err.message) == (status, name, "the library's words")
        assert ffi.string(lib.mq_status_name(status)).decode() == name
        assert getattr(lib, name) == status
    assert lib.MQ_ERR_BACKEND == 24
    # A status from a later library is still an MQError carrying its number.
    later = error_for(25, "newer")
    assert type(later) is mq.MQError and later.status == 25
