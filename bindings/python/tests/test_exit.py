"""Interpreter exit with live objects neither hangs nor crashes (each case in a child)."""

from __future__ import annotations

import os
import subprocess
import textwrap

import pytest
from conftest import python_child

CASES = {
    "live push subscription, member and broker, handlers busy": """
        import threading, mq
        b = mq.Broker()
        b.create_topic("t", partitions=2, capacity=64)
        b.create_topic("echo", capacity=1_000_000, retention=mq.Retention.BOUNDED)
        def handler(m):
            b.publish("echo", m.value, timeout=0)
        sub = b.open_subscription("t", "push", handler)
        member = b.join("t", "live-group")
        for i in range(50):
            b.publish("t", b"work", timeout=None)
        """,
    "daemon thread blocked in poll and publish with no timeout": """
        import threading, mq
        from mq._native import lib
        b = mq.Broker()
        b.create_topic("t", capacity=1)
        b.subscribe("t", "g")
        b.publish("t", b"fill")
        def poll_twice():
            b.poll("t", "g", 0, timeout=None)  # takes "fill" and never acks it
            b.poll("t", "g", 0, timeout=None)  # nothing more comes
        threading.Thread(target=poll_twice, daemon=True).start()
        threading.Thread(target=lambda: b.publish("t", b"x", timeout=None), daemon=True).start()
        while lib.mqpy_blocked_calls() < 2:
            pass
        """,
    "objects only reachable through cycles": """
        import mq, gc
        class Holder: pass
        h = Holder()
        h.b = mq.Broker(); h.b.create_topic("t"); h.me = h
        h.sub = h.b.open_subscription("t", "g", lambda m: None)
        h.m = h.b.join("t", "live")
        del h
        """,
    "a stream whose loop is gone": """
        import asyncio, mq
        b = mq.Broker()
        b.create_topic("t")
        async def main():
            s = b.stream("t", "g")
            s.__aiter__()
            b.publish("t", b"waits to be taken")
            while b.group_info("t", "g", 0).next == 0:
                await asyncio.sleep(0.001)
        asyncio.run(main())
        """,
    "a deleted topic's subscription, member, stream and messages left open": """
        import asyncio, mq
        b = mq.Broker()
        b.create_topic("t", partitions=2)
        b.subscribe("t", "g")
        b.publish("t", b"kept")
        kept = b.poll("t", "g", 0, timeout=0) + b.poll("t", "g", 1, timeout=0)
        sub = b.open_subscription("t", "push", lambda m: None)
        member = b.join("t", "live")
        async def main():
            s = b.stream("t", "stream")
            s.__aiter__()
            b.delete_topic("t")
            assert [m async for m in s] == []
        asyncio.run(main())
        b.create_topic("t")
        assert [m.value for m in kept] == [b"kept"]
        """,
    "asynchronous calls pending in a loop that is gone": """
        import asyncio, gc, mq
        from mq._asyncio import pending_calls
        b = mq.Broker()
        b.create_topic("t", partitions=4, capacity=1)
        b.subscribe("t", "g")
        b.publish("t", b"fill", key=b"k")
        full = mq.key_partition(b"k", 4)
        loop = asyncio.new_event_loop()
        tasks = [loop.create_task(b.poll_async("t", "g", p)) for p in range(4) if p != full]
        tasks.append(loop.create_task(b.publish_async("t", b"x", key=b"k")))
        loop.run_until_complete(asyncio.sleep(0))  # one turn: every call is pending in mq
        assert pending_calls() == 4, pending_calls()
        loop.close()  # its tasks never finish; the exit's close completes the calls
        del tasks, loop
        gc.collect()
        """,
    "asynchronous calls pending in a daemon thread's running loop": """
        import asyncio, threading, mq
        from mq._asyncio import pending_calls
        b = mq.Broker()
        b.create_topic("t", partitions=8)
        b.subscribe("t", "g")
        loop = asyncio.new_event_loop()
        threading.Thread(target=loop.run_forever, daemon=True).start()
        futs = [asyncio.run_coroutine_threadsafe(b.poll_async("t", "g", p), loop)
                for p in range(8)]
        while pending_calls() < 8:
            pass
        """,
    "an unfinished coroutine dropped with its broker": """
        import asyncio, gc, mq
        async def main():
            b = mq.Broker()
            b.create_topic("t")
            b.subscribe("t", "g")
            coro = b.poll_async("t", "g", 0)
            task = asyncio.ensure_future(coro)
            await asyncio.sleep(0)
            del b, coro
            gc.collect()
            return task
        loop = asyncio.new_event_loop()
        task = loop.run_until_complete(main())
        gc.collect()
        """,
    "a handler still running at exit": """
        import threading, mq
        b = mq.Broker()
        b.create_topic("t")
        started = threading.Event()
        def handler(m):
            started.set()
            x = 0
            for i in range(2_000_000):
                x += i
        sub = b.open_subscription("t", "g", handler)
        b.publish("t", b"x")
        started.wait(10)
        """,
}


