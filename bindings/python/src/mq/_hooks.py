"""Where exceptions raised by user callbacks (push handlers, assignors, rebalance callbacks) go:
never into the library, always to the error hook."""

from __future__ import annotations

import contextlib
import logging
import sys
from typing import Callable

__all__ = ["ErrorHook", "report", "set_error_hook"]

ErrorHook = Callable[[BaseException, str], None]
"""Receives the exception a callback raised and a sentence saying where."""

_log = logging.getLogger("mq")


def _log_hook(exc: BaseException, where: str) -> None:
    _log.error("%s", where, exc_info=(type(exc), exc, exc.__traceback__))


_hook: ErrorHook = _log_hook


def set_error_hook(hook: ErrorHook | None) -> ErrorHook:
    """Sets where exceptions raised by handlers, assignors and rebalance callbacks go (they never
    reach the library: a raising handler nacks). ``None`` restores the default, which logs them
    to the ``mq`` logger. Returns the previous hook."""
    global _hook
    old = _hook
    _hook = hook if hook is not None else _log_hook
    return old


def report(exc: BaseException, where: str) -> None:
    try:
        _hook(exc, where)
    except BaseException as second:  # the hook itself failed: say so, never raise into C
        with contextlib.suppress(BaseException):
            print(
                f"mq: the error hook raised {second!r} while reporting: {where}: {exc!r}",
                file=sys.stderr,
            )
