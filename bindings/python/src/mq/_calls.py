"""The bodies of the publish and poll calls, shared by the named forms (:class:`mq.Broker`) and
the handles (:class:`mq.Publisher`, :class:`mq.Cursor`, mq 1.7).

Each takes the native function and ``head``, the arguments that say where the call goes: the
broker's handle and the names for a named form, the handle alone for a handle's. What follows
``head`` is the same for both (mq.h: a handle's call is its named form without the names), so
conversions, blocking, Ctrl-C, buffer growth and error mapping are written once.

A handle's call that may wait also takes ``wake`` (:class:`mq._wake.Wake`): it then waits on the
wake's token, which the handle's close and the caller's ``cancel`` trigger, and a call that
close woke raises :class:`mq.Closed`."""

from __future__ import annotations

import threading
from array import array
from collections.abc import Iterable, Sequence
from typing import Any, Callable, Optional, Union

from mq import _convert as cv
from mq._handles import CancelToken, delay_ms, token
from mq._native import PollBuffer, ctx, fail, ffi, lib, poll_buffer, publish_out
from mq._types import Bytes, Message, Record
from mq._wait import MAIN_IDENT, call_blocking, wait_ms
from mq._wake import Wake
from mq.errors import MQError

__all__ = [
    "PublishItem",
    "ack_poll",
    "pack_records",
    "poll",
    "publish",
    "publish_many",
    "results_at",
]

_TIMEOUT = lib.MQ_TIMEOUT
_CANCELLED = lib.MQ_CANCELLED
_TOO_LARGE = lib.MQ_ERR_TOO_LARGE
_NULL = ffi.NULL
_SIZE_T = next(t for t in "QLI" if array(t).itemsize == ffi.sizeof("size_t"))
_RESULT = ffi.sizeof("mq_publish_result")
_RESULT_PARTITION = ffi.offsetof("mq_publish_result", "partition") // 4
_RESULT_OFFSET = ffi.offsetof("mq_publish_result", "offset") // 8

PublishItem = Union[Bytes, Record, tuple[Optional[Bytes], Bytes], tuple[Any, ...]]


def publish(
    fn: Callable[..., int],
    batch_fn: Callable[..., int],
    head: tuple[Any, ...],
    value: Bytes,
    key: Bytes | None,
    headers: Iterable[tuple[Bytes, Bytes]] | None,
    timeout: float | None,
    cancel: CancelToken | None,
    delay: float,
    wake: Wake | None = None,
) -> tuple[int, int]:
    """``fn``: ``mqw_topic_publish`` or ``mqw_publisher_publish``. A delayed record goes as a
    batch of one (``batch_fn``: :func:`publish_many`'s), failing as a single publish does."""
    if delay_ms(delay):  # mq's single publish has no delay
        hs = None if headers is None else list(headers)
        try:
            return publish_many(
                batch_fn, head, [Record(value, key, hs, delay)], timeout, cancel, 0, wake
            )[0]
        except MQError as e:
            for attr in ("results", "published"):
                e.__dict__.pop(attr, None)
            raise
    v = cv.data(value, "value")
    if key is None:
        k, kl = _NULL, 0
    else:
        k = cv.data(key, "key")
        kl = len(k)
    if headers is None:
        ha, hc, keep = _NULL, 0, None
    else:
        ha, hc, keep = cv.headers(headers)
    w = wait_ms(timeout)
    c = ctx()
    po, oo = publish_out()
    tok = token(cancel) if wake is None else wake.ptr
    if w == 0 or (tok is None and threading.get_ident() != MAIN_IDENT):
        s = fn(*head, k, kl, v, len(v), ha, hc, w, _NULL, po, oo, c)
    else:
        again = None if wake is None else wake.again
        while True:
            s = call_blocking(
                fn,
                (*head, k, kl, v, len(v), ha, hc),
                w,
                tok,
                (po, oo, c),
                user_token=tok is not None,
                pretry=key is not None,  # a keyless try would move the round-robin on
                again=again,
            )
            # Off the main thread (or after a wake of the main thread's): the wake decides.
            if s != _CANCELLED or again is None or not again():
                break
    del keep  # the header bytes, referenced until mq has copied them
    if s:
        fail(s, c)
    return (po[0], oo[0])


