//! The machinery every future of [`future`](super) shares: a call's state shared with its
//! `done` ([`CallData`], the slot, `done` itself), one call at a time with its blocking form
//! for a broker without asynchronous calls ([`Op`]), the copying poll's driver ([`CopyPoll`],
//! [`poll_copies`]) of the group's and the member's polls, and the one call of a publish or a
//! batch publish ([`BrokerCall`]).
use std::cell::UnsafeCell;
use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{ready, Context, Poll, Waker};

use mq_sys as sys;

use crate::broker::Raw;
use crate::cancel::CancelToken;
use crate::copy::Copies;
use crate::error::{check, Error, Result, Status};
use crate::wait::Wait;

/// What a call's state does with an outcome nobody will read, and around a blocking form.
pub(super) trait CallData: Default + Send + 'static {
    /// The call ended with `status` (its outputs in `self`) after its future was dropped.
    fn unclaimed(&mut self, _status: sys::mq_status) {}
    /// The call goes to its blocking form on a thread of its own (a broker without
    /// asynchronous calls), cancelled by `token`: on the future's thread, before that thread
    /// starts. What it takes here it holds until [`ended`](Self::ended).
    fn blocking(&mut self, _token: &CancelToken) {}
    /// The call has ended: in `done` (after [`unclaimed`](Self::unclaimed) when the future is
    /// gone), before anyone sees the outcome and before the task is woken.
    fn ended(&mut self) {}
}

#[derive(Default)]
struct Slot {
    /// The ended call's status, with the library's detail (read in `done`, on the thread where
    /// it is set).
    ended: Option<(sys::mq_status, String)>,
    waker: Option<Waker>,
    /// The future was dropped while the call was pending: `done` disposes of the outcome.
    abandoned: bool,
}

/// What a call's future and its `done` share (`done`'s `user` is a counted reference to it).
struct Shared<D> {
    slot: Mutex<Slot>,
    /// What the library reads and writes while the call is pending.
    data: UnsafeCell<D>,
    /// The call's token, freed after `done` (when the last reference goes).
    token: CancelToken,
}

// SAFETY: `data` is used by one side at a time: the future's before the call starts and after
// it has ended (seen under `slot`'s lock, which `done` takes after the library wrote the
// outputs), the library's while it is pending, and `done`'s only once the future is gone
// (`abandoned`, set under the lock). D itself is Send.
unsafe impl<D: Send> Send for Shared<D> {}
unsafe impl<D: Send> Sync for Shared<D> {}

fn lock(m: &Mutex<Slot>) -> MutexGuard<'_, Slot> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The `mq_done_fn` of every call: records the status, wakes the task. Runs on the broker's
/// completer thread, under no lock of the library; never unwinds into C.
unsafe extern "C" fn done<D: CallData>(user: *mut c_void, status: sys::mq_status) {
    let _ = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: `user` is the reference `Op::start` made with `Arc::into_raw` for this call,
        // and the library calls `done` once per pending call.
        let shared = unsafe { Arc::from_raw(user.cast_const().cast::<Shared<D>>()) };
        let detail = if status == sys::mq_status::MQ_OK {
            String::new()
        } else {
            crate::error::last_detail()
        };
        let waker = {
            let mut s = lock(&shared.slot);
            // SAFETY: the call has ended; until `ended` is set (under this lock) the future
            // does not touch the data, and once it is `abandoned` it never will.
            let data = unsafe { &mut *shared.data.get() };
            if s.abandoned {
                data.unclaimed(status);
            }
            data.ended();
            s.ended = Some((status, detail));
            s.waker.take()
        };
        if let Some(w) = waker {
            w.wake();
        }
        // `shared` goes here; the data with it if the future is gone.
    }));
}

/// One asynchronous call at a time (a poll may make a second one after growing its buffer),
/// with its shared state and cancel token.
pub(super) struct Op<D: CallData> {
    shared: Arc<Shared<D>>,
    pending: bool,
}

impl<D: CallData> Op<D> {
    pub(super) fn new(data: D, token: CancelToken) -> Op<D> {
        Op {
            shared: Arc::new(Shared {
                slot: Mutex::new(Slot::default()),
                data: UnsafeCell::new(data),
                token,
            }),
            pending: false,
        }
    }

    /// The call's data; no call is pending.
    pub(super) fn data(&mut self) -> &mut D {
        assert!(!self.pending, "the data of a pending call");
        // SAFETY: no call is pending and the future owns `self` exclusively: `done` of an
        // earlier call has set `ended` (seen under the lock) and no longer touches the data.
        unsafe { &mut *self.shared.data.get() }
    }

    /// The call's cancel token.
    pub(super) fn token(&self) -> &CancelToken {
        &self.shared.token
    }

