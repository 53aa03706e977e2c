"""The reference trace and the push step of the specification, through the Python binding.

Prints the same text as the C demo's trace section (examples/demo.c) and checks every result
against the specification as it goes; exits 1 if anything differs. Run:
``python examples/python/trace.py`` (with the ``mq`` package installed).
"""

from __future__ import annotations

import sys
import threading
import time

import mq

CALL_W = 46
ORDERS = "orders"
failures: list[str] = []


def expect(what: str, got: str, want: str) -> None:
    if got != want:
        failures.append(what)
        print(f"     MISMATCH {what}\n       got:      {got}\n       expected: {want}")


def row(b: mq.Broker, n: int, call: str, result: str, want_result: str, want_state: str) -> None:
    state = b.describe(ORDERS, 1)
    print(f"  {n}  {call:<{CALL_W}} {result}")
    print(f"       partition 1 after: {state}")
    expect(f"row {n} result", result, want_result)
    expect(f"row {n} partition 1", state, want_state)


def status_text(e: mq.MQError) -> str:
    return f"{e.status_name} ({e.message})"


def poll_row(b: mq.Broker, group: str, max_: int) -> str:
    try:
        msgs = b.poll(ORDERS, group, 1, max=max_, timeout=0)
    except mq.MQError as e:
        return f"poll: {status_text(e)}"
    res = ", ".join(f"{m.offset}:{m.value.decode()}" for m in msgs)
    if msgs and msgs[0].delivery_count > 1:
        res += f" (lease ran out, rewound to {msgs[0].offset})"
    return res


def ack_into(b: mq.Broker, group: str, offset: int, res: str) -> str:
    try:
        b.ack(ORDERS, group, 1, offset)
    except mq.MQError as e:
        res += f"; ack {offset}: {status_text(e)}"
    return res


def run_trace(b: mq.Broker, clock: mq.ManualClock) -> None:
    b.create_topic(ORDERS, partitions=2, capacity=3, ack_timeout=30.0)
    b.subscribe(ORDERS, "billing")
    b.subscribe(ORDERS, "email")
    pa, pb = mq.key_partition(b"user-a", 2), mq.key_partition(b"user-b", 2)
    print("Reference trace: topic orders, 2 partitions, capacity 3, ack timeout 30 s;")
    print(
        f"groups billing and email subscribed first; user-a -> partition {pa}, user-b -> "
        f"partition {pb}.\nRows trace partition 1 (committed/next per group).\n"
    )
    expect("user-a/user-b partitions", f"{pa}/{pb}", "1/0")
    print(f"  #  {'call':<{CALL_W}} result")
    print(f"  -  {'----':<{CALL_W}} ------")

    # 1: three messages for user-a and one for user-b, each fitting without a wait
    try:
        placed = [
            b.publish(ORDERS, v, key=k, timeout=0)
            for k, v in [
                (b"user-a", b"o-1"),
                (b"user-a", b"o-2"),
                (b"user-a", b"o-3"),
                (b"user-b", b"o-4"),
            ]
        ]
        (p0, o0), (p1, o1), (p2, o2), (p3, o3) = placed
        if p0 == p1 == p2:
            res = f"offsets {o0}, {o1}, {o2} on p{p0}; {o3} on p{p3}"
        else:
            res = f"o-1..o-3 on partitions {p0}, {p1}, {p2}"
    except mq.MQError as e:
        res = f"publish: {status_text(e)}"
    row(
        b,
        1,
        "publish o-1, o-2, o-3 (user-a); o-4 (user-b)",
        res,
        "offsets 0, 1, 2 on p1; 0 on p0",
        "log 0..2, backlog 3/3; billing 0/0; email 0/0",
    )

    # 2: the partition is at capacity and the publish may not wait
    try:
        res = f"offset {b.publish(ORDERS, b'o-5', key=b'user-a', timeout=0)[1]}"
    except mq.Full:
        res = "full"
    except mq.MQError as e:
        res = status_text(e)
    row(
        b,
        2,
        "publish o-5 (user-a), wait 0",
        res,
        "full",
        "log 0..2, backlog 3/3; billing 0/0; email 0/0",
    )

    res = ack_into(b, "billing", 0, poll_row(b, "billing", 2))
    row(
        b,
        3,
        "billing polls max 2, acks 0",
        res,
        "0:o-1, 1:o-2",
        "log 0..2, backlog 3/3; billing 1/2; email 0/0",
    )

    # 4: email's ack frees offset 0, which billing has already acked
    res = ack_into(b, "email", 2, poll_row(b, "email", 10))
    row(
        b,
        4,
        "email polls max 10, acks 2",
        res,
        "0:o-1, 1:o-2, 2:o-3",
        "log 1..2, backlog 2/3; billing 1/2; email 3/3",
    )

    try:
        p, o = b.publish(ORDERS, b"o-5", key=b"user-a", timeout=0)
        res = f"offset {o}" if p == 1 else f"offset {o} on p{p}"
    except mq.MQError as e:
        res = status_text(e)
    row(b, 5, "publish o-5 again", res, "offset 3", "log 1..3, backlog 3/3; billing 1/2; email 3/3")

    # 6: billing's lease (30 s) from row 3 runs out
    clock.advance(31.0)
    row(
        b,
        6,
        "clock +31 s; billing polls max 10",
        poll_row(b, "billing", 10),
        "1:o-2, 2:o-3, 3:o-5 (lease ran out, rewound to 1)",
        "log 1..3, backlog 3/3; billing 1/4; email 3/3",
    )

    try:
        b.ack(ORDERS, "billing", 1, 3)
        res = "ok"
    except mq.MQError as e:
        res = status_text(e)
    row(b, 7, "billing acks 3", res, "ok", "log 3..3, backlog 1/3; billing 4/4; email 3/3")

    # 8: never delivered, so rejected with a message naming the in-flight range
    try:
        b.ack(ORDERS, "billing", 1, 7)
        res = "ok"
    except mq.NotInFlight as e:
        res = f"rejected: {e.message}"
    except mq.MQError as e:
        res = status_text(e)
    row(
        b,
        8,
        "billing acks 7",
        res,
        "rejected: offset 7 is not in flight for billing (nothing is)",
        "log 3..3, backlog 1/3; billing 4/4; email 3/3",
    )