def publish_many(
    fn: Callable[..., int],
    head: tuple[Any, ...],
    records: Iterable[PublishItem],
    timeout: float | None,
    cancel: CancelToken | None,
    delay: float,
    wake: Wake | None = None,
) -> list[tuple[int, int]]:
    """``fn``: ``mqpy_publish_many`` or ``mqpy_publisher_publish_many``. A batch that close
    woke is not retried (part of it may be in): it raises :class:`mq.Closed` with the partial
    results a cancelled one has."""
    recs = records if type(records) is list else list(records)
    n = len(recs)
    vd, vl, kd, kl, hcs, hd, hl, dl = pack(recs, delay_ms(delay))
    w = wait_ms(timeout)
    c = ctx()
    tok = token(cancel) if wake is None else wake.ptr
    s = call_blocking(
        fn,
        (*head, vd, vl, kd, kl, hcs, hd, hl, dl, n),
        w,
        tok,
        (c,),
        user_token=tok is not None,
        retry=False,
    )
    if s == 0:
        return results_at(c.pubres, n)
    try:
        closed = wake.closed_error() if s == _CANCELLED and wake is not None else None
        if closed is not None:
            raise closed
        fail(s, c)
    except MQError as e:
        if s in (lib.MQ_FULL, lib.MQ_CLOSED, lib.MQ_CANCELLED) or c.count:
            e.results = results_at(c.pubres, n)  # type: ignore[attr-defined]
        else:
            e.results = [(-1, -1)] * n  # type: ignore[attr-defined]
        e.published = int(c.count)  # type: ignore[attr-defined]
        raise


def poll(
    fn: Callable[..., int],
    head: tuple[Any, ...],
    topic: str,
    max: int,
    timeout: float | None,
    cancel: CancelToken | None,
    wake: Wake | None = None,
) -> list[Message]:
    """``fn``: ``mqw_group_poll_copy`` or ``mqw_cursor_poll_copy``."""
    n = cv.count(max, "max")
    w = wait_ms(timeout)
    c = ctx()
    pb = poll_buffer()
    tok = token(cancel) if wake is None else wake.ptr
    s = _poll_copy(fn, head, n, w, tok, pb, c, wake)
    while s == _TOO_LARGE:  # nothing was handed out: the same poll with room for it
        pb.resize(pb.needed[0])
        s = _poll_copy(fn, head, n, w, tok, pb, c, wake)
    return _polled(s, pb, n, c, topic)


def ack_poll(
    fn: Callable[..., int],
    poll_fn: Callable[..., int],
    head: tuple[Any, ...],
    topic: str,
    offset: int,
    max: int,
    timeout: float | None,
    cancel: CancelToken | None,
    wake: Wake | None = None,
) -> list[Message]:
    """``fn``: ``mqw_group_ack_poll_copy`` or ``mqw_cursor_ack_poll_copy``; ``poll_fn``: the
    matching poll (:func:`poll`'s ``fn``)."""
    o = cv.int64(offset, "offset")
    n = cv.count(max, "max")
    w = wait_ms(timeout)
    c = ctx()
    pb = poll_buffer()
    tok = token(cancel) if wake is None else wake.ptr
    # Where Ctrl-C must end the wait (the main thread), the ack goes with a look that does
    # not wait, then the wait is poll's (which may retry after a signal: the ack must not be
    # made twice).
    split = w != 0 and threading.get_ident() == MAIN_IDENT
    s = fn(
        *head,
        o,
        pb.mem,
        pb.cap,
        n,
        0 if split else w,
        _NULL if split or tok is None else tok,
        pb.count,
        pb.needed,
        c,
    )
    # MQ_ERR_TOO_LARGE after the ack leaves the ack standing: poll's retry takes over, as it
    # does after a wake's token reset (the ack stands: wait as a poll, never ack again).
    if s == _TOO_LARGE:
        pb.resize(pb.needed[0])
    while (
        s == _TOO_LARGE
        or (split and s == _TIMEOUT)
        or (s == _CANCELLED and wake is not None and wake.again())
    ):
        split = False
        s = _poll_copy(poll_fn, head, n, w, tok, pb, c, wake)
        if s == _TOO_LARGE:
            pb.resize(pb.needed[0])
    return _polled(s, pb, n, c, topic)


