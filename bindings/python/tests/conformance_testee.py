"""The Python testee of the conformance suite (tests/conformance/FORMAT.md, "The testee
protocol"): reads the runner's requests on stdin, runs each through the binding's public API
(``import mq``, nothing private) and writes one reply line per request on stdout. It compares
nothing: the runner (``mq_conformance``) owns the scripts and the checks.

    mq_conformance --testee "python conformance_testee.py" tests/conformance/NAME.mqs

The reference is tests/conformance/testee/testee.c; this file follows it request by request.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import gc
import os
import re
import sys
import threading
import weakref
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any, TypeVar

import mq

CLOCK_START_NS = 1_000_000_000
_SAFE = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")
_INT = re.compile(r"-?[0-9]+\Z")
T = TypeVar("T")


def kafka_bootstrap() -> str | None:
    """The Kafka backend (FORMAT.md, "On the Kafka backend"): with MQ_CONFORMANCE_BACKEND=kafka
    the broker is opened on the cluster at MQ_KAFKA_BOOTSTRAP, without the manual clock. Unset,
    an address that cannot resolve, so broker_new's reply says what is missing (as testee.c)."""
    if os.environ.get("MQ_CONFORMANCE_BACKEND") != "kafka":
        return None
    return os.environ.get("MQ_KAFKA_BOOTSTRAP") or "MQ_KAFKA_BOOTSTRAP-is-not-set"


class Refused(Exception):
    """The testee cannot carry out a request: answered ``testee_error``."""


# ---- lines and values ------------------------------------------------------------------------


def enc(b: bytes) -> str:
    return "".join(chr(c) if c in _SAFE else f"%{c:02X}" for c in b)


def enc_s(s: str) -> str:
    return enc(s.encode("utf-8", "surrogateescape"))


def dec(s: str) -> bytes:
    out = bytearray()
    i = 0
    while i < len(s):
        if s[i] == "%":
            try:
                out.append(int(s[i + 1 : i + 3], 16))
            except ValueError:
                raise Refused(f"'{s}' is not percent-encoded") from None
            i += 3
        else:
            out += s[i].encode("ascii")
            i += 1
    return bytes(out)


class Request:
    def __init__(self, line: str) -> None:
        tokens = line.split(" ")
        self.line = line
        self.verb = tokens[0]
        self.fields: list[tuple[str, str]] = []
        for t in tokens[1:]:
            name, eq, value = t.partition("=")
            if not eq or not name:
                raise Refused("not a request line")
            self.fields.append((name, value))

    def raw(self, name: str) -> str | None:
        return next((v for n, v in self.fields if n == name), None)

    def has(self, name: str) -> bool:
        return self.raw(name) is not None

    def need(self, name: str) -> str:
        v = self.raw(name)
        if v is None:
            raise Refused(f"the request lacks {name}=")
        return v

    def data(self, name: str) -> bytes:
        return dec(self.need(name))

    def text(self, name: str) -> str:
        """A topic, group or member name: the binding takes str (bytes round-trip through
        surrogateescape, as the binding encodes names)."""
        return self.data(name).decode("utf-8", "surrogateescape")

    def integer(self, name: str, default: int | None = None) -> int:
        v = self.raw(name)
        if v is None:
            if default is None:
                raise Refused(f"the request lacks {name}=")
            return default
        if not _INT.match(v):
            raise Refused(f"{name}={v} is not an integer")
        return int(v)

    def opt_int(self, name: str) -> int | None:
        return self.integer(name) if self.has(name) else None

    def all(self, name: str) -> list[str]:
        return [v for n, v in self.fields if n == name]


def failed(e: mq.MQError) -> list[str]:
    # The exception's message is the library's text, verbatim (str(e) adds the status name).
    return [e.status_name, "error=" + enc_s(e.message)]


def status_of(call: Callable[[], object]) -> str:
    try:
        call()
        return "MQ_OK"
    except mq.MQError as e:
        return e.status_name


def seconds(ms: int) -> float:
    return ms / 1000.0


def timeout(wait_ms: int) -> float | None:
    # -1 waits forever (None); other negatives go to the binding, which refuses them.
    return None if wait_ms == -1 else seconds(wait_ms)


def message_fields(m: mq.Message) -> list[str]:
    f = [f"message={m.partition}:{m.offset}", "payload=" + enc(m.value)]
    if m.key is not None:
        f.append("key=" + enc(m.key))
    f += [f"delivery_count={m.delivery_count}", f"timestamp_ns={m.timestamp_ns}", f"lost={m.lost}"]
    f += [f"header={enc(n)}:{enc(v)}" for n, v in m.headers]
    d = m.dead_letter
    if d is not None:
        f.append(
            f"dead_letter={enc_s(d.topic)}:{enc_s(d.group)}:{d.partition}:{d.offset}:"
            f"{d.delivery_count}"
        )
    return f


