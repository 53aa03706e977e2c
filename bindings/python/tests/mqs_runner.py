"""Runs tests/conformance/*.mqs scenarios (FORMAT.md) through the binding's public API.

This is the Python testee: every call goes through ``mq`` as a user would call it, and the
results are written back in the scenario's notation. Usage: ``python mqs_runner.py FILE...``.
"""

from __future__ import annotations

import functools
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import mq

CLOCK_START_NS = 1_000_000_000
WAIT_S = 10.0
EXTEND_TOKEN = object()


class ScriptError(Exception):
    """The script itself is wrong (unknown verb, missing word...)."""


@dataclass
class Line:
    number: int
    text: str
    words: list[str]  # positional words after the verb
    options: dict[str, str]
    expect: list[str] | None  # tokens after "->", None without "->"
    verb: str


def tokenize(text: str) -> list[tuple[str, bool]]:
    """(token, quoted) per FORMAT.md's lexical rules."""
    tokens: list[tuple[str, bool]] = []
    cur: list[str] = []
    in_tok = quoted = in_quote = False
    for ch in text:
        if in_quote:
            if ch == '"':
                in_quote = False
            else:
                cur.append(ch)
            continue
        if ch == '"':
            in_quote = True
            if not in_tok:
                in_tok, quoted = True, True
            continue
        if ch in " \t":
            if in_tok:
                tokens.append(("".join(cur), quoted))
                cur, in_tok, quoted = [], False, False
            continue
        if ch == "#":
            break
        in_tok = True
        cur.append(ch)
    if in_quote:
        raise ScriptError("a quote is still open at the end of the line")
    if in_tok:
        tokens.append(("".join(cur), quoted))
    return tokens


def is_option(tok: str, quoted: bool) -> bool:
    if quoted or "=" not in tok:
        return False
    name = tok.split("=", 1)[0]
    return bool(name) and all(c == "_" or "a" <= c <= "z" for c in name)


def parse(number: int, text: str) -> Line | None:
    toks = tokenize(text.rstrip("\r"))
    if not toks:
        return None
    verb, vq = toks[0]
    if vq or verb == "->" or is_option(verb, vq):
        raise ScriptError(f"a line starts with its verb, not {verb!r}")
    words: list[str] = []
    options: dict[str, str] = {}
    expect: list[str] | None = None
    for tok, quoted in toks[1:]:
        if tok == "->" and not quoted:
            if expect is not None:
                raise ScriptError("a line has at most one ->")
            expect = []
            continue
        if expect is not None:
            expect.append(("\0q" if quoted else "") + tok)
            continue
        if is_option(tok, quoted):
            name, value = tok.split("=", 1)
            if name in options:
                raise ScriptError(f"option {name} given twice")
            options[name] = value
        else:
            words.append(tok)
    return Line(number, text, words, options, expect, verb)


def num(v: str, what: str = "integer") -> int:
    try:
        return int(v, 10)
    except ValueError:
        raise ScriptError(f"{what} {v!r} is not an integer") from None


def wait_of(line: Line, opts: dict[str, str]) -> float | None:
    ms = num(opts.pop("wait", "0"), "wait")
    return None if ms == -1 else ms / 1000.0  # other negatives: the binding refuses them


def clock_time(ns: int) -> str:
    return duration(ns - CLOCK_START_NS)


