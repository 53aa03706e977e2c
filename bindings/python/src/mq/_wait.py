"""Timeouts, and blocking calls that Ctrl-C can end.

Timeouts are seconds as floats: ``None`` waits forever, ``0`` does not block.

A blocking C call runs with the GIL released. Python runs signal handlers only in the main
thread, between bytecodes, so a main thread waiting in C would never see Ctrl-C. While the main
thread waits, the binding makes the signal module write to its own wakeup fd
(``signal.set_wakeup_fd``); a native thread reads it and triggers the call's cancel token, the C
call returns MQ_CANCELLED at once, and the pending ``KeyboardInterrupt`` is raised on the way
out. A signal whose handler does not raise resumes the wait for what is left of it (PEP 475).
Other threads never receive signals; their waits end on their timeout, on ``Broker.close()`` or
on a :class:`~mq.CancelToken`.
"""

from __future__ import annotations

import math
import os
import signal
import threading
import time
from typing import Any, Callable

from mq._native import ffi, lib
from mq.errors import InvalidArgument

__all__ = ["CANCELLED", "MAIN_IDENT", "call_blocking", "wait_ms"]

CANCELLED: int = lib.MQ_CANCELLED
TIMEOUT: int = lib.MQ_TIMEOUT
FULL: int = lib.MQ_FULL
MAX_WAIT_MS = 1 << 40
MAIN_IDENT = threading.main_thread().ident


def wait_ms(timeout: float | None) -> int:
    """Seconds (``None`` = forever, ``0`` = don't block) as mq's milliseconds, rounded up so a
    positive timeout never becomes "don't block"."""
    if timeout is None:
        return -1
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        raise TypeError(
            f"timeout must be a number of seconds or None, not {type(timeout).__name__}"
        )
    if timeout != timeout:
        raise InvalidArgument("timeout is NaN")
    if timeout < 0:
        raise InvalidArgument(
            f"timeout must be >= 0 seconds (or None to wait forever), not {timeout}"
        )
    if timeout == math.inf:
        return -1
    ms = math.ceil(timeout * 1000)
    if ms > MAX_WAIT_MS:
        raise InvalidArgument(f"timeout {timeout} s is above mq's limit of 2**40 ms")
    return ms


class _SignalWatch:
    """The wakeup pipe and the token of the main thread (created once, never freed: the
    watcher thread may still hold it)."""

    def __init__(self) -> None:
        self.token: Any = None
        self.wfd = -1
        self.ok = False
        self._lock = threading.Lock()

    def start(self) -> bool:
        with self._lock:
            if self.token is not None:
                return self.ok
            out = ffi.new("mq_cancel **")
            if lib.mq_cancel_new(out) != 0:
                raise MemoryError("mq: no memory for a cancel token")
            self.token = out[0]
            r, w = os.pipe()
            os.set_blocking(w, False)
            self.ok = lib.mqpy_sigwatch_start(r) == 0
            self.wfd = w
            return self.ok


_watch = _SignalWatch()


def _signals_run() -> None:
    """Calling a Python function runs pending signal handlers (the eval breaker is checked on
    entry): a KeyboardInterrupt raises here."""


def call_blocking(
    fn: Callable[..., int],
    args: tuple[Any, ...],
    wait: int,
    token: Any,
    tail: tuple[Any, ...],
    *,
    user_token: bool = False,
    pretry: bool = False,
    retry: bool = True,
    again: Callable[[], bool] | None = None,
) -> int:
    """Runs ``fn(*args, wait, token, *tail)`` and returns its status.

    In the main thread, with a wait, Ctrl-C triggers the token (``token`` None: the main
    thread's own). ``pretry``: first try without waiting (when that is harmless), which spares
    the signal set-up when the call need not wait. ``retry``: after a signal whose handler did
    not raise, wait again (not for batches, which may have partly succeeded). ``again``: for a
    call's own token that others may trigger too (mq._wake.Wake.again, with ``user_token``),
    what decides after MQ_CANCELLED in the main thread whether to wait again (it resets the
    token) or return (or raises); elsewhere the caller asks it."""
    if wait == 0 or threading.get_ident() != MAIN_IDENT or not (_watch.ok or _watch.start()):
        return fn(*args, wait, token if token is not None else ffi.NULL, *tail)
    if pretry:
        status = fn(*args, 0, ffi.NULL, *tail)
        if status != TIMEOUT and status != FULL:
            return status
    tok = token if token is not None else _watch.token
    deadline = None if wait < 0 else time.monotonic() + wait / 1000.0
    while True:
        try:
            old = signal.set_wakeup_fd(_watch.wfd, warn_on_full_buffer=False)
        except ValueError:  # not the main interpreter: no Ctrl-C support, wait anyway
            return fn(*args, wait, tok, *tail)
        lib.mqpy_sigwatch_forward(old)
        lib.mqpy_arm(tok)
        try:
            _signals_run()
            status = fn(*args, wait, tok, *tail)
        finally:
            lib.mqpy_arm(ffi.NULL)
            lib.mqpy_sigwatch_forward(-1)
            signal.set_wakeup_fd(old)
            if not user_token:
                lib.mq_cancel_reset(tok)
        if status != CANCELLED:
            return status
        _signals_run()
        if again is not None:
            if not again():
                return status
        elif user_token or not retry:
            return status
        # The handler did not raise: go on waiting for what is left.
        if deadline is not None:
            wait = max(0, math.ceil((deadline - time.monotonic()) * 1000))