def polled(poll: Callable[[], list[mq.Message]]) -> list[str]:
    """A poll's reply. The binding returns [] for MQ_TIMEOUT (mq's "nothing within the wait",
    its only outcome without a message) and keeps no text for it; a poll that raises has handed
    out nothing (count=0)."""
    try:
        msgs = poll()
    except mq.MQError as e:
        return [*failed(e), "count=0"]
    return polled_reply(msgs)


async def polled_async(poll: Awaitable[list[mq.Message]]) -> list[str]:
    """:func:`polled` of a poll's native asynchronous form."""
    try:
        msgs = await poll
    except mq.MQError as e:
        return [*failed(e), "count=0"]
    return polled_reply(msgs)


def polled_reply(msgs: list[mq.Message]) -> list[str]:
    out = ["MQ_OK"] if msgs else ["MQ_TIMEOUT", "error="]
    out.append(f"count={len(msgs)}")
    for m in msgs:
        out += message_fields(m)
    return out


# ---- scripted handlers, members and assignors -----------------------------------------------


def take(uses: list[bytes], payload: bytes) -> bool:
    """Uses up one fail=/extend= entry equal to the payload, if one is left."""
    if payload in uses:
        uses.remove(payload)
        return True
    return False


class Push:
    """A push subscription's script and record. It never references its handler: the handler
    is held by the binding alone, so its collection is the binding's release of it."""

    def __init__(self, fails: list[bytes], extends: list[bytes], delay_ms: int | None) -> None:
        self.lock = threading.Lock()  # guards the uses and the calls
        self.fails, self.extends, self.delay_ms = fails, extends, delay_ms
        self.calls: list[str] = []
        self.released: list[None] = []  # appended by a finalizer: no lock (it may run anywhere)
        self.sub: mq.Subscription | None = None

    def handle(self, m: mq.Message) -> bool:
        with self.lock:
            fails = take(self.fails, m.value)
            fields = [*message_fields(m), "outcome=" + ("fail" if fails else "ok")]
            if take(self.extends, m.value):
                fields.append("extend_lease=" + status_of(mq.extend_lease))
            delay = self.delay_ms
            if fails and delay is not None:
                fields.append("nack_delay=" + status_of(lambda: mq.set_nack_delay(seconds(delay))))
            self.calls.append(" ".join(fields))
        return not fails

    def frees(self) -> str:
        gc.collect()  # the binding's objects hold each other in cycles: collect them now
        return f"frees={len(self.released)}"


class Handler:
    def __init__(self, push: Push) -> None:
        self.push = push

    def __call__(self, m: mq.Message) -> bool:
        return self.push.handle(m)


class Joined:
    """A member's record of its on_rebalance calls."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.seen: list[tuple[mq.Member, int, str]] = []
        self.member: mq.Member | None = None
        self.open = False

    def on_rebalance(self, member: mq.Member, generation: int) -> None:
        with self.lock:
            self.seen.append((member, generation, member.id))

    def the_member(self) -> mq.Member:
        if self.member is None or not self.open:
            raise Refused("no such member")
        return self.member


def all_to_last(partitions: int, ids: Sequence[str]) -> list[int]:
    return [len(ids) - 1] * partitions


def by_id(partitions: int, ids: Sequence[str]) -> list[int]:
    order = sorted(range(len(ids)), key=lambda i: ids[i].encode("utf-8", "surrogateescape"))
    return [order[p % len(ids)] for p in range(partitions)]


def none(partitions: int, ids: Sequence[str]) -> list[int]:
    return [len(ids)] * partitions  # out of range: unowned


ASSIGNORS: dict[str, mq.Assignor | None] = {
    "round_robin": None,
    "all_to_last": all_to_last,
    "by_id": by_id,
    "none": none,
}


class Opened:
    """A publisher or cursor (ABI 1.7): named at its open, whether or not that succeeded."""

    def __init__(self) -> None:
        self.handle: mq.Publisher | mq.Cursor | None = None  # None unless open


class Background:
    def __init__(self) -> None:
        self.token = mq.CancelToken()
        self.reply: str | None = None  # set once, when the call has returned
        self.thread: threading.Thread | None = None
        # A call started with start=: the binding's coroutine, run on the testee's one loop.
        self.future: concurrent.futures.Future[list[str]] | None = None


# The verbs that take start=NAME (subscribe's start= is its start position).
STARTABLE = ("publish", "publish_batch", "poll", "ack_poll", "member_poll", "member_ack_poll")


class Loop:
    """One asyncio loop on one thread for every started call (no thread per call)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="asyncio", daemon=True)
        self.thread.start()

    def run(self, coro: Coroutine[Any, Any, list[str]]) -> concurrent.futures.Future[list[str]]:
        """Starts coro as a task and returns once its first step ran: the call is then made
        (and an ack-then-poll's ack stands), as the C testee's start is."""
        started = threading.Event()
        out: concurrent.futures.Future[list[str]] = concurrent.futures.Future()

        def copy(task: asyncio.Task[list[str]]) -> None:
            if task.cancelled():
                out.cancel()
            elif task.exception() is not None:
                out.set_exception(task.exception())
            else:
                out.set_result(task.result())

        def begin() -> None:
            task = self.loop.create_task(coro)
            task.add_done_callback(copy)
            self.loop.call_soon(started.set)  # after the task's first step (FIFO)

        self.loop.call_soon_threadsafe(begin)
        started.wait()
        return out


