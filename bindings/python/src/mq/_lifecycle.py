"""Interpreter exit: close what is still open before the interpreter waits for its threads.

When the main thread finishes, Python first runs the hooks registered with
``threading._register_atexit`` (concurrent.futures uses it), then joins every non-daemon thread,
then runs ``atexit`` hooks and finalizes. mq closes every open subscription, member and broker
in the first step: a non-daemon thread blocked in ``poll(timeout=None)`` then wakes with
:class:`mq.Closed` and ends instead of holding exit forever. The same close runs again from an
``atexit`` hook (for brokers created while the threads were joined, and on an interpreter
without the threading hook); after it the native trampolines are told not to enter Python any
more, since library threads must never call into a finalizing interpreter and a ``__del__``
must never wait. Open subscriptions and members are held here (strongly: a running
subscription is like a running thread, garbage collection does not stop it).
"""

from __future__ import annotations

import atexit
import concurrent.futures.thread  # noqa: F401 (registers its exit hook before mq's below)
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
        # A thread woken by the exit's close below: the program is ending, and that close is
        # how mq ends its waits (as Python stops daemon threads silently, so does mq).
        return
    previous(args)


_exiting = False


def _close_at_exit() -> None:
    global _exiting
    if not _exiting:
        _exiting = True
        threading.excepthook = functools.partial(
            _quiet_closed_at_exit, previous=threading.excepthook
        )
    close_all()


def _at_exit() -> None:
    _close_at_exit()
    lib.mqpy_set_shutdown()


def _register() -> None:
    # Hooks run last-registered first: concurrent.futures (imported above) registered its own,
    # which joins its pools' workers, before this one; mq's close runs first, so a worker
    # blocked in mq (the asyncio pool's) is woken before it is joined.
    register = getattr(threading, "_register_atexit", None)
    if register is not None:
        try:
            register(_close_at_exit)
        except RuntimeError:  # imported while the interpreter already shuts down
            pass
    atexit.register(_at_exit)


_register()