def duration(ns: int) -> str:
    return str(ns // 1_000_000) if ns % 1_000_000 == 0 else f"{ns}ns"


@dataclass
class Outcome:
    status: str = "MQ_OK"
    error: str = ""
    words: list[str] = field(default_factory=list)
    options: dict[str, str] = field(default_factory=dict)


def nothing(f: Callable[[], object]) -> Outcome:
    """Runs a call that returns nothing: its outcome is MQ_OK if it did not raise."""
    f()
    return Outcome()


def run_call(f: Callable[[], Outcome]) -> Outcome:
    try:
        return f()
    except mq.MQError as e:
        out = Outcome(e.status_name, e.message)
        for k in ("published", "results"):
            if hasattr(e, k):
                v = getattr(e, k)
                out.options[k] = ",".join(f"{p}:{o}" for p, o in v) if k == "results" else str(v)
        return out


def message_options(msgs: Sequence[mq.Message]) -> dict[str, str]:
    def dl(m: mq.Message) -> str:
        d = m.dead_letter
        if d is None:
            return "-"
        return f"{d.topic}/{d.group}/{d.partition}/{d.offset}/{d.delivery_count}"

    return {
        "deliveries": ",".join(str(m.delivery_count) for m in msgs),
        "keys": ",".join("-" if m.key is None else m.key.decode() for m in msgs),
        "timestamps": ",".join(clock_time(m.timestamp_ns) for m in msgs),
        "lost": ",".join(str(m.lost) for m in msgs),
        "dead_letters": ",".join(dl(m) for m in msgs),
    }


@dataclass
class Call:
    partition: int
    offset: int
    payload: str
    key: bytes | None
    delivery_count: int
    lost: int
    dead_letter: str
    ok: bool = True
    delay: str = "-"
    extend: str = "-"


class PushRecorder:
    def __init__(self, fail: list[str], nack_delay: int | None, extend: list[str]) -> None:
        self.fail = list(fail)
        self.extend = list(extend)
        self.nack_delay = nack_delay
        self.calls: list[Call] = []
        self.lock = threading.Lock()

    def __call__(self, m: mq.Message) -> bool:
        payload = m.value.decode()
        d = m.dead_letter
        dl = (
            "-" if d is None else f"{d.topic}/{d.group}/{d.partition}/{d.offset}/{d.delivery_count}"
        )
        call = Call(m.partition, m.offset, payload, m.key, m.delivery_count, m.lost, dl)
        with self.lock:
            if payload in self.extend:
                self.extend.remove(payload)
                call.extend = _status_of(mq.extend_lease)
            failing = payload in self.fail
            if failing:
                self.fail.remove(payload)
                if self.nack_delay is not None:
                    delay = self.nack_delay / 1000.0
                    call.delay = _status_of(lambda: mq.set_nack_delay(delay))
            call.ok = not failing
            self.calls.append(call)
        return not failing


def _status_of(f: Callable[[], object]) -> str:
    try:
        f()
        return "MQ_OK"
    except mq.MQError as e:
        return e.status_name


ASSIGNORS: dict[str, Callable[[int, Sequence[str]], list[int]] | None] = {
    "round_robin": None,
    "all_to_last": lambda parts, ids: [len(ids) - 1] * parts,
    "by_id": lambda parts, ids: [
        sorted(range(len(ids)), key=lambda i: ids[i].encode())[p % len(ids)] for p in range(parts)
    ],
    "none": lambda parts, ids: [len(ids)] * parts,
}


class Scenario:
    def __init__(self, path: str) -> None:
        self.path = path
        self.broker: mq.Broker | None = None
        self.clock = mq.ManualClock(CLOCK_START_NS)
        self.names: set[str] = set()
        self.subs: dict[str, tuple[mq.Subscription, PushRecorder]] = {}
        self.members: dict[str, mq.Member] = {}
        self.rebalances: dict[str, list[tuple[bool, int]]] = {}
        self.member_objs: dict[str, list[mq.Member]] = {}
        self.background: dict[str, tuple[threading.Thread, mq.CancelToken, list[Any], Line]] = {}
        self.awaited: set[str] = set()

    # ---- the driver --------------------------------------------------------------------------

    def run(self) -> None:
        with open(self.path) as f:
            lines = f.read().split("\n")
        try:
            for i, text in enumerate(lines, 1):
                try:
                    line = parse(i, text)
                    if line is not None:
                        self.step(line)
                except ScriptError as e:
                    raise AssertionError(f"{self.path}:{i}: script error: {e}\n  {text}") from None
                except AssertionError as e:
                    raise AssertionError(f"{self.path}:{i}: {e}\n  {text}") from None
            for name in self.background:
                if name not in self.awaited:
                    raise AssertionError(f"{self.path}: background call {name} was never awaited")
        finally:
            self.teardown()

    def teardown(self) -> None:
        b = self.broker
        if b is not None:
            b.close()
        for th, _, _, _ in self.background.values():
            th.join(WAIT_S)

    def step(self, line: Line) -> None:
        v = line.verb
        if self.broker is None and v != "broker":
            raise ScriptError("the first command must be broker")
        if v == "eventually":
            self.eventually(line)
            return
        handler = getattr(self, "v_" + v, None)
        if handler is None:
            raise ScriptError(f"unknown verb {v}")
        handler(line)

    def check(self, line: Line, out: Outcome, opts: dict[str, str] | None = None) -> None:
        if opts:
            raise ScriptError(f"unknown option(s) {', '.join(sorted(opts))}")
        exp = line.expect
        if exp is None:
            if out.status != "MQ_OK":
                raise AssertionError(f"expected MQ_OK, got {out.status} ({out.error})")
            return
        toks = list(exp)
        want_status = "MQ_OK"
        if toks and not toks[0].startswith("\0q") and toks[0].startswith("MQ_"):
            want_status = toks.pop(0)
        if out.status != want_status:
            raise AssertionError(f"expected {want_status}, got {out.status} ({out.error})")
        if out.status.startswith("MQ_ERR_") and not out.error:
            raise AssertionError(f"{out.status} came with an empty message")
        words: list[str] = []
        for t in toks:
            quoted = t.startswith("\0q")
            t = t[2:] if quoted else t
            if is_option(t, quoted):
                name, value = t.split("=", 1)
                if name == "error":
                    if want_status == "MQ_OK":
                        raise ScriptError("error= needs a status other than MQ_OK")
                    if out.error != value:
                        raise AssertionError(f"error: expected {value!r}, got {out.error!r}")
                    continue
                if name not in out.options:
                    raise AssertionError(f"{name}: expected {value!r}, the call produced none")
                got = out.options[name]
                numbers = _is_int(value) and _is_int(got)
                same = int(value) == int(got) if numbers else value == got
                if not same:
                    raise AssertionError(f"{name}: expected {value!r}, got {got!r}")
            else:
                words.append(t)
        if words != out.words:
            raise AssertionError(f"expected {words}, got {out.words}")

    def eventually(self, line: Line) -> None:
        inner = Line(
            line.number,
            line.text,
            line.words[1:],
            line.options,
            line.expect,
            line.words[0] if line.words else "",
        )
        if inner.verb not in STATE_CHECKS:
            raise ScriptError(f"eventually takes a state check, not {inner.verb!r}")
        deadline = time.monotonic() + WAIT_S
        while True:
            try:
                self.step(inner)
                return
            except AssertionError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.001)

    def b(self) -> mq.Broker:
        assert self.broker is not None
        return self.broker

    def positional(self, line: Line, n: int) -> list[str]:
        if len(line.words) != n:
            raise ScriptError(f"{line.verb} takes {n} positional word(s), got {len(line.words)}")
        return line.words

    def new_name(self, name: str) -> None:
        if name in self.names:
            raise ScriptError(f"name {name} is already taken")
        self.names.add(name)

    # ---- setup -------------------------------------------------------------------------------

    def v_broker(self, line: Line) -> None:
        self.positional(line, 0)
        if self.broker is not None:
            raise ScriptError("a second broker")
        opts = dict(line.options)
        mmb = opts.pop("max_message_bytes", None)

        def make() -> Outcome:
            kw: dict[str, Any] = {"clock": self.clock}
            if mmb is not None:
                kw["max_message_bytes"] = num(mmb)
            self.broker = mq.Broker(**kw)
            return Outcome()

        self.check(line, run_call(make), opts)

    def v_clock(self, line: Line) -> None:
        (d,) = self.positional(line, 1)
        if line.expect is not None or line.options or not d.startswith("+"):
            raise ScriptError("clock +DURATION takes no options and no ->")
        for suffix, mult in (("ms", 1_000_000), ("ns", 1), ("s", 1_000_000_000)):
            if d.endswith(suffix):
                self.clock.advance_ns(num(d[1 : -len(suffix)]) * mult)
                return
        raise ScriptError(f"bad duration {d}")

    def v_topic(self, line: Line) -> None:
        (name,) = self.positional(line, 1)
        opts = dict(line.options)
        kw: dict[str, Any] = {}
        for k in ("partitions", "capacity", "max_bytes"):
            if k in opts:
                kw[k] = num(opts.pop(k))
        if "ack_timeout_ms" in opts:
            kw["ack_timeout"] = num(opts.pop("ack_timeout_ms")) / 1000.0
        if "max_age_ms" in opts:
            kw["max_age"] = num(opts.pop("max_age_ms")) / 1000.0
        if "retention" in opts:
            r = opts.pop("retention")
            kw["retention"] = {
                "until_acked": mq.Retention.UNTIL_ACKED,
                "bounded": mq.Retention.BOUNDED,
            }.get(r)
            if kw["retention"] is None:
                raise ScriptError(f"retention {r}")
        self.check(line, run_call(lambda: nothing(lambda: self.b().create_topic(name, **kw))), opts)

    def v_subscribe(self, line: Line) -> None:
        topic, group = self.positional(line, 2)
        opts = dict(line.options)
        kw: dict[str, Any] = {}
        if "start" in opts:
            s = opts.pop("start")
            kw["start"] = {"latest": mq.Start.LATEST, "earliest": mq.Start.EARLIEST}.get(s)
            if kw["start"] is None:
                raise ScriptError(f"start {s}")
        if "max_deliveries" in opts:
            kw["max_deliveries"] = num(opts.pop("max_deliveries"))
        if "dead_letter" in opts:
            kw["dead_letter_topic"] = opts.pop("dead_letter")
        self.check(
            line, run_call(lambda: nothing(lambda: self.b().subscribe(topic, group, **kw))), opts
        )

    def v_unsubscribe(self, line: Line) -> None:
        topic, group = self.positional(line, 2)
        self.check(
            line,
            run_call(lambda: nothing(lambda: self.b().unsubscribe(topic, group))),
            dict(line.options),
        )

    def v_close_broker(self, line: Line) -> None:
        self.positional(line, 0)
        self.check(line, run_call(lambda: nothing(lambda: self.b().close())), dict(line.options))

    # ---- the calls that can run in the background --------------------------------------------

    def prepare(self, line: Line, cancel: mq.CancelToken | None) -> Callable[[], Outcome]:
        """The call of a publish/publish_batch/poll/member_poll line, ready to run."""
        opts = dict(line.options)
        b = self.b()
        v = line.verb
        if v == "publish":
            topic, payload = self.positional(line, 2)
            key = opts.pop("key", None)
            wait = wait_of(line, opts)
            self.no_more(opts)

            def publish() -> Outcome:
                p, o = b.publish(
                    topic,
                    payload.encode(),
                    key=None if key is None else key.encode(),
                    timeout=wait,
                    cancel=cancel,
                )
                return Outcome(options={"partition": str(p), "offset": str(o)})

            return lambda: run_call(publish)
        if v == "publish_batch":
            if len(line.words) < 2:
                raise ScriptError("publish_batch TOPIC RECORD...")
            topic, records = line.words[0], line.words[1:]
            wait = wait_of(line, opts)
            self.no_more(opts)
            items: list[Any] = []
            for r in records:
                if ":" in r:
                    k, p = r.split(":", 1)
                    items.append((k.encode(), p.encode()))
                else:
                    items.append(r.encode())

            def batch() -> Outcome:
                res = b.publish_many(topic, items, timeout=wait, cancel=cancel)
                return Outcome(
                    options={
                        "published": str(len(res)),
                        "results": ",".join(f"{p}:{o}" for p, o in res),
                    }
                )

            return lambda: run_call(batch)
        if v == "poll":
            topic, group, part = self.positional(line, 3)
            mx = num(opts.pop("max", "10"))
            wait = wait_of(line, opts)
            self.no_more(opts)
            partition = num(part)

            def poll() -> Outcome:
                msgs = b.poll(topic, group, partition, max=mx, timeout=wait, cancel=cancel)
                if not msgs:
                    return Outcome("MQ_TIMEOUT")
                for m in msgs:
                    if m.partition != partition:
                        raise AssertionError(f"message from partition {m.partition}")
                return Outcome(
                    words=[f"{m.offset}:{m.value.decode()}" for m in msgs],
                    options=message_options(msgs),
                )

            return lambda: run_call(poll)
        if v == "member_poll":
            (name,) = self.positional(line, 1)
            member = self.member(name)
            mx = num(opts.pop("max", "10"))
            wait = wait_of(line, opts)
            self.no_more(opts)

            def mpoll() -> Outcome:
                msgs = member.poll(max=mx, timeout=wait, cancel=cancel)
                if not msgs:
                    return Outcome("MQ_TIMEOUT")
                return Outcome(
                    words=[f"{m.partition}/{m.offset}:{m.value.decode()}" for m in msgs],
                    options=message_options(msgs),
                )

            return lambda: run_call(mpoll)
        raise ScriptError(f"{v} cannot run in the background")

    @staticmethod
    def no_more(opts: dict[str, str]) -> None:
        if opts:
            raise ScriptError(f"unknown option(s) {', '.join(sorted(opts))}")

    def v_publish(self, line: Line) -> None:
        self.check(line, self.prepare(line, None)())

    v_publish_batch = v_poll = v_member_poll = v_publish

    def v_async(self, line: Line) -> None:
        if len(line.words) < 2 or line.expect is not None:
            raise ScriptError("async NAME CALL... (no ->)")
        name = line.words[0]
        self.new_name(name)
        inner = Line(line.number, line.text, line.words[2:], line.options, None, line.words[1])
        token = mq.CancelToken()
        call = self.prepare(inner, token)
        result: list[Any] = []
        th = threading.Thread(target=lambda: result.append(call()), daemon=True)
        self.background[name] = (th, token, result, inner)
        th.start()

    def v_await(self, line: Line) -> None:
        (name,) = self.positional(line, 1)
        if name not in self.background:
            raise ScriptError(f"no background call {name}")
        th, _, result, _ = self.background[name]
        th.join(WAIT_S)
        if th.is_alive():
            raise AssertionError(f"background call {name} still waits after {WAIT_S} s")
        self.awaited.add(name)
        self.check(line, result[0], dict(line.options))

    def v_cancel(self, line: Line) -> None:
        (name,) = self.positional(line, 1)
        if name not in self.background or line.expect is not None:
            raise ScriptError(f"cancel of unknown call {name}")
        self.background[name][1].cancel()

    # ---- pull consumption --------------------------------------------------------------------

    def v_ack(self, line: Line) -> None:
        topic, group, part, off = self.positional(line, 4)
        self.check(
            line,
            run_call(lambda: nothing(lambda: self.b().ack(topic, group, num(part), num(off)))),
            dict(line.options),
        )

    def v_nack(self, line: Line) -> None:
        topic, group, part = self.positional(line, 3)
        opts = dict(line.options)
        delay = num(opts.pop("delay", "0")) / 1000.0
        self.check(
            line,
            run_call(lambda: nothing(lambda: self.b().nack(topic, group, num(part), delay=delay))),
            opts,
        )

    def v_lease_extend(self, line: Line) -> None:
        topic, group, part = self.positional(line, 3)
        self.check(
            line,
            run_call(lambda: nothing(lambda: self.b().extend_lease(topic, group, num(part)))),
            dict(line.options),
        )

    def v_seek(self, line: Line) -> None:
        topic, group, part, off = self.positional(line, 4)
        o = {"earliest": mq.OFFSET_EARLIEST, "end": mq.OFFSET_END}.get(off)
        offset = o if o is not None else num(off)
        self.check(
            line,
            run_call(lambda: nothing(lambda: self.b().seek(topic, group, num(part), offset))),
            dict(line.options),
        )

    # ---- state checks ------------------------------------------------------------------------

    def v_describe(self, line: Line) -> None:
        topic, part = self.positional(line, 2)
        self.check(
            line,
            run_call(lambda: Outcome(words=[self.b().describe(topic, num(part))])),
            dict(line.options),
        )

    def v_topic_info(self, line: Line) -> None:
        (topic,) = self.positional(line, 1)

        def info() -> Outcome:
            i = self.b().topic_info(topic)
            return Outcome(
                options={
                    "partitions": str(i.partitions),
                    "capacity": str(i.capacity),
                    "max_bytes": str(i.max_bytes),
                    "ack_timeout_ms": str(round(i.ack_timeout * 1000)),
                }
            )

        self.check(line, run_call(info), dict(line.options))

    def v_partition_info(self, line: Line) -> None:
        topic, part = self.positional(line, 2)

        def info() -> Outcome:
            i = self.b().partition_info(topic, num(part))
            o = {
                k: str(getattr(i, k))
                for k in (
                    "start",
                    "end",
                    "backlog",
                    "capacity",
                    "retained_bytes",
                    "max_bytes",
                    "producer_waits",
                    "max_backlog",
                    "dropped",
                )
            }
            o["oldest_timestamp"] = (
                "-1" if i.oldest_timestamp_ns < 0 else clock_time(i.oldest_timestamp_ns)
            )
            o["oldest_age_ms"] = "-1" if i.oldest_age_ns < 0 else duration(i.oldest_age_ns)
            return Outcome(options=o)

        self.check(line, run_call(info), dict(line.options))

    def v_group_info(self, line: Line) -> None:
        topic, group, part = self.positional(line, 3)

        def info() -> Outcome:
            i = self.b().group_info(topic, group, num(part))
            o = {
                k: str(getattr(i, k))
                for k in ("committed", "next", "lag", "in_flight", "lost", "dead_lettered")
            }
            o["next_age_ms"] = "-1" if i.next_age_ns < 0 else duration(i.next_age_ns)
            o["paused_until"] = "0" if i.paused_until_ns == 0 else clock_time(i.paused_until_ns)
            return Outcome(options=o)

        self.check(line, run_call(info), dict(line.options))

    def v_topics(self, line: Line) -> None:
        self.positional(line, 0)
        self.check(line, run_call(lambda: Outcome(words=self.b().topics())), dict(line.options))

    def v_groups(self, line: Line) -> None:
        (topic,) = self.positional(line, 1)
        self.check(
            line, run_call(lambda: Outcome(words=self.b().groups(topic))), dict(line.options)
        )

    def v_calls(self, line: Line) -> None:
        name, part = self.positional(line, 2)
        if name not in self.subs:
            raise ScriptError(f"no push subscription {name}")
        rec = self.subs[name][1]
        p = num(part)
        with rec.lock:
            calls = [c for c in rec.calls if c.partition == p]
        out = Outcome(
            words=[f"{c.offset}:{c.payload}" for c in calls],
            options={
                "deliveries": ",".join(str(c.delivery_count) for c in calls),
                "keys": ",".join("-" if c.key is None else c.key.decode() for c in calls),
                "lost": ",".join(str(c.lost) for c in calls),
                "dead_letters": ",".join(c.dead_letter for c in calls),
                "outcomes": ",".join("ok" if c.ok else "fail" for c in calls),
                "delays": ",".join(c.delay for c in calls),
                "extends": ",".join(c.extend for c in calls),
            },
        )
        self.check(line, out, dict(line.options))

    def v_rebalances(self, line: Line) -> None:
        (name,) = self.positional(line, 1)
        if name not in self.rebalances:
            raise ScriptError(f"no member {name}")
        seen = list(self.rebalances[name])
        if not all(own for own, _ in seen):
            raise AssertionError(f"an on_rebalance call of {name} was given another handle")
        self.check(line, Outcome(words=[str(g) for _, g in seen]), dict(line.options))

    # ---- partitioning helpers ----------------------------------------------------------------

    def v_murmur2(self, line: Line) -> None:
        (key,) = self.positional(line, 1)
        self.check(
            line,
            run_call(lambda: Outcome(words=[str(mq.murmur2(key.encode()))])),
            dict(line.options),
        )

    def v_partition_for_key(self, line: Line) -> None:
        key, parts = self.positional(line, 2)
        self.check(
            line,
            run_call(lambda: Outcome(words=[str(mq.key_partition(key.encode(), num(parts)))])),
            dict(line.options),
        )

    def v_assign(self, line: Line) -> None:
        parts, members, member = self.positional(line, 3)
        self.check(
            line,
            run_call(
                lambda: Outcome(
                    words=[str(p) for p in mq.round_robin(num(parts), num(members), num(member))]
                )
            ),
            dict(line.options),
        )

    # ---- push --------------------------------------------------------------------------------

    def v_push(self, line: Line) -> None:
        name, topic, group = self.positional(line, 3)
        self.new_name(name)
        opts = dict(line.options)
        kw: dict[str, Any] = {}
        if "prefetch" in opts:
            kw["prefetch"] = num(opts.pop("prefetch"))
        if "partitions" in opts:
            v = opts.pop("partitions")
            kw["partitions"] = [num(p) for p in v.split(",")] if v else []
        fail = [f for f in opts.pop("fail", "").split(",") if f] if "fail" in opts else []
        nd = opts.pop("nack_delay", None)
        extend = [e for e in opts.pop("extend", "").split(",") if e] if "extend" in opts else []
        rec = PushRecorder(fail, None if nd is None else num(nd), extend)

        def open_() -> Outcome:
            sub = self.b().open_subscription(topic, group, rec, **kw)
            self.subs[name] = (sub, rec)
            return Outcome()

        self.check(line, run_call(open_), opts)

    def v_close(self, line: Line) -> None:
        (name,) = self.positional(line, 1)
        if name not in self.subs:
            raise ScriptError(f"no push subscription {name}")
        sub = self.subs[name][0]

        def close() -> Outcome:
            sub.close()
            if not sub.closed:
                raise AssertionError(f"{name} is not closed after close()")
            return Outcome()

        self.check(line, run_call(close), dict(line.options))

    def v_handler_extend_lease(self, line: Line) -> None:
        self.positional(line, 0)
        self.check(line, run_call(lambda: nothing(lambda: mq.extend_lease())), dict(line.options))

    def v_handler_nack_delay(self, line: Line) -> None:
        (ms,) = self.positional(line, 1)
        self.check(
            line,
            run_call(lambda: nothing(lambda: mq.set_nack_delay(num(ms) / 1000.0))),
            dict(line.options),
        )

    # ---- members -----------------------------------------------------------------------------

    def member(self, name: str) -> mq.Member:
        if name not in self.members:
            raise ScriptError(f"no joined member {name} (or it has left)")
        return self.members[name]

    def v_join(self, line: Line) -> None:
        name, topic, group = self.positional(line, 3)
        self.new_name(name)
        opts = dict(line.options)
        kw: dict[str, Any] = {}
        if "id" in opts:
            kw["member_id"] = opts.pop("id")
        if "session_timeout_ms" in opts:
            kw["session_timeout"] = num(opts.pop("session_timeout_ms")) / 1000.0
        if "assignor" in opts:
            a = opts.pop("assignor")
            if a not in ASSIGNORS:
                raise ScriptError(f"assignor {a}")
            kw["assignor"] = ASSIGNORS[a]
        seen: list[tuple[mq.Member, int]] = []

        def on_rebalance(m: mq.Member, generation: int) -> None:
            seen.append((m, generation))

        def join() -> Outcome:
            m = self.b().join(topic, group, on_rebalance=on_rebalance, **kw)
            self.members[name] = m
            self.rebalances[name] = _OwnView(seen, m)  # type: ignore[assignment]
            return Outcome(options={"id": m.id})

        out = run_call(join)
        if out.status != "MQ_OK":
            if seen:
                raise AssertionError("a failed join called on_rebalance")
            self.rebalances[name] = []
        self.check(line, out, opts)

    def v_leave(self, line: Line) -> None:
        (name,) = self.positional(line, 1)
        m = self.member(name)

        def leave() -> Outcome:
            m.close()
            del self.members[name]
            return Outcome()

        self.check(line, run_call(leave), dict(line.options))

    def v_assignment(self, line: Line) -> None:
        (name,) = self.positional(line, 1)
        m = self.member(name)

        def assignment() -> Outcome:
            a = m.assignment()
            return Outcome(
                options={
                    "generation": str(a.generation),
                    "partitions": ",".join(map(str, a.partitions)),
                }
            )

        self.check(line, run_call(assignment), dict(line.options))

    def v_member_ack(self, line: Line) -> None:
        name, part, off = self.positional(line, 3)
        m = self.member(name)
        self.check(
            line, run_call(lambda: nothing(lambda: m.ack(num(part), num(off)))), dict(line.options)
        )

    def v_member_nack(self, line: Line) -> None:
        name, part = self.positional(line, 2)
        m = self.member(name)
        opts = dict(line.options)
        delay = num(opts.pop("delay", "0")) / 1000.0
        self.check(line, run_call(lambda: nothing(lambda: m.nack(num(part), delay=delay))), opts)

    def v_member_extend_lease(self, line: Line) -> None:
        name, part = self.positional(line, 2)
        m = self.member(name)
        self.check(
            line, run_call(lambda: nothing(lambda: m.extend_lease(num(part)))), dict(line.options)
        )


class _OwnView:
    """The generations a member's on_rebalance saw, each with whether it was given the member's
    own handle (the object join returned)."""

    def __init__(self, seen: list[tuple[mq.Member, int]], member: mq.Member) -> None:
        self.seen, self.member = seen, member

    def __iter__(self) -> Any:
        return iter([(m is self.member, g) for m, g in list(self.seen)])


STATE_CHECKS = {
    "describe",
    "topic_info",
    "partition_info",
    "group_info",
    "topics",
    "groups",
    "calls",
    "rebalances",
}


@functools.cache
def _is_int(v: str) -> bool:
    try:
        int(v, 10)
        return True
    except ValueError:
        return False


def run_file(path: str) -> None:
    Scenario(path).run()


if __name__ == "__main__":
    failed = 0
    for p in sys.argv[1:]:
        try:
            run_file(p)
            print(f"ok   {p}")
        except AssertionError as e:
            failed += 1
            print(f"FAIL {e}")
    sys.exit(1 if failed else 0)