# ---- the world of one scenario -----------------------------------------------------------------


class World:
    def __init__(self) -> None:
        self.clock = mq.ManualClock(CLOCK_START_NS)
        self.broker: mq.Broker | None = None
        self.lock = threading.Lock()  # background threads look members up
        self.named: dict[str, Push | Joined | Background | Opened] = {}
        self.kafka = kafka_bootstrap()
        self.kafka_topics: list[str] = []  # created on the cluster: deleted by end
        self.aio: Loop | None = None

    def b(self) -> mq.Broker:
        if self.broker is None:
            raise Refused("no broker")
        return self.broker

    def add(self, name: str, obj: Push | Joined | Background | Opened) -> None:
        with self.lock:
            if name in self.named:
                raise Refused(f"the name '{name}' is taken")
            self.named[name] = obj

    def find(self, req: Request, field: str, kind: type[T]) -> T:
        with self.lock:
            obj = self.named.get(req.text(field))
        if not isinstance(obj, kind):
            raise Refused(f"no such {field}")
        return obj

    def opened(self, req: Request, field: str, kind: type[T]) -> T:
        """The open publisher or cursor the request names in ``field``."""
        handle = self.find(req, field, Opened).handle
        if not isinstance(handle, kind):
            raise Refused(f"no such open {field}")
        return handle

    def reply(self, line: str) -> str:
        try:
            req = Request(line)
            if req.has("async"):
                return self.start_background(req)
            if req.verb in STARTABLE and req.has("start"):
                return self.start_native(req)
            return " ".join(self.run(req, None))
        except Refused as e:
            return "testee_error detail=" + enc_s(str(e))
        except Exception as e:  # the front door broke its own contract: say how
            return "testee_error detail=" + enc_s(f"{type(e).__name__}: {e}")

    def start_background(self, req: Request) -> str:
        bg = Background()
        self.add(req.text("async"), bg)

        def main() -> None:
            try:
                bg.reply = " ".join(self.run(req, bg.token))
            except Refused as e:
                bg.reply = "testee_error detail=" + enc_s(str(e))
            except Exception as e:
                bg.reply = "testee_error detail=" + enc_s(f"{type(e).__name__}: {e}")

        bg.thread = threading.Thread(target=main, name=req.text("async"))
        bg.thread.start()
        return "MQ_OK"

    def start_native(self, req: Request) -> str:
        """The call through the binding's native asynchronous form (``*_async``), with a fresh
        cancel token, on the testee's loop; its reply is built where the call ends."""
        bg = Background()
        self.add(req.text("start"), bg)
        if self.aio is None:
            self.aio = Loop()

        async def main() -> list[str]:
            try:
                return await self.run_async(req, bg.token)
            except asyncio.CancelledError:
                return ["MQ_CANCELLED", "error="]

        def finished(f: concurrent.futures.Future[list[str]]) -> None:
            try:
                bg.reply = " ".join(f.result())
            except Refused as e:
                bg.reply = "testee_error detail=" + enc_s(str(e))
            except BaseException as e:
                bg.reply = "testee_error detail=" + enc_s(f"{type(e).__name__}: {e}")

        bg.future = self.aio.run(main())
        bg.future.add_done_callback(finished)
        return "MQ_OK"

    async def run_async(self, req: Request, cancel: mq.CancelToken) -> list[str]:
        verb = getattr(self, "a_" + req.verb)
        try:
            out: list[str] = await verb(req, cancel)
            return out
        except mq.MQError as e:
            return failed(e)

    def run(self, req: Request, cancel: mq.CancelToken | None) -> list[str]:
        verb = getattr(self, "v_" + req.verb, None)
        if verb is None:
            raise Refused(f"unknown verb '{req.verb}'")
        try:
            out: list[str] = verb(req, cancel)
            return out
        except mq.MQError as e:
            return failed(e)

    # ---- setup -----------------------------------------------------------------------------

    def v_hello(self, req: Request, _: object) -> list[str]:
        if req.integer("protocol") != 1:
            raise Refused("protocol 1 only")
        return ["MQ_OK", "protocol=1"]

    def v_broker_new(self, req: Request, _: object) -> list[str]:
        max_message_bytes = req.opt_int("max_message_bytes")
        if self.kafka is not None:
            self.broker = mq.Broker(kafka_bootstrap=self.kafka, max_message_bytes=max_message_bytes)
        else:
            self.broker = mq.Broker(clock=self.clock, max_message_bytes=max_message_bytes)
        return ["MQ_OK"]

    def v_clock(self, req: Request, _: object) -> list[str]:
        if self.kafka is not None:
            raise Refused("no manual clock on the Kafka backend")
        self.clock.advance_ns(req.integer("advance_ns"))
        return ["MQ_OK"]

    def v_topic_create(self, req: Request, _: object) -> list[str]:
        kw: dict[str, Any] = {}
        for name in ("partitions", "capacity", "max_bytes"):
            if req.has(name):
                kw[name] = req.integer(name)
        if req.has("ack_timeout_ms"):
            kw["ack_timeout"] = seconds(req.integer("ack_timeout_ms"))
        if req.has("max_age_ms"):
            kw["max_age"] = seconds(req.integer("max_age_ms"))
        if req.has("retention"):
            kw["retention"] = {
                "until_acked": mq.Retention.UNTIL_ACKED,
                "bounded": mq.Retention.BOUNDED,
            }[req.need("retention")]
        topic = req.text("topic")
        self.b().create_topic(topic, **kw)
        if self.kafka is not None:
            self.kafka_topics.append(topic)
        return ["MQ_OK"]

    def v_subscribe(self, req: Request, _: object) -> list[str]:
        kw: dict[str, Any] = {}
        if req.has("start"):
            kw["start"] = {"latest": mq.Start.LATEST, "earliest": mq.Start.EARLIEST}[
                req.need("start")
            ]
        if req.has("max_deliveries"):
            kw["max_deliveries"] = req.integer("max_deliveries")
        if req.has("dead_letter_topic"):
            kw["dead_letter_topic"] = req.text("dead_letter_topic")
        if req.has("share"):
            kw["share"] = {
                "none": mq.ShareMode.NONE,
                "all": mq.ShareMode.ALL,
                "key": mq.ShareMode.KEY,
            }[req.need("share")]
        if req.has("max_acquired"):
            kw["max_acquired"] = req.integer("max_acquired")
        self.b().subscribe(req.text("topic"), req.text("group"), **kw)
        return ["MQ_OK"]

    def v_unsubscribe(self, req: Request, _: object) -> list[str]:
        self.b().unsubscribe(req.text("topic"), req.text("group"))
        return ["MQ_OK"]

    def v_topic_delete(self, req: Request, _: object) -> list[str]:
        self.b().delete_topic(req.text("topic"))
        return ["MQ_OK"]

    def v_broker_close(self, req: Request, _: object) -> list[str]:
        self.b().close()
        return ["MQ_OK"]

    # ---- publishing ------------------------------------------------------------------------

    @staticmethod
    def records(req: Request) -> list[mq.Record]:
        """The payload=/key=/header=/delay_ms= runs as records (delay in seconds)."""
        recs: list[mq.Record] = []
        for name, value in req.fields:
            if name == "payload":
                recs.append(mq.Record(dec(value), None, []))
            elif name in ("key", "header", "delay_ms") and not recs:
                raise Refused(f"{name}= before any payload=")
            elif name == "key":
                recs[-1] = recs[-1]._replace(key=dec(value))
            elif name == "header":
                n, _, v = value.partition(":")
                recs[-1].headers.append((dec(n), dec(v)))  # type: ignore[union-attr]
            elif name == "delay_ms":
                recs[-1] = recs[-1]._replace(delay=int(value) / 1000)
        return recs

    @staticmethod
    def items(req: Request) -> list[bytes | mq.Record]:
        """Plain values where a record has neither key, headers nor delay (the binding's fast
        path), else the mq.Record."""
        return [
            r.value if r.key is None and not r.headers and r.delay is None else r  # type: ignore[misc]
            for r in World.records(req)
        ]

    def v_publish(self, req: Request, cancel: mq.CancelToken | None) -> list[str]:
        recs = self.records(req)
        if len(recs) != 1:
            raise Refused("publish takes one record")
        value, key, headers, delay = recs[0]
        publish = (
            self.opened(req, "publisher", mq.Publisher).publish
            if req.has("publisher")
            else functools.partial(self.b().publish, req.text("topic"))
        )
        p, o = publish(
            value,
            key=key,
            headers=headers,
            timeout=timeout(req.integer("wait")),
            cancel=cancel,
            delay=delay or 0.0,
        )
        return ["MQ_OK", f"partition={p}", f"offset={o}"]

    def v_publish_batch(self, req: Request, cancel: mq.CancelToken | None) -> list[str]:
        items = self.items(req)
        publish_many = (
            self.opened(req, "publisher", mq.Publisher).publish_many
            if req.has("publisher")
            else functools.partial(self.b().publish_many, req.text("topic"))
        )
        try:
            results = publish_many(items, timeout=timeout(req.integer("wait")), cancel=cancel)
            out = ["MQ_OK", f"published={len(results)}"]
        except mq.MQError as e:
            out = failed(e)
            published = getattr(e, "published", None)
            if published is not None:
                out.append(f"published={published}")
            results = getattr(e, "results", [])
        return out + [f"result={p}:{o}" for p, o in results]

    # ---- pull consumption --------------------------------------------------------------------

    def cursor(self, req: Request, call: str) -> Callable[..., Any]:
        """The cursor's method ``call`` with request field ``cursor=``, else the broker's."""
        if req.has("cursor"):
            return getattr(self.opened(req, "cursor", mq.Cursor), call)  # type: ignore[no-any-return]
        names = (req.text("topic"), req.text("group"), req.integer("partition"))
        return functools.partial(getattr(self.b(), call), *names)

    def v_poll(self, req: Request, cancel: mq.CancelToken | None) -> list[str]:
        poll = self.cursor(req, "poll")
        return polled(
            lambda: poll(
                max=req.integer("max"),
                timeout=timeout(req.integer("wait")),
                cancel=cancel,
            )
        )

    def v_ack_poll(self, req: Request, cancel: mq.CancelToken | None) -> list[str]:
        ack_poll = self.cursor(req, "ack_poll")
        return polled(
            lambda: ack_poll(
                req.integer("offset"),
                max=req.integer("max"),
                timeout=timeout(req.integer("wait")),
                cancel=cancel,
            )
        )

    # ---- the same through the native asynchronous forms (start=NAME) ---------------------------

    async def a_publish(self, req: Request, cancel: mq.CancelToken) -> list[str]:
        recs = self.records(req)
        if len(recs) != 1:
            raise Refused("publish takes one record")
        value, key, headers, delay = recs[0]
        p, o = await self.b().publish_async(
            req.text("topic"),
            value,
            key=key,
            headers=headers,
            timeout=timeout(req.integer("wait")),
            cancel=cancel,
            delay=delay or 0.0,
        )
        return ["MQ_OK", f"partition={p}", f"offset={o}"]

    async def a_publish_batch(self, req: Request, cancel: mq.CancelToken) -> list[str]:
        items = self.items(req)
        try:
            results = await self.b().publish_many_async(
                req.text("topic"), items, timeout=timeout(req.integer("wait")), cancel=cancel
            )
            out = ["MQ_OK", f"published={len(results)}"]
        except mq.MQError as e:
            out = failed(e)
            published = getattr(e, "published", None)
            if published is not None:
                out.append(f"published={published}")
            results = getattr(e, "results", [])
        return out + [f"result={p}:{o}" for p, o in results]

    async def a_poll(self, req: Request, cancel: mq.CancelToken) -> list[str]:
        return await polled_async(
            self.b().poll_async(
                req.text("topic"),
                req.text("group"),
                req.integer("partition"),
                max=req.integer("max"),
                timeout=timeout(req.integer("wait")),
                cancel=cancel,
            )
        )

    async def a_ack_poll(self, req: Request, cancel: mq.CancelToken) -> list[str]:
        return await polled_async(
            self.b().ack_poll_async(
                req.text("topic"),
                req.text("group"),
                req.integer("partition"),
                req.integer("offset"),
                max=req.integer("max"),
                timeout=timeout(req.integer("wait")),
                cancel=cancel,
            )
        )

    def v_ack(self, req: Request, _: object) -> list[str]:
        self.cursor(req, "ack")(req.integer("offset"))
        return ["MQ_OK"]

    def v_nack(self, req: Request, _: object) -> list[str]:
        delay = seconds(req.integer("delay_ms"))
        self.b().nack(req.text("topic"), req.text("group"), req.integer("partition"), delay=delay)
        return ["MQ_OK"]

    def v_extend_lease(self, req: Request, _: object) -> list[str]:
        self.b().extend_lease(req.text("topic"), req.text("group"), req.integer("partition"))
        return ["MQ_OK"]

    def v_settle(self, req: Request, _: object) -> list[str]:
        action = {
            "accept": mq.Settle.ACCEPT,
            "release": mq.Settle.RELEASE,
            "reject": mq.Settle.REJECT,
            "renew": mq.Settle.RENEW,
        }[req.need("action")]
        self.b().settle(
            req.text("topic"),
            req.text("group"),
            req.integer("partition"),
            req.integer("offset"),
            req.integer("delivery_count"),
            action,
            delay=seconds(req.integer("delay_ms", 0)),
        )
        return ["MQ_OK"]

    def v_seek(self, req: Request, _: object) -> list[str]:
        to = req.need("offset")
        named = {"earliest": mq.OFFSET_EARLIEST, "end": mq.OFFSET_END}
        offset = named[to] if to in named else req.integer("offset")
        self.b().seek(req.text("topic"), req.text("group"), req.integer("partition"), offset)
        return ["MQ_OK"]

    # ---- state -------------------------------------------------------------------------------

    def v_partition_describe(self, req: Request, _: object) -> list[str]:
        text = self.b().describe(req.text("topic"), req.integer("partition"))
        return ["MQ_OK", "text=" + enc_s(text)]

    def v_topic_get_info(self, req: Request, _: object) -> list[str]:
        t = self.b().topic_info(req.text("topic"))
        max_age_ms = 0 if t.max_age is None else round(t.max_age * 1000)
        retention = {mq.Retention.UNTIL_ACKED: "until_acked", mq.Retention.BOUNDED: "bounded"}
        return [
            "MQ_OK",
            f"partitions={t.partitions}",
            f"capacity={t.capacity}",
            f"max_bytes={t.max_bytes}",
            f"ack_timeout_ms={round(t.ack_timeout * 1000)}",
            f"max_age_ms={max_age_ms}",
            f"retention={retention[t.retention]}",
        ]

    def v_partition_get_info(self, req: Request, _: object) -> list[str]:
        i = self.b().partition_info(req.text("topic"), req.integer("partition"))
        return [
            "MQ_OK",
            f"start={i.start}",
            f"end={i.end}",
            f"backlog={i.backlog}",
            f"capacity={i.capacity}",
            f"retained_bytes={i.retained_bytes}",
            f"max_bytes={i.max_bytes}",
            f"producer_waits={i.producer_waits}",
            f"max_backlog={i.max_backlog}",
            f"dropped={i.dropped}",
            f"oldest_timestamp_ns={i.oldest_timestamp_ns}",
            f"oldest_age_ns={i.oldest_age_ns}",
        ]

    def v_group_get_info(self, req: Request, _: object) -> list[str]:
        g = self.b().group_info(req.text("topic"), req.text("group"), req.integer("partition"))
        return [
            "MQ_OK",
            f"committed={g.committed}",
            f"next={g.next}",
            f"lag={g.lag}",
            f"in_flight={g.in_flight}",
            f"lost={g.lost}",
            f"dead_lettered={g.dead_lettered}",
            f"next_age_ns={g.next_age_ns}",
            f"paused_until_ns={g.paused_until_ns}",
            f"acquired={g.acquired}",
            f"available={g.available}",
            f"delayed={g.delayed}",
            f"rejected={g.rejected}",
            f"oldest_unsettled_age_ns={g.oldest_unsettled_age_ns}",
            f"delivered={g.delivered_once},{g.delivered_twice},{g.delivered_thrice},"
            f"{g.delivered_more}",
        ]

    def v_topic_list(self, req: Request, _: object) -> list[str]:
        return ["MQ_OK"] + ["name=" + enc_s(n) for n in self.b().topics()]

    def v_group_list(self, req: Request, _: object) -> list[str]:
        return ["MQ_OK"] + ["name=" + enc_s(n) for n in self.b().groups(req.text("topic"))]

    # ---- partitioning helpers ------------------------------------------------------------------

    def v_key_murmur2(self, req: Request, _: object) -> list[str]:
        return ["MQ_OK", f"hash={mq.murmur2(req.data('key'))}"]

    def v_key_partition(self, req: Request, _: object) -> list[str]:
        return [
            "MQ_OK",
            f"partition={mq.key_partition(req.data('key'), req.integer('partitions'))}",
        ]

    def v_assignment_round_robin(self, req: Request, _: object) -> list[str]:
        owned = mq.round_robin(
            req.integer("partitions"), req.integer("members"), req.integer("member")
        )
        return ["MQ_OK", "owned=" + ",".join(map(str, owned))]

    # ---- push ----------------------------------------------------------------------------------

    def v_subscription_open(self, req: Request, _: object) -> list[str]:
        push = Push(
            [dec(v) for v in req.all("fail")],
            [dec(v) for v in req.all("extend")],
            req.opt_int("nack_delay_ms"),
        )
        self.add(req.text("subscription"), push)
        kw: dict[str, Any] = {}
        if req.has("prefetch"):
            kw["prefetch"] = req.integer("prefetch")
        parts = req.raw("partitions")
        if parts is not None:
            kw["partitions"] = [int(p) for p in parts.split(",")] if parts else []
        handler = Handler(push)
        weakref.finalize(handler, push.released.append, None)
        try:
            push.sub = self.b().open_subscription(
                req.text("topic"), req.text("group"), handler, **kw
            )
            out = ["MQ_OK"]
        except mq.MQError as e:
            out = failed(e)
        del handler
        return [*out, push.frees()]

    def v_subscription_close(self, req: Request, _: object) -> list[str]:
        push = self.find(req, "subscription", Push)
        if push.sub is None:
            raise Refused("the subscription is not open")
        try:
            push.sub.close()
            push.sub = None  # what the user held: the binding must hold nothing else now
            out = ["MQ_OK"]
        except mq.MQError as e:
            out = failed(e)
        return [*out, push.frees()]

    def v_calls(self, req: Request, _: object) -> list[str]:
        push = self.find(req, "subscription", Push)
        with push.lock:
            return ["MQ_OK", *push.calls]

    def v_frees(self, req: Request, _: object) -> list[str]:
        return ["MQ_OK", self.find(req, "subscription", Push).frees()]

    def v_handler_extend_lease(self, req: Request, _: object) -> list[str]:
        mq.extend_lease()
        return ["MQ_OK"]

    def v_handler_set_nack_delay(self, req: Request, _: object) -> list[str]:
        mq.set_nack_delay(seconds(req.integer("delay_ms")))
        return ["MQ_OK"]

    # ---- members -------------------------------------------------------------------------------

    def v_member_join(self, req: Request, _: object) -> list[str]:
        joined = Joined()
        self.add(req.text("member"), joined)
        kw: dict[str, Any] = {}
        if req.has("id"):
            kw["member_id"] = req.text("id")
        if req.has("session_timeout_ms"):
            kw["session_timeout"] = seconds(req.integer("session_timeout_ms"))
        if req.has("assignor"):
            kw["assignor"] = ASSIGNORS[req.need("assignor")]
        m = self.b().join(
            req.text("topic"), req.text("group"), on_rebalance=joined.on_rebalance, **kw
        )
        joined.member, joined.open = m, True
        return ["MQ_OK", "id=" + enc_s(m.id)]

    def member(self, req: Request) -> mq.Member:
        return self.find(req, "member", Joined).the_member()

    def v_member_close(self, req: Request, _: object) -> list[str]:
        joined = self.find(req, "member", Joined)
        joined.the_member().close()
        joined.open = False
        return ["MQ_OK"]

    def v_member_get_assignment(self, req: Request, _: object) -> list[str]:
        a = self.member(req).assignment()
        return [
            "MQ_OK",
            f"generation={a.generation}",
            "partitions=" + ",".join(map(str, a.partitions)),
        ]

    def v_member_poll(self, req: Request, cancel: mq.CancelToken | None) -> list[str]:
        m = self.member(req)
        wait = timeout(req.integer("wait"))
        return polled(lambda: m.poll(max=req.integer("max"), timeout=wait, cancel=cancel))

    def v_member_ack_poll(self, req: Request, cancel: mq.CancelToken | None) -> list[str]:
        m = self.member(req)
        wait = timeout(req.integer("wait"))
        return polled(
            lambda: m.ack_poll(
                req.integer("partition"),
                req.integer("offset"),
                max=req.integer("max"),
                timeout=wait,
                cancel=cancel,
            )
        )

    async def a_member_poll(self, req: Request, cancel: mq.CancelToken) -> list[str]:
        m = self.member(req)
        wait = timeout(req.integer("wait"))
        return await polled_async(m.poll_async(max=req.integer("max"), timeout=wait, cancel=cancel))

    async def a_member_ack_poll(self, req: Request, cancel: mq.CancelToken) -> list[str]:
        m = self.member(req)
        wait = timeout(req.integer("wait"))
        return await polled_async(
            m.ack_poll_async(
                req.integer("partition"),
                req.integer("offset"),
                max=req.integer("max"),
                timeout=wait,
                cancel=cancel,
            )
        )

    def v_member_ack(self, req: Request, _: object) -> list[str]:
        self.member(req).ack(req.integer("partition"), req.integer("offset"))
        return ["MQ_OK"]

    def v_member_nack(self, req: Request, _: object) -> list[str]:
        self.member(req).nack(req.integer("partition"), delay=seconds(req.integer("delay_ms")))
        return ["MQ_OK"]

    def v_member_extend_lease(self, req: Request, _: object) -> list[str]:
        self.member(req).extend_lease(req.integer("partition"))
        return ["MQ_OK"]

    def v_rebalances(self, req: Request, _: object) -> list[str]:
        joined = self.find(req, "member", Joined)
        with joined.lock:
            seen = list(joined.seen)
        out = ["MQ_OK"]
        for member, generation, member_id in seen:
            # The id is what the runner checks; Python can say more: the very object join returned.
            if joined.member is not None and member is not joined.member:
                raise Refused("on_rebalance was handed a Member other than the one join returned")
            out.append(f"rebalance={generation}:{enc_s(member_id)}")
        return out

    # ---- handles (ABI 1.7) --------------------------------------------------------------------

    def v_publisher_open(self, req: Request, _: object) -> list[str]:
        opened = Opened()
        self.add(req.text("publisher"), opened)
        opened.handle = self.b().publisher(req.text("topic"))
        return ["MQ_OK"]

    def v_cursor_open(self, req: Request, _: object) -> list[str]:
        opened = Opened()
        self.add(req.text("cursor"), opened)
        b = self.b()
        opened.handle = b.cursor(req.text("topic"), req.text("group"), req.integer("partition"))
        return ["MQ_OK"]

    def close_handle(self, req: Request, field: str, kind: type[Any]) -> list[str]:
        opened = self.find(req, field, Opened)
        if not isinstance(opened.handle, kind):
            raise Refused(f"no such open {field}")
        opened.handle.close()
        opened.handle = None
        return ["MQ_OK"]

    def v_publisher_close(self, req: Request, _: object) -> list[str]:
        return self.close_handle(req, "publisher", mq.Publisher)

    def v_cursor_close(self, req: Request, _: object) -> list[str]:
        return self.close_handle(req, "cursor", mq.Cursor)

    # ---- background calls and the end ----------------------------------------------------------

    def v_await(self, req: Request, _: object) -> list[str]:
        reply = self.find(req, "call", Background).reply
        return ["pending" if reply is None else reply]

    def v_cancel(self, req: Request, _: object) -> list[str]:
        self.find(req, "call", Background).token.cancel()
        return ["MQ_OK"]

    def v_end(self, req: Request, _: object) -> list[str]:
        if self.broker is not None:
            self.broker.close()  # wakes the background calls still waiting
        with self.lock:
            objs = list(self.named.values())
        good = True
        for obj in objs:
            if isinstance(obj, Background) and obj.thread is not None:
                obj.thread.join()
            if isinstance(obj, Background) and obj.future is not None:
                # Closing the broker completed every pending one (MQ_CLOSED): none may be left.
                concurrent.futures.wait([obj.future])
        for obj in objs:
            try:
                if isinstance(obj, Push) and obj.sub is not None:
                    obj.sub.close()
                    obj.sub = None
                elif isinstance(obj, Joined) and obj.member is not None:
                    if obj.open:
                        obj.member.close()
                    obj.member, obj.open = None, False
            except mq.MQError:
                good = False
        self.broker = None  # the last reference: the binding frees the broker
        gc.collect()
        # After the broker: a handle outlives it (FORMAT.md, "Handles").
        for obj in objs:
            if isinstance(obj, Opened) and obj.handle is not None:
                obj.handle.close()
                obj.handle = None
        self.delete_kafka_topics()
        if not good:
            raise Refused("closing what the scenario left open failed")
        return ["MQ_OK"]

    def delete_kafka_topics(self) -> None:
        """Through a second broker, so the next scenario (they share topic names) starts on a
        clean cluster. Best effort, as testee.c: the scenario has run, and a topic left behind
        shows as the next scenario's failure (its topic_create finds the name taken)."""
        if self.kafka is None or not self.kafka_topics:
            return
        topics, self.kafka_topics = self.kafka_topics, []
        try:
            with mq.Broker(kafka_bootstrap=self.kafka) as b:
                for t in topics:
                    try:
                        b.delete_topic(t)
                    except mq.MQError:
                        pass  # deleted by the scenario itself, or the cluster went away
        except mq.MQError:
            pass  # the cluster does not answer: the next scenario's broker_new says so


def main() -> int:
    world = World()
    while True:
        line = sys.stdin.buffer.readline()
        if not line:
            return 0
        text = line.decode("ascii", "replace").rstrip("\n").rstrip("\r")
        sys.stdout.write(world.reply(text) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    sys.exit(main())