    /// Starts a call: `call(data, cancel, done, user)` makes it. Ready when it ended without
    /// waiting (the library's detail read here), else pending until `done`.
    ///
    /// A broker without asynchronous calls (the Kafka backend: `MQ_ERR_UNSUPPORTED`) gets
    /// `blocking(data, cancel)`, the blocking form, on a thread of its own that then runs
    /// `done` itself.
    fn start(
        &mut self,
        cx: &Context<'_>,
        call: impl FnOnce(*mut D, *mut sys::mq_cancel, sys::mq_done_fn, *mut c_void) -> sys::mq_status,
        blocking: impl FnOnce(*mut D, *mut sys::mq_cancel) -> sys::mq_status + Send + 'static,
    ) -> Poll<Result<()>> {
        debug_assert!(!self.pending);
        *lock(&self.shared.slot) = Slot::default();
        let user = Arc::into_raw(self.shared.clone())
            .cast_mut()
            .cast::<c_void>();
        let st = if force_blocking() {
            sys::mq_status::MQ_ERR_UNSUPPORTED
        } else {
            call(
                self.shared.data.get(),
                self.shared.token.as_ptr(),
                Some(done::<D>),
                user,
            )
        };
        if st == sys::mq_status::MQ_PENDING {
            // `done` may have run already: poll_ended sees it under the lock.
            self.pending = true;
            return self.poll_ended(cx);
        }
        // Ended without waiting: `done` will not run, and the reference is ours again.
        let r = check(st);
        // SAFETY: the reference made above, not handed to anyone.
        drop(unsafe { Arc::from_raw(user.cast_const().cast::<Shared<D>>()) });
        if st == sys::mq_status::MQ_ERR_UNSUPPORTED {
            // SAFETY: no call is pending: the data is ours.
            unsafe { (*self.shared.data.get()).blocking(&self.shared.token) };
            return self.start_blocking(cx, blocking);
        }
        Poll::Ready(r)
    }

    /// The blocking form on a thread of its own, for a broker without asynchronous calls.
    fn start_blocking(
        &mut self,
        cx: &Context<'_>,
        blocking: impl FnOnce(*mut D, *mut sys::mq_cancel) -> sys::mq_status + Send + 'static,
    ) -> Poll<Result<()>> {
        let shared = self.shared.clone();
        let spawned = std::thread::Builder::new()
            .name("mq-blocking-call".into())
            .spawn(move || {
                let st = blocking(shared.data.get(), shared.token.as_ptr());
                let user = Arc::into_raw(shared).cast_mut().cast::<c_void>();
                // SAFETY: a reference made for it, as for the library's call of `done`; the
                // blocking call's detail is this thread's, where `done` reads it.
                unsafe { done::<D>(user, st) };
            });
        match spawned {
            Ok(_) => {
                self.pending = true;
                self.poll_ended(cx)
            }
            Err(e) => {
                // SAFETY: no thread took the data.
                unsafe { (*self.shared.data.get()).ended() };
                Poll::Ready(Err(Error::NoMemory(format!(
                    "cannot start a thread for a blocking call (this broker has no asynchronous \
                 calls): {e}"
                ))))
            }
        }
    }

    /// The pending call's status once `done` has run; else registers the waker.
    fn poll_ended(&mut self, cx: &Context<'_>) -> Poll<Result<()>> {
        let mut s = lock(&self.shared.slot);
        match s.ended.take() {
            Some((st, detail)) => {
                drop(s);
                self.pending = false;
                Poll::Ready(if st == sys::mq_status::MQ_OK {
                    Ok(())
                } else {
                    Err(Error::new(Status(st.0 as i32), detail))
                })
            }
            None => {
                if !s.waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                    s.waker = Some(cx.waker().clone());
                }
                Poll::Pending
            }
        }
    }
}

impl<D: CallData> Drop for Op<D> {
    fn drop(&mut self) {
        if !self.pending {
            return;
        }
        let mut s = lock(&self.shared.slot);
        match s.ended.take() {
            Some((st, _)) => {
                drop(s);
                // SAFETY: the call has ended (`done` no longer touches the data).
                unsafe { (*self.shared.data.get()).unclaimed(st) };
            }
            None => {
                s.waker = None;
                s.abandoned = true;
                drop(s);
                // The library ends the call soon (Cancelled, or what it completed with first);
                // the data goes when `done` drops its reference.
                self.shared.token.cancel();
            }
        }
    }
}