def _script(case: str) -> str:
    return textwrap.dedent(CASES[case]) + '\nprint("end of main", flush=True)\n'


@pytest.mark.parametrize("case", list(CASES))
def test_exit_is_clean(case: str) -> None:
    child = python_child(_script(case))
    out, err = child.communicate(timeout=30)
    assert child.returncode == 0, (child.returncode, err)
    assert out.strip().endswith("end of main")
    assert "Traceback" not in err, err


@pytest.mark.skipif(
    not os.environ.get("MQ_OTHER_PYTHON"),
    reason="MQ_OTHER_PYTHON (another CPython with mq installed) is not set; "
    "test.sh sets it when it finds a newer CPython",
)
@pytest.mark.parametrize("case", list(CASES))
def test_exit_is_clean_on_another_python(case: str) -> None:
    child = python_child(_script(case), python=os.environ["MQ_OTHER_PYTHON"])
    out, err = child.communicate(timeout=30)
    assert child.returncode == 0, (child.returncode, err)
    assert out.strip().endswith("end of main")


def test_the_exit_hook_closes_subscriptions_members_and_brokers() -> None:
    # atexit runs hooks last-registered first: this one, registered before mq is imported, runs
    # after mq's and sees what it did.
    child = python_child("""
        import atexit
        state = {}
        def after_mq():
            print("closed:", state["sub"].closed, state["member"].closed, state["broker"].closed)
        atexit.register(after_mq)
        import mq
        b = mq.Broker()
        b.create_topic("t", partitions=2)
        state.update(broker=b, sub=b.open_subscription("t", "g", lambda m: None, partitions=[0]),
                     member=b.join("t", "h"))
    """)
    out, err = child.communicate(timeout=30)
    assert child.returncode == 0, err
    assert out.strip() == "closed: True True True"


NON_DAEMON_WAITERS = """
    import os, threading, mq
    from mq._native import lib
    b = mq.Broker()
    b.create_topic("t", capacity=1)
    b.create_topic("m")
    b.subscribe("t", "g")
    b.publish("t", b"fill")
    b.poll("t", "g", 0, timeout=0)  # in flight, never acked: the partition stays full
    member = b.join("m", "live")
    member.assignment()
    def wait(what, call):
        try:
            call()
        except mq.Closed:
            os.write(1, f"{what} woken with Closed\\n".encode())  # one write: lines never mix
    waits = {
        "poll": lambda: b.poll("t", "g", 0, timeout=None),
        "publish": lambda: b.publish("t", b"x", timeout=None),
        "member poll": lambda: member.poll(timeout=None),
    }
    for what, call in waits.items():
        threading.Thread(target=wait, args=(what, call)).start()
    # One more that lets Closed go unhandled: the thread ends, its traceback is not printed.
    threading.Thread(target=lambda: b.poll("t", "g", 0, timeout=None)).start()
    while lib.mqpy_blocked_calls() < 4:
        pass
    print("end of main", flush=True)
"""


def test_non_daemon_threads_blocked_without_timeout_do_not_hold_exit() -> None:
    # Python joins non-daemon threads before atexit hooks run: mq's close must come earlier
    # (threading._register_atexit) or this child never exits.
    child = python_child(NON_DAEMON_WAITERS)
    try:
        out, err = child.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        child.kill()
        out, err = child.communicate()
        raise AssertionError(f"the child did not exit within 20 s\n{out}{err}") from None
    assert child.returncode == 0, (child.returncode, err)
    lines = out.splitlines()
    assert lines[0] == "end of main", out
    assert sorted(lines[1:]) == [
        "member poll woken with Closed",
        "poll woken with Closed",
        "publish woken with Closed",
    ], out
    assert "Traceback" not in err, err
