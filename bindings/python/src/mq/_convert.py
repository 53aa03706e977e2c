"""Argument checks and conversions between Python values and the native helpers."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from itertools import repeat
from operator import add
from typing import Any

from mq._native import PollBuffer, ffi
from mq._types import Bytes, DeadLetter, Header, Message
from mq.errors import InvalidArgument

_new = tuple.__new__
_INT32 = 1 << 31
_INT64 = 1 << 63


def name(v: object, what: str) -> bytes:
    """A topic, group or member name as the C string mq expects (mq checks the rule itself)."""
    if type(v) is not str:
        raise TypeError(f"{what} must be a str, not {type(v).__name__}")
    if "\0" in v:
        raise InvalidArgument(f"{what} {v!r} contains a NUL character")
    return v.encode("utf-8", "surrogateescape")


def kafka_bootstrap(v: object) -> bytes:
    """The bootstrap servers as C text; "" is refused here (None is how to say "no cluster")."""
    if type(v) is not str:
        raise TypeError(f"kafka_bootstrap must be a str, not {type(v).__name__}")
    if not v:
        raise InvalidArgument(
            'kafka_bootstrap is empty: give "host:port,..." of a Kafka cluster, or None for '
            "the in-process log"
        )
    if "\0" in v:
        raise InvalidArgument(f"kafka_bootstrap {v!r} contains a NUL character")
    return v.encode()


def _kafka_value(name: str, v: object) -> str:
    # librdkafka's values are text; bools and ints are spelled the way it reads them.
    if type(v) is bool:
        return "true" if v else "false"
    if isinstance(v, str):
        s = str(v)
    elif isinstance(v, int):
        s = str(int(v))
    else:
        raise TypeError(f"kafka_config {name!r} must be a str, int or bool, not {type(v).__name__}")
    if "\n" in s or "\0" in s:
        raise InvalidArgument(
            f"kafka_config {name!r}: a value cannot contain a newline or NUL character (mq "
            f"passes the settings as name=value lines), not {s!r}"
        )
    return s


def kafka_config(cfg: object) -> bytes | None:
    """Client settings (a mapping or (name, value) pairs) as mq's "name=value" lines joined by
    '\n'; None when there are none. What those lines cannot carry is refused here."""
    if cfg is None:
        return None
    if isinstance(cfg, (str, bytes)):
        raise TypeError("kafka_config must be a mapping or (name, value) pairs, not a string")
    items = cfg.items() if isinstance(cfg, Mapping) else cfg
    try:
        it = iter(items)  # type: ignore[call-overload]
    except TypeError:
        raise TypeError(
            f"kafka_config must be a mapping or (name, value) pairs, not {type(cfg).__name__}"
        ) from None
    lines = []
    for pair in it:
        try:
            if isinstance(pair, (str, bytes)):
                raise TypeError  # "ab" would unpack as ("a", "b")
            n, v = pair
        except (TypeError, ValueError):
            raise TypeError(
                f"a kafka_config entry must be a (name, value) pair, not {pair!r}"
            ) from None
        if type(n) is not str:
            raise TypeError(f"a kafka_config name must be a str, not {type(n).__name__}")
        if not n or "=" in n or "\n" in n or "\0" in n:
            raise InvalidArgument(
                f"kafka_config name {n!r} cannot be passed: a name must be non-empty and "
                "contain no '=', newline or NUL (mq passes the settings as name=value lines)"
            )
        lines.append(f"{n}={_kafka_value(n, v)}")
    return "\n".join(lines).encode() if lines else None


def data(v: object, what: str) -> bytes:
    """A key, value or header part as bytes: bytes-like objects as they are, str as UTF-8."""
    t = type(v)
    if t is bytes:
        return v  # type: ignore[return-value]  # exact type checked: no isinstance cost
    if t is str:
        return v.encode()  # type: ignore[attr-defined, no-any-return]
    try:
        return bytes(memoryview(v))  # type: ignore[arg-type]
    except TypeError:
        raise TypeError(f"{what} must be bytes-like or str, not {t.__name__}") from None


def int32(v: object, what: str) -> int:
    if type(v) is not int:
        if isinstance(v, int) and not isinstance(v, bool):
            v = int(v)
        else:
            raise TypeError(f"{what} must be an int, not {type(v).__name__}")
    if not -_INT32 <= v < _INT32:
        raise InvalidArgument(f"{what} {v} is out of range")
    return v


def int64(v: object, what: str) -> int:
    if type(v) is not int:
        if isinstance(v, int) and not isinstance(v, bool):
            v = int(v)
        else:
            raise TypeError(f"{what} must be an int, not {type(v).__name__}")
    if not -_INT64 <= v < _INT64:
        raise InvalidArgument(f"{what} {v} is out of range")
    return v


def count(v: object, what: str) -> int:
    """A positive size (max, prefetch): 0 is left for mq to refuse, negatives are ours."""
    v = int64(v, what)
    if v < 0:
        raise InvalidArgument(f"{what} must be at least 1, not {v}")
    return v


def headers(hs: Iterable[tuple[Bytes, Bytes]]) -> tuple[Any, int, Any]:
    """(an mq_header array or NULL, its length, what must stay referenced while mq reads it)."""
    parts: list[bytes] = []
    for h in hs:
        try:
            n, v = h
        except (TypeError, ValueError):
            raise TypeError(f"a header must be a (name, value) pair, not {h!r}") from None
        parts.append(data(n, "header name"))
        parts.append(data(v, "header value"))
    if not parts:
        return ffi.NULL, 0, None
    base = ffi.from_buffer(b"".join(parts))
    arr = ffi.new("mq_header[]", len(parts) // 2)
    at = 0
    for i, h in enumerate(arr):
        n, v = parts[2 * i], parts[2 * i + 1]
        h.name, h.name_len = base + at, len(n)
        h.value, h.value_len = base + at + len(n), len(v)
        at += len(n) + len(v)
    return arr, len(arr), base


# Layout 1 of the copying poll (mq.h), read in place: int64 fields through a "q" view of the
# buffer, the two 32-bit ones through "i"/"I" views. Indices come from the header's structs.
_ENTRY = ffi.sizeof("mq_copied_message")
_FIRST = ffi.sizeof("mq_copy_header")


def _q(field: str) -> int:
    return int(ffi.offsetof("mq_copied_message", field)) // 8


_OFFSET, _TIMESTAMP, _LOST = _q("offset"), _q("timestamp_ns"), _q("lost")
_KEY_AT, _KEY_LEN = _q("key_at"), _q("key_len")
_VALUE_AT, _VALUE_LEN = _q("payload_at"), _q("payload_len")
_HEADERS_AT, _HEADER_COUNT, _DEAD_AT = _q("headers_at"), _q("header_count"), _q("dead_letter_at")
_PARTITION = ffi.offsetof("mq_copied_message", "partition") // 4
_DELIVERY = ffi.offsetof("mq_copied_message", "delivery_count") // 4
_DL_TOPIC = ffi.offsetof("mq_copied_dead_letter", "topic_at") // 8  # then topic_len
_DL_GROUP = ffi.offsetof("mq_copied_dead_letter", "group_at") // 8  # then group_len
_DL_OFFSET = ffi.offsetof("mq_copied_dead_letter", "offset") // 8
_DL_PARTITION = ffi.offsetof("mq_copied_dead_letter", "partition") // 4
_DL_DELIVERY = ffi.offsetof("mq_copied_dead_letter", "delivery_count") // 4
_HDR_Q = ffi.sizeof("mq_copied_header") // 8
assert _ENTRY % 8 == 0 and _FIRST % 8 == 0 and _HDR_Q == 4


def _copied_dead_letter(at: int, q: Any, i32: Any, u32: Any, raw: Any) -> DeadLetter | None:
    if at < 0:  # MQ_COPY_ABSENT
        return None
    j = at // 8
    t, tl, g, gl = q[j + _DL_TOPIC], q[j + _DL_TOPIC + 1], q[j + _DL_GROUP], q[j + _DL_GROUP + 1]
    k = at // 4
    return _new(
        DeadLetter,
        (
            raw[t : t + tl].decode("utf-8", "replace"),
            raw[g : g + gl].decode("utf-8", "replace"),
            i32[k + _DL_PARTITION],
            q[j + _DL_OFFSET],
            u32[k + _DL_DELIVERY],
        ),
    )


def _copied_headers(at: int, n: int, q: Any, raw: Any) -> tuple[Header, ...]:
    if n == 0:
        return ()
    h = q[at // 8 : at // 8 + 4 * n].tolist()
    return tuple(
        (raw[h[j] : h[j] + h[j + 1]], raw[h[j + 2] : h[j + 2] + h[j + 3]])
        for j in range(0, 4 * n, 4)
    )


def messages(pb: PollBuffer, topic: str) -> list[Message]:
    """The messages a copying poll wrote into the thread's buffer ``pb`` (layout 1)."""
    n = pb.count[0]
    if n == 0:
        return []
    raw, q, i32, u32 = pb.raw, pb.q, pb.i32, pb.u32
    k = _ENTRY // 8
    first = _FIRST // 8
    if n == 1:
        m = q[first : first + k].tolist()
        ka, va = m[_KEY_AT], m[_VALUE_AT]
        hc = m[_HEADER_COUNT]
        return [
            _new(
                Message,
                (
                    topic,
                    i32[_FIRST // 4 + _PARTITION],
                    m[_OFFSET],
                    None if ka < 0 else raw[ka : ka + m[_KEY_LEN]],
                    raw[va : va + m[_VALUE_LEN]],
                    _copied_headers(m[_HEADERS_AT], hc, q, raw) if hc else (),
                    u32[_FIRST // 4 + _DELIVERY],
                    m[_TIMESTAMP],
                    m[_LOST],
                    _copied_dead_letter(m[_DEAD_AT], q, i32, u32, raw),
                ),
            )
        ]
    # Per message the Python objects are the cost (bytes, ints, the tuple): columns are read
    # with strided slices of the views, and the optional ones only when some message has them.
    end = first + n * k
    k4, first4, end4 = 2 * k, _FIRST // 4, first * 2 + n * 2 * k

    def col(f: int) -> list[int]:
        return q[first + f : end : k].tolist()

    voffs = col(_VALUE_AT)
    values = list(map(raw.__getitem__, map(slice, voffs, map(add, voffs, col(_VALUE_LEN)))))
    koffs = col(_KEY_AT)
    keys: Iterable[bytes | None]
    if max(koffs) < 0:
        keys = repeat(None)
    else:
        keys = [None if o < 0 else raw[o : o + ln] for o, ln in zip(koffs, col(_KEY_LEN))]
    counts = col(_HEADER_COUNT)
    hdrs: Iterable[tuple[Header, ...]]
    if any(counts):
        hdrs = [_copied_headers(at, hc, q, raw) for at, hc in zip(col(_HEADERS_AT), counts)]
    else:
        hdrs = repeat(())
    dead = col(_DEAD_AT)
    dls: Iterable[DeadLetter | None]
    if max(dead) < 0:
        dls = repeat(None)
    else:
        dls = [_copied_dead_letter(at, q, i32, u32, raw) for at in dead]
    rows = zip(
        repeat(topic),
        i32[first4 + _PARTITION : end4 : k4].tolist(),
        col(_OFFSET),
        keys,
        values,
        hdrs,
        u32[first4 + _DELIVERY : end4 : k4].tolist(),
        col(_TIMESTAMP),
        col(_LOST),
        dls,
    )
    return list(map(_new, repeat(Message), rows))


def _view_bytes(p: Any, n: int) -> bytes:
    return ffi.buffer(p, n)[:] if n else b""


def view(msg: Any, topic: str) -> Message:
    """A copy of the message view mq hands a push handler (valid while the handler runs)."""
    hs: tuple[Header, ...] = ()
    if msg.header_count:
        hs = tuple(
            (_view_bytes(h.name, h.name_len), _view_bytes(h.value, h.value_len))
            for h in msg.headers[0 : msg.header_count]
        )
    d = msg.dead_letter
    dl = None
    if d != ffi.NULL:
        dl = _new(
            DeadLetter,
            (
                ffi.string(d.topic).decode("utf-8", "replace"),
                ffi.string(d.group).decode("utf-8", "replace"),
                d.partition,
                d.offset,
                d.delivery_count,
            ),
        )
    return _new(
        Message,
        (
            topic,
            msg.partition,
            msg.offset,
            None if msg.key == ffi.NULL else _view_bytes(msg.key, msg.key_len),
            _view_bytes(msg.payload, msg.payload_len),
            hs,
            msg.delivery_count,
            msg.timestamp_ns,
            msg.lost,
            dl,
        ),
    )