// Whether tests make this thread's calls take the Kafka backend's way (its blocking form on a
// thread of its own).
#[cfg(test)]
thread_local! {
    pub(super) static FORCE_BLOCKING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

#[cfg(test)]
fn force_blocking() -> bool {
    FORCE_BLOCKING.with(|f| f.get())
}

#[cfg(not(test))]
#[inline(always)]
fn force_blocking() -> bool {
    false
}

fn wait_ms(w: Wait) -> i64 {
    w.millis()
}

// ---- the copying poll (a group's or a member's) ----------------------------------------------

/// The data of a copying poll (a group's or a member's): the buffer and the call's outputs.
pub(super) trait CopyPoll: CallData {
    /// What the first call acks before it polls.
    type Ack: Copy + Send + 'static;

    /// The copying poll (after acking `ack`) into `d`'s buffer: its asynchronous form with
    /// `done` and `user`, else its blocking form. Records the capacity it passes.
    ///
    /// # Safety
    /// `d` is valid and not otherwise used until the call has ended (for the asynchronous
    /// form, until `done`); what it names (broker, member) is alive until then.
    unsafe fn call(
        d: *mut Self,
        ack: Option<Self::Ack>,
        max: usize,
        ms: i64,
        cancel: *mut sys::mq_cancel,
        done: Option<(sys::mq_done_fn, *mut c_void)>,
    ) -> sys::mq_status;

    fn copies(&mut self) -> &mut Copies;

    /// The last call's count, needed bytes and the capacity it was given.
    fn outputs(&self) -> (usize, usize, usize);
}

/// Drives the copying poll of `op` to its end: starts its call (acking `ack`, taken by the
/// first call), or sees the pending one end; after `MQ_ERR_TOO_LARGE` grows the buffer and
/// polls again (without an ack: the first call's stands). Ready with the number of messages,
/// their views made in the data's buffer; `op` then has no call pending.
pub(super) fn poll_copies<D: CopyPoll>(
    op: &mut Op<D>,
    cx: &Context<'_>,
    ack: &mut Option<D::Ack>,
    max: usize,
    wait: Wait,
) -> Poll<Result<usize>> {
    loop {
        let r = if op.pending {
            ready!(op.poll_ended(cx))
        } else {
            let (a, ms) = (ack.take(), wait_ms(wait));
            ready!(op.start(
                cx,
                // SAFETY (both): no call is pending, the data is ours until the call; the
                // pointers handed to it stay valid until `done` (the shared state owns them).
                |d, cancel, done, user| unsafe {
                    D::call(d, a, max, ms, cancel, Some((done, user)))
                },
                move |d, cancel| unsafe { D::call(d, a, max, ms, cancel, None) },
            ))
        };
        let d = op.data();
        let (n, needed, cap) = d.outputs();
        if let Some(res) = d.copies().end(r, n, needed, cap, max) {
            return Poll::Ready(res);
        }
        // the buffer has grown: poll again
    }
}

// ---- the one call of a publish or a batch publish ----------------------------------------------

/// The call of a publish or a batch publish of `d` on the broker `b`: its asynchronous form
/// with `done` and `user`, else its blocking form.
///
/// # Safety
/// `b` is a live broker; `d` is valid and not otherwise used until the call has ended (for the
/// asynchronous form, until `done`).
pub(super) type BrokerCallFn<D> = unsafe fn(
    *mut sys::mq_broker,
    *mut D,
    i64,
    *mut sys::mq_cancel,
    Option<(sys::mq_done_fn, *mut c_void)>,
) -> sys::mq_status;

/// What a publish's or a batch publish's future drives: its data (made when the future was; an
/// error there is the future's outcome, without a call) and its one call, started when the
/// future is first polled.
pub(super) struct BrokerCall<D: CallData> {
    raw: Arc<Raw>,
    data: Option<Result<D>>,
    op: Option<Op<D>>,
    wait: Wait,
    /// The caller's token, when given (else a new one).
    token: Option<CancelToken>,
    call: BrokerCallFn<D>,
    /// The future's name, for the panic of one polled after it completed.
    what: &'static str,
}

impl<D: CallData> BrokerCall<D> {
    pub(super) fn new(
        raw: Arc<Raw>,
        data: Result<D>,
        wait: Wait,
        token: Option<&CancelToken>,
        call: BrokerCallFn<D>,
        what: &'static str,
    ) -> BrokerCall<D> {
        BrokerCall {
            raw,
            data: Some(data),
            op: None,
            wait,
            token: token.cloned(),
            call,
            what,
        }
    }

    /// Starts the call (the first poll) or sees the pending one end. Ready with
    /// `refused(error)` when the call could not be made (the data's error, or the new token's),
    /// else, once it has ended, with `ended(outcome, data)`; no call is pending then.
    pub(super) fn poll<T>(
        &mut self,
        cx: &Context<'_>,
        refused: impl FnOnce(Error) -> T,
        ended: impl FnOnce(Result<()>, &mut D) -> T,
    ) -> Poll<T> {
        let r = match &mut self.op {
            Some(op) => ready!(op.poll_ended(cx)),
            None => {
                let what = self.what;
                let data = match self
                    .data
                    .take()
                    .unwrap_or_else(|| panic!("a {what} future polled after it completed"))
                {
                    Ok(d) => d,
                    Err(e) => return Poll::Ready(refused(e)),
                };
                let token = match self.token.take().map_or_else(CancelToken::new, Ok) {
                    Ok(t) => t,
                    Err(e) => return Poll::Ready(refused(e)),
                };
                let (b, ms, call) = (self.raw.as_ptr(), wait_ms(self.wait), self.call);
                let op = self.op.insert(Op::new(data, token));
                let raw = self.raw.clone();
                ready!(op.start(
                    cx,
                    // SAFETY (both): as for the poll: the shared state owns every pointer until
                    // `done`; `raw` keeps the broker's memory.
                    |d, cancel, done, user| unsafe { call(b, d, ms, cancel, Some((done, user))) },
                    move |d, cancel| unsafe { call(raw.as_ptr(), d, ms, cancel, None) },
                ))
            }
        };
        let mut op = self.op.take().expect("the call just made");
        Poll::Ready(ended(r, op.data()))
    }
}
