"""Closing a handle wakes its blocking calls (members, publishers, cursors).

A call that may wait runs under a cancel token of its own (:class:`Wake`), which the handle keeps
in its set of waiting calls while the call runs; ``close()`` triggers every token of that set,
the C call returns MQ_CANCELLED at once, and the call raises :class:`mq.Closed`. A caller's
:class:`mq.CancelToken`, when the handle links it, triggers the call's token too (the C call
takes one token): the caller's token is never triggered by the close.

The handle registers a Wake under its own lock, in the same step that checks it is open (or
triggers it if the close came first), so that a close never misses a call about to wait."""

from __future__ import annotations

from typing import Any, Callable

from mq._handles import CancelToken, new_token
from mq._native import lib
from mq.errors import Closed

__all__ = ["Wake"]


class Wake:
    """One blocking call's own cancel token. ``user``: the caller's token, linked (its
    :meth:`mq.CancelToken.cancel` triggers this one) until :meth:`unlink`; ``closing``: whether
    the handle's close has begun; ``closed_text``: the :class:`mq.Closed` message of a call
    that close woke."""

    __slots__ = ("_closing", "_text", "_user", "ptr")

    def __init__(
        self, user: CancelToken | None, closing: Callable[[], bool], closed_text: str
    ) -> None:
        self.ptr: Any = new_token()
        self._user = user
        self._closing = closing
        self._text = closed_text
        if user is not None:
            user._links.add(self.ptr)
            if user.cancelled:  # cancelled before the link: its cancel did not see it
                lib.mq_cancel_trigger(self.ptr)

    def unlink(self) -> None:
        """The call is over: the caller's token no longer triggers this one."""
        if self._user is not None:
            self._user._links.discard(self.ptr)

    def again(self) -> bool:
        """After the call returned MQ_CANCELLED: raises :class:`mq.Closed` if the handle's
        close woke it; False if the caller's token did (the call ends as cancelled, the
        caller's cancel winning over a close at the same time); True, the token reset, when
        neither did: a signal whose handler did not raise (call_blocking in the main thread),
        after which the call waits again."""
        if self._user is not None and self._user.cancelled:
            return False
        if self._closing():
            raise Closed(self._text)
        lib.mq_cancel_reset(self.ptr)
        return True

    def closed_error(self) -> Closed | None:
        """For a call that cannot wait again (a batch): the :class:`mq.Closed` to raise
        instead of :class:`mq.Cancelled` if the handle's close woke it, else None."""
        if self._user is not None and self._user.cancelled:
            return None
        return Closed(self._text) if self._closing() else None
