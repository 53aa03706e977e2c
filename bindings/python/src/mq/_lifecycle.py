"""Interpreter exit: close what is still open, from an ``atexit`` hook, before finalization.

Library threads (push loops, callbacks on other threads) must never call into a finalizing
interpreter, and a ``__del__`` must never wait. So open subscriptions and members are held
here (strongly: a running subscription is like a running thread, garbage collection does not
stop it) and closed by the hook, brokers after them; then the native trampolines are told not
to enter Python any more.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import threading
import weakref
from typing import Any, Callable

from mq._native import lib
from mq.errors import Closed

_lock = threading.Lock()
_brokers: weakref.WeakSet[Any] = weakref.WeakSet()
_open: set[Any] = set()  # subscriptions and members not yet closed


def register_broker(b: Any) -> None:
    with _lock:
        _brokers.add(b)


def hold(obj: Any) -> None:
    with _lock:
        _open.add(obj)


def release(obj: Any) -> None:
    with _lock:
        _open.discard(obj)


def close_all() -> None:
    """Closes every open subscription and member, then every broker (also usable by tests)."""
    with _lock:
        objs = list(_open)
        brokers = list(_brokers)
    for o in objs:
        try:
            o._close_quietly()
        except Exception:  # exit must go on whatever one close says
            pass
    for b in brokers:
        with contextlib.suppress(Exception):
            b.close()


def _quiet_closed_at_exit(args: Any, previous: Callable[[Any], object]) -> None:
    if isinstance(args.exc_value, Closed):
        # A daemon thread woken by the hook's broker close below, in a finalizing interpreter:
        # Python stops daemon threads silently at exit, and so does mq.
        return
    previous(args)


def _at_exit() -> None:
    # Non-daemon threads were joined before atexit hooks run: what still waits is a daemon's.
    threading.excepthook = functools.partial(_quiet_closed_at_exit, previous=threading.excepthook)
    close_all()
    lib.mqpy_set_shutdown()


atexit.register(_at_exit)
