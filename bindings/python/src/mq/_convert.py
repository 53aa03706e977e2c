"""Argument checks and conversions between Python values and the native helpers."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from itertools import repeat
from operator import add
from typing import Any

from mq._native import META, ffi
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


def headers(hs: Iterable[tuple[Bytes, Bytes]] | None) -> tuple[bytes, Any, int]:
    """(packed bytes, size_t lengths in pairs, count) for the helpers."""
    if not hs:
        return b"", ffi.NULL, 0
    parts: list[bytes] = []
    for h in hs:
        try:
            n, v = h
        except (TypeError, ValueError):
            raise TypeError(f"a header must be a (name, value) pair, not {h!r}") from None
        parts.append(data(n, "header name"))
        parts.append(data(v, "header value"))
    return b"".join(parts), ffi.new("size_t[]", [len(p) for p in parts]), len(parts) // 2


def _dead_letter(m: Sequence[int], i: int, buf: bytes) -> DeadLetter | None:
    at = m[i + 11]
    if at < 0:
        return None
    g = m[i + 13]
    return _new(
        DeadLetter,
        (
            buf[at : at + m[i + 12]].decode("utf-8", "replace"),
            buf[g : g + m[i + 14]].decode("utf-8", "replace"),
            m[i + 15],
            m[i + 16],
            m[i + 17],
        ),
    )


def _headers_of(hm: Sequence[int], at: int, n: int, buf: bytes) -> tuple[Header, ...]:
    out = []
    for j in range(at, at + 4 * n, 4):
        a, b = hm[j], hm[j + 2]
        out.append((buf[a : a + hm[j + 1]], buf[b : b + hm[j + 3]]))
    return tuple(out)


def messages(c: Any, topic: str) -> list[Message]:
    """The messages a helper copied into the thread's scratch ``c``."""
    n = c.count
    if n == 0:
        return []
    k = META
    nh = c.header_total
    buf = ffi.buffer(c.data, c.data_len)[:]
    if n == 1:
        m = ffi.unpack(c.meta, k + 4 * nh)
        ko, vo = m[3], m[5]
        return [
            _new(
                Message,
                (
                    topic,
                    m[0],
                    m[2],
                    None if ko < 0 else buf[ko : ko + m[4]],
                    buf[vo : vo + m[6]],
                    _headers_of(m, m[10], m[9], buf) if nh else (),
                    m[1],
                    m[7],
                    m[8],
                    _dead_letter(m, 0, buf) if c.dead_letters else None,
                ),
            )
        ]
    # Per message the Python objects are the cost (bytes, ints, the tuple): only the columns
    # in use are converted, read in place as int64 (the helper says which kinds occur).
    end = n * k
    mv = memoryview(ffi.buffer(c.meta, (end + 4 * nh) * 8)).cast("q")
    voffs = mv[5:end:k].tolist()
    values = list(map(buf.__getitem__, map(slice, voffs, map(add, voffs, mv[6:end:k].tolist()))))
    keys: Iterable[bytes | None]
    if c.keys == 0:
        keys = repeat(None)
    else:
        keys = [
            None if o < 0 else buf[o : o + ln]
            for o, ln in zip(mv[3:end:k].tolist(), mv[4:end:k].tolist())
        ]
    hdrs: Iterable[tuple[Header, ...]]
    if nh:
        hdrs = [
            _headers_of(mv, at, hc, buf)
            for at, hc in zip(mv[10:end:k].tolist(), mv[9:end:k].tolist())
        ]
    else:
        hdrs = repeat(())
    dls: Iterable[DeadLetter | None]
    if c.dead_letters == 0:
        dls = repeat(None)
    else:
        dls = [_dead_letter(mv, i, buf) for i in range(0, end, k)]
    rows = zip(
        repeat(topic),
        mv[0:end:k].tolist(),
        mv[2:end:k].tolist(),
        keys,
        values,
        hdrs,
        mv[1:end:k].tolist(),
        mv[7:end:k].tolist(),
        mv[8:end:k].tolist(),
        dls,
    )
    return list(map(_new, repeat(Message), rows))