def run_push(b: mq.Broker) -> None:
    print(
        "\nPush: topic payments, 1 partition, capacity 10; group ledger's handler fails the "
        "first time it sees pay-2.\n"
    )
    b.create_topic("payments", partitions=1, capacity=10)
    calls: list[tuple[str, int, bool]] = []
    cond = threading.Condition()

    def handler(m: mq.Message) -> bool:
        with cond:
            value = m.value.decode()
            ok = not (value == "pay-2" and not any(c[0] == "pay-2" for c in calls))
            calls.append((value, m.offset, ok))
            cond.notify_all()
        return ok

    with b.open_subscription("payments", "ledger", handler):
        for p in (b"pay-1", b"pay-2", b"pay-3"):
            b.publish("payments", p, timeout=None)
        # Four handler calls are expected (pay-2 twice); then the last ack must land.
        deadline = time.monotonic() + 5.0
        with cond:
            cond.wait_for(lambda: len(calls) >= 4, timeout=5.0)
        while b.group_info("payments", "ledger", 0).committed != 3 and time.monotonic() < deadline:
            time.sleep(0.001)  # the interval between looks at observable state
    want = [("pay-1", 0, True), ("pay-2", 1, False), ("pay-2", 1, True), ("pay-3", 2, True)]
    for i, (value, offset, ok) in enumerate(calls):
        outcome = "ok, acked" if ok else "failed, nacked"
        print(f"  handler call {i + 1}: {value} (offset {offset}) -> {outcome}")
    expect("handler calls", repr(calls), repr(want))
    state = b.describe("payments", 0)
    print(f"  after: {state}")
    expect("push step final state", state, "log empty, next offset 3, backlog 0/10; ledger 3/3")


def main() -> int:
    print(
        f"mq {mq.LIBRARY_VERSION}: the reference scenarios of the specification, checked as "
        "they run.\n"
    )
    clock = mq.ManualClock()
    with mq.Broker(clock=clock) as b:
        run_trace(b, clock)
        run_push(b)
    if failures:
        print(f"\n{len(failures)} check(s) differ from the specification", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