def _poll_copy(
    fn: Callable[..., int],
    head: tuple[Any, ...],
    n: int,
    w: int,
    tok: Any,
    pb: PollBuffer,
    c: Any,
    wake: Wake | None = None,
) -> int:
    if w == 0 or (tok is None and threading.get_ident() != MAIN_IDENT):
        return int(fn(*head, pb.mem, pb.cap, n, w, _NULL, pb.count, pb.needed, c))
    again = None if wake is None else wake.again
    while True:
        s = call_blocking(
            fn,
            (*head, pb.mem, pb.cap, n),
            w,
            tok,
            (pb.count, pb.needed, c),
            user_token=tok is not None,
            pretry=True,
            again=again,
        )
        # Off the main thread (or after a wake of the main thread's): the wake decides.
        if s != _CANCELLED or again is None or not again():
            return s


def _polled(s: int, pb: PollBuffer, n: int, c: Any, topic: str) -> list[Message]:
    if s == 0:
        got = cv.messages(pb, topic)
        pb.after(len(got), n)
        return got
    if s == _TIMEOUT:
        return []
    fail(s, c)


def results_at(pubres: Any, n: int) -> list[tuple[int, int]]:
    """(partition, offset) per record of the batch publish that wrote the results at pubres."""
    if n == 0:
        return []
    mv = memoryview(ffi.buffer(pubres, n * _RESULT))
    parts = mv.cast("i")[_RESULT_PARTITION :: _RESULT // 4].tolist()
    return list(zip(parts, mv.cast("q")[_RESULT_OFFSET :: _RESULT // 8].tolist()))


def pack(recs: Sequence[Any], delay: int) -> tuple[bytes, Any, bytes, Any, Any, bytes, Any, Any]:
    """:func:`pack_records`, with a fast path for a batch of plain ``bytes`` values (no keys,
    headers or delays of their own). The length and delay arrays keep their buffers alive."""
    if set(map(type, recs)) <= {bytes}:
        lens = array(_SIZE_T, map(len, recs))  # converted in C, not element by element
        dl = ffi.from_buffer("int64_t[]", array("q", [delay]) * len(recs)) if delay else _NULL
        return (
            b"".join(recs),
            ffi.from_buffer("size_t[]", lens),
            b"",
            _NULL,
            _NULL,
            b"",
            _NULL,
            dl,
        )
    return pack_records(recs, delay)


def pack_records(
    recs: Sequence[Any], delay: int
) -> tuple[bytes, Any, bytes, Any, Any, bytes, Any, Any]:
    """Packs records for mqpy_publish_many / mqpy_batch_new; ``delay`` (ms) is the delay of
    every record that has none of its own (:attr:`Record.delay` ``None``)."""
    values: list[bytes] = []
    keys: list[bytes] = []
    klens: list[int] = []
    hcounts: list[int] = []
    hparts: list[bytes] = []
    delays: list[int] = []
    any_key = any_headers = False
    any_delay = delay != 0
    for r in recs:
        t = type(r)
        d = delay
        if t is bytes or t is str or t is bytearray or t is memoryview:
            v, k, hs = r, None, None
        elif t is Record:
            v, k, hs = r.value, r.key, r.headers
            if r.delay is not None:
                d = delay_ms(r.delay)
                any_delay = any_delay or d != 0
        elif isinstance(r, tuple) and len(r) in (2, 3):
            k, v = r[0], r[1]
            hs = r[2] if len(r) == 3 else None
        else:
            raise TypeError(
                "a record is bytes, str, (key, value), (key, value, headers) or mq.Record, "
                f"not {t.__name__}"
            )
        values.append(cv.data(v, "value"))
        delays.append(d)
        if k is None:
            klens.append(-1)
        else:
            kb = cv.data(k, "key")
            keys.append(kb)
            klens.append(len(kb))
            any_key = True
        n = 0
        if hs:
            for h in hs:
                try:
                    hn, hv = h
                except (TypeError, ValueError):
                    raise TypeError(f"a header must be a (name, value) pair, not {h!r}") from None
                hparts.append(cv.data(hn, "header name"))
                hparts.append(cv.data(hv, "header value"))
                n += 1
            any_headers = True
        hcounts.append(n)
    vl = ffi.new("size_t[]", [len(v) for v in values])
    kl = ffi.new("int64_t[]", klens) if any_key else _NULL
    hc = ffi.new("size_t[]", hcounts) if any_headers else _NULL
    hl = ffi.new("size_t[]", [len(p) for p in hparts]) if hparts else _NULL
    dl = ffi.new("int64_t[]", delays) if any_delay else _NULL
    return b"".join(values), vl, b"".join(keys), kl, hc, b"".join(hparts), hl, dl
