//! Futures on the C API's asynchronous calls (library 1.4): poll, ack-then-poll, publish and
//! batch publish, with no thread of their own.
//!
//! A future starts its C call (`mq_group_poll_copy_async`, `mq_group_ack_poll_copy_async`,
//! `mq_topic_publish_async`, `mq_topic_publish_batch_async`) on the thread that first polls it.
//! A call that need not wait ends there (the future is ready at once); one that must is
//! parked inside the library, holding no thread, and when it ends the broker's one completer
//! thread (shared by all its pending calls) runs this module's `done`, which records the
//! status and wakes the task's [`Waker`]. Any executor works: nothing here needs a runtime.
//!
//! What the library writes into while a call is pending (the copy buffer, the outputs, the
//! records and names) belongs to state shared with `done` (the `user` pointer is a counted
//! reference), so it lives until the call has ended, whenever the future is dropped. Dropping
//! a future whose call is pending triggers the call's [`CancelToken`]; a poll that still ended
//! with messages nacks them, so they are handed out again at once rather than after the lease.
//! `done` never lets a panic (a waker's, say) unwind into C.
//!
//! A broker without asynchronous calls (the Kafka backend: they return `MQ_ERR_UNSUPPORTED`)
//! gets the blocking form instead, on a thread of its own that runs `done` when it returns.
//!
//! A member's polls (`mq_member_poll_copy_async`, `mq_member_ack_poll_copy_async`) are in
//! [`member`], on the same [`Op`] and copying-poll driver ([`poll_copies`]).
use std::cell::UnsafeCell;
use std::ffi::{c_void, CStr, CString};
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{ready, Context, Poll, Waker};

use mq_sys as sys;

use crate::broker::Raw;
use crate::cancel::CancelToken;
use crate::consumer::{Batch, PartitionConsumer};
use crate::copy::Copies;
use crate::error::{check, BatchError, Error, Result, Status};
use crate::message::{Published, Record};
use crate::name;
use crate::wait::Wait;
use crate::Broker;

pub(crate) mod member;

/// What a call's state does with an outcome nobody will read, and around a blocking form.
trait CallData: Default + Send + 'static {
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
struct Op<D: CallData> {
    shared: Arc<Shared<D>>,
    pending: bool,
}

impl<D: CallData> Op<D> {
    fn new(data: D, token: CancelToken) -> Op<D> {
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
    fn data(&mut self) -> &mut D {
        assert!(!self.pending, "the data of a pending call");
        // SAFETY: no call is pending and the future owns `self` exclusively: `done` of an
        // earlier call has set `ended` (seen under the lock) and no longer touches the data.
        unsafe { &mut *self.shared.data.get() }
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
    static FORCE_BLOCKING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
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

// ---- poll and ack-then-poll ------------------------------------------------------------------

/// The data of a copying poll (a group's or a member's): the buffer and the call's outputs.
trait CopyPoll: CallData {
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
fn poll_copies<D: CopyPoll>(
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

#[derive(Default)]
struct PollData {
    raw: Option<Arc<Raw>>,
    topic: Option<Arc<CStr>>,
    group: Option<Arc<CStr>>,
    partition: i32,
    copies: Copies,
    cap: usize,
    count: usize,
    needed: usize,
}

impl CallData for PollData {
    fn unclaimed(&mut self, status: sys::mq_status) {
        if status != sys::mq_status::MQ_OK || self.count == 0 {
            return;
        }
        if let (Some(raw), Some(t), Some(g)) = (&self.raw, &self.topic, &self.group) {
            // Nobody will see these: hand them out again now rather than after the lease.
            // SAFETY: the broker's memory is alive (`raw`), the names are valid.
            let _ = unsafe {
                sys::mq_group_nack(raw.as_ptr(), t.as_ptr(), g.as_ptr(), self.partition, 0)
            };
        }
    }
}

impl CopyPoll for PollData {
    type Ack = i64;

    unsafe fn call(
        d: *mut PollData,
        ack: Option<i64>,
        max: usize,
        ms: i64,
        cancel: *mut sys::mq_cancel,
        done: Option<(sys::mq_done_fn, *mut c_void)>,
    ) -> sys::mq_status {
        // SAFETY: the caller's promise; the names and the broker are alive (held by `d`).
        unsafe {
            let d = &mut *d;
            let (buf, cap) = d.copies.target();
            d.cap = cap;
            let (b, t, g, p) = (
                d.raw.as_ref().expect("the broker").as_ptr(),
                d.topic.as_ref().expect("the topic").as_ptr(),
                d.group.as_ref().expect("the group").as_ptr(),
                d.partition,
            );
            let (n, needed): (*mut usize, *mut usize) = (&mut d.count, &mut d.needed);
            match (ack, done) {
                (Some(o), Some((done, user))) => sys::mq_group_ack_poll_copy_async(
                    b, t, g, p, o, buf, cap, max, ms, cancel, n, needed, done, user,
                ),
                (None, Some((done, user))) => sys::mq_group_poll_copy_async(
                    b, t, g, p, buf, cap, max, ms, cancel, n, needed, done, user,
                ),
                (Some(o), None) => {
                    sys::mq_group_ack_poll_copy(b, t, g, p, o, buf, cap, max, ms, cancel, n, needed)
                }
                (None, None) => {
                    sys::mq_group_poll_copy(b, t, g, p, buf, cap, max, ms, cancel, n, needed)
                }
            }
        }
    }

    fn copies(&mut self) -> &mut Copies {
        &mut self.copies
    }

    fn outputs(&self) -> (usize, usize, usize) {
        (self.count, self.needed, self.cap)
    }
}

/// A poll (after an ack, for the ack-then-poll forms) of a [`PartitionConsumer`].
struct PollFuture<'c> {
    c: Option<&'c mut PartitionConsumer>,
    op: Option<Op<PollData>>,
    max: usize,
    wait: Wait,
    /// The offset to ack with the first call.
    ack: Option<i64>,
    /// The caller's token, when given (else the consumer's own).
    token: Option<CancelToken>,
}

impl<'c> PollFuture<'c> {
    fn new(
        c: &'c mut PartitionConsumer,
        ack: Option<i64>,
        max: usize,
        wait: Wait,
        token: Option<&CancelToken>,
    ) -> PollFuture<'c> {
        PollFuture {
            c: Some(c),
            op: None,
            max,
            wait,
            ack,
            token: token.cloned(),
        }
    }
}

impl<'c> Future for PollFuture<'c> {
    type Output = Result<Batch<'c>>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<Batch<'c>>> {
        let this = self.get_mut();
        let op = match &mut this.op {
            Some(op) => op,
            None => {
                let c = this
                    .c
                    .as_mut()
                    .expect("a poll future polled after it completed");
                let token = match this.token.clone().or_else(|| c.token.take()) {
                    Some(t) => t,
                    None => match CancelToken::new() {
                        Ok(t) => t,
                        Err(e) => return Poll::Ready(Err(e)),
                    },
                };
                let mut copies = std::mem::take(&mut c.copies);
                copies.begin(this.max);
                let data = PollData {
                    raw: Some(c.raw.clone()),
                    topic: Some(c.topic.clone()),
                    group: Some(c.group.clone()),
                    partition: c.partition,
                    copies,
                    ..PollData::default()
                };
                this.op.insert(Op::new(data, token))
            }
        };
        let res = ready!(poll_copies(op, cx, &mut this.ack, this.max, this.wait));
        let mut op = this.op.take().expect("the call just made");
        let copies = std::mem::take(&mut op.data().copies);
        let c = this
            .c
            .take()
            .expect("the consumer, until the future completes");
        c.copies = copies;
        if this.token.is_none() {
            c.token = Some(op.shared.token.clone());
        }
        Poll::Ready(res.map(|n| Batch::new(c, n)))
    }
}

impl PartitionConsumer {
    /// [`poll`](PartitionConsumer::poll) as a future, on the library's asynchronous poll: a
    /// pending poll holds no thread (see [`Broker::publish_async`] for what that costs), and
    /// any executor can run it. The call starts when the future is first polled. Dropping the
    /// future while the call is pending cancels it; messages it had already been handed are
    /// nacked (handed out again at once). The future is `Send`, as is the [`Batch`] it
    /// returns. On the Kafka backend, which has no asynchronous calls, the blocking form
    /// runs on a thread of its own instead.
    pub fn poll_async(
        &mut self,
        max: usize,
        wait: impl Into<Wait>,
    ) -> impl Future<Output = Result<Batch<'_>>> + Send + '_ {
        PollFuture::new(self, None, max, wait.into(), None)
    }

    /// [`poll_async`](Self::poll_async) that `token` can interrupt ([`Error::Cancelled`]); dropping
    /// the future while its call is pending triggers `token`.
    pub fn poll_async_cancellable(
        &mut self,
        max: usize,
        wait: impl Into<Wait>,
        token: &CancelToken,
    ) -> impl Future<Output = Result<Batch<'_>>> + Send + '_ {
        PollFuture::new(self, None, max, wait.into(), Some(token))
    }

    /// [`ack_and_poll`](PartitionConsumer::ack_and_poll) as a future (see
    /// [`poll_async`](Self::poll_async)): the ack is made when the future is first polled,
    /// whatever the poll then finds.
    pub fn ack_and_poll_async(
        &mut self,
        offset: i64,
        max: usize,
        wait: impl Into<Wait>,
    ) -> impl Future<Output = Result<Batch<'_>>> + Send + '_ {
        PollFuture::new(self, Some(offset), max, wait.into(), None)
    }

    /// [`ack_and_poll_async`](Self::ack_and_poll_async) that `token` can interrupt.
    pub fn ack_and_poll_async_cancellable(
        &mut self,
        offset: i64,
        max: usize,
        wait: impl Into<Wait>,
        token: &CancelToken,
    ) -> impl Future<Output = Result<Batch<'_>>> + Send + '_ {
        PollFuture::new(self, Some(offset), max, wait.into(), Some(token))
    }
}

impl<'c> Batch<'c> {
    /// [`ack_and_poll`](Batch::ack_and_poll) as a future (see
    /// [`PartitionConsumer::poll_async`]): the batch ends now; the ack is made when the future
    /// is first polled.
    ///
    /// ```
    /// # fn main() -> mq::Result<()> {
    /// # let broker = mq::Broker::new()?;
    /// # broker.create_topic("t", &mq::TopicConfig::new())?;
    /// # broker.subscribe_group("t", "g", &mq::GroupOptions::new())?;
    /// # for i in 0..10u8 { broker.publish("t", mq::Record::new(&[i]), mq::Wait::NoWait)?; }
    /// # futures_executor_block_on(async {
    /// let mut c = broker.consumer("t", "g", 0)?;
    /// let mut seen = Vec::new();
    /// let mut batch = c.poll_async(4, mq::Wait::NoWait).await?;
    /// loop {
    ///     seen.extend(batch.iter().map(|m| m.payload()[0]));
    ///     match batch.ack_and_poll_async(4, mq::Wait::NoWait).await {
    ///         Ok(next) => batch = next,
    ///         Err(mq::Error::Timeout(_)) => break,
    ///         Err(e) => return Err(e),
    ///     }
    /// }
    /// assert_eq!(seen, (0..10).collect::<Vec<u8>>());
    /// # Ok(()) })
    /// # }
    /// # fn futures_executor_block_on<F: std::future::Future>(f: F) -> F::Output {
    /// #     tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(f)
    /// # }
    /// ```
    pub fn ack_and_poll_async(
        self,
        max: usize,
        wait: impl Into<Wait>,
    ) -> impl Future<Output = Result<Batch<'c>>> + Send + 'c {
        let last = self.last_offset();
        PollFuture::new(self.release(), last, max, wait.into(), None)
    }
}

// ---- publish -------------------------------------------------------------------------------

#[derive(Default)]
struct PublishData {
    topic: CString,
    key: Option<Vec<u8>>,
    payload: Vec<u8>,
    /// Header names and values, back to back; `headers` points into it.
    header_bytes: Vec<u8>,
    headers: Vec<sys::mq_header>,
    partition: i32,
    offset: i64,
}

// SAFETY: the raw pointers of `headers` point into `header_bytes`, heap memory of the same value.
unsafe impl Send for PublishData {}
impl CallData for PublishData {}

/// Copies headers into one buffer and makes `mq_header`s pointing into it.
fn own_headers<'a>(
    pairs: impl Iterator<Item = (&'a [u8], &'a [u8])> + Clone,
    bytes: &mut Vec<u8>,
    out: &mut Vec<sys::mq_header>,
) {
    let total: usize = pairs.clone().map(|(n, v)| n.len() + v.len()).sum();
    bytes.reserve_exact(total);
    let start = bytes.len();
    let mut spans = Vec::new();
    for (n, v) in pairs {
        let at = bytes.len();
        bytes.extend_from_slice(n);
        bytes.extend_from_slice(v);
        spans.push((at, n.len(), v.len()));
    }
    debug_assert!(start + total == bytes.len());
    let base = bytes.as_ptr();
    out.extend(spans.into_iter().map(|(at, nl, vl)| sys::mq_header {
        // SAFETY: in bounds of `bytes`, which is not resized any more.
        name: unsafe { base.add(at) }.cast(),
        name_len: nl,
        value: unsafe { base.add(at + nl) }.cast(),
        value_len: vl,
    }));
}

/// The publish of `d`: its asynchronous form with `done` and `user`, else its blocking form.
///
/// # Safety
/// `b` is a live broker; `d` is valid and not otherwise used until the call has ended (for the
/// asynchronous form, until `done`).
unsafe fn publish_call(
    b: *mut sys::mq_broker,
    d: *mut PublishData,
    ms: i64,
    cancel: *mut sys::mq_cancel,
    done: Option<(sys::mq_done_fn, *mut c_void)>,
) -> sys::mq_status {
    // SAFETY: the caller's promise.
    unsafe {
        let d = &mut *d;
        let (key, key_len) = match &d.key {
            Some(k) => (k.as_ptr().cast::<c_void>(), k.len()),
            None => (std::ptr::null(), 0),
        };
        let headers = if d.headers.is_empty() {
            std::ptr::null()
        } else {
            d.headers.as_ptr()
        };
        let (t, p, pl, hl) = (
            d.topic.as_ptr(),
            d.payload.as_ptr().cast(),
            d.payload.len(),
            d.headers.len(),
        );
        match done {
            Some((done, user)) => sys::mq_topic_publish_async(
                b,
                t,
                key,
                key_len,
                p,
                pl,
                headers,
                hl,
                ms,
                cancel,
                &mut d.partition,
                &mut d.offset,
                done,
                user,
            ),
            None => sys::mq_topic_publish(
                b,
                t,
                key,
                key_len,
                p,
                pl,
                headers,
                hl,
                ms,
                cancel,
                &mut d.partition,
                &mut d.offset,
            ),
        }
    }
}

struct PublishFuture {
    raw: Arc<Raw>,
    data: Option<Result<PublishData>>,
    op: Option<Op<PublishData>>,
    wait: Wait,
    token: Option<CancelToken>,
}

impl Future for PublishFuture {
    type Output = Result<Published>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<Published>> {
        let this = self.get_mut();
        let r = match &mut this.op {
            Some(op) => ready!(op.poll_ended(cx)),
            None => {
                let data = match this
                    .data
                    .take()
                    .expect("a publish future polled after it completed")
                {
                    Ok(d) => d,
                    Err(e) => return Poll::Ready(Err(e)),
                };
                let token = match this.token.take().map_or_else(CancelToken::new, Ok) {
                    Ok(t) => t,
                    Err(e) => return Poll::Ready(Err(e)),
                };
                let (b, ms) = (this.raw.as_ptr(), wait_ms(this.wait));
                let op = this.op.insert(Op::new(data, token));
                let raw = this.raw.clone();
                ready!(op.start(
                    cx,
                    // SAFETY (both): as for the poll: the shared state owns every pointer until
                    // `done`; `raw` keeps the broker's memory.
                    |d, cancel, done, user| unsafe {
                        publish_call(b, d, ms, cancel, Some((done, user)))
                    },
                    move |d, cancel| unsafe { publish_call(raw.as_ptr(), d, ms, cancel, None) },
                ))
            }
        };
        let op = this.op.as_mut().expect("the call just made");
        let d = op.data();
        let at = Published {
            partition: d.partition,
            offset: d.offset,
        };
        this.op = None;
        Poll::Ready(r.map(|()| at))
    }
}

#[derive(Default)]
struct BatchData {
    topic: CString,
    /// Every key, payload, header name and value, back to back; the records point into it.
    bytes: Vec<u8>,
    headers: Vec<sys::mq_header>,
    records: Vec<sys::mq_record>,
    results: Vec<sys::mq_publish_result>,
    published: usize,
}

// SAFETY: the raw pointers of `headers` and `records` point into `bytes` and `headers`, heap
// memory of the same value.
unsafe impl Send for BatchData {}
impl CallData for BatchData {}

const UNWRITTEN: sys::mq_publish_result = sys::mq_publish_result {
    partition: i32::MIN,
    offset: i64::MIN,
};

impl BatchData {
    fn new(topic: &str, records: &[Record<'_>]) -> Result<BatchData> {
        let mut total = 0usize;
        let mut header_count = 0usize;
        for r in records {
            total += r.key_bytes().map_or(0, <[u8]>::len) + r.payload_bytes().len();
            for (n, v) in r.header_pairs() {
                total += n.len() + v.len();
                header_count += 1;
            }
        }
        let mut d = BatchData {
            topic: name::owned(topic)?,
            bytes: Vec::with_capacity(total),
            headers: Vec::with_capacity(header_count),
            records: Vec::with_capacity(records.len()),
            results: vec![UNWRITTEN; records.len()],
            published: 0,
        };
        // Offsets first (the buffers are not resized past their capacity, but pointers are
        // taken once everything is in).
        struct Spans {
            key: Option<(usize, usize)>,
            payload: (usize, usize),
            headers: (usize, usize),
        }
        let mut spans = Vec::with_capacity(records.len());
        let mut hspans = Vec::with_capacity(header_count);
        for r in records {
            let mut put = |b: &[u8]| {
                let at = d.bytes.len();
                d.bytes.extend_from_slice(b);
                (at, b.len())
            };
            let key = r.key_bytes().map(&mut put);
            let payload = put(r.payload_bytes());
            let h0 = hspans.len();
            for (n, v) in r.header_pairs() {
                let (na, nl) = put(n);
                let (va, vl) = put(v);
                hspans.push((na, nl, va, vl));
            }
            spans.push(Spans {
                key,
                payload,
                headers: (h0, hspans.len() - h0),
            });
        }
        let base = d.bytes.as_ptr();
        // SAFETY (the adds): every span lies inside `bytes`.
        let at = |o: usize| unsafe { base.add(o) }.cast::<c_void>();
        d.headers
            .extend(hspans.iter().map(|&(na, nl, va, vl)| sys::mq_header {
                name: at(na),
                name_len: nl,
                value: at(va),
                value_len: vl,
            }));
        let hbase = d.headers.as_ptr();
        d.records.extend(spans.iter().map(|s| sys::mq_record {
            key: s.key.map_or(std::ptr::null(), |(o, _)| at(o)),
            key_len: s.key.map_or(0, |(_, l)| l),
            payload: at(s.payload.0),
            payload_len: s.payload.1,
            // SAFETY: the record's headers lie inside `headers`.
            headers: if s.headers.1 == 0 {
                std::ptr::null()
            } else {
                unsafe { hbase.add(s.headers.0) }
            },
            header_count: s.headers.1,
        }));
        Ok(d)
    }
}

/// The batch publish of `d`: its asynchronous form with `done` and `user`, else its blocking
/// form.
///
/// # Safety
/// As [`publish_call`].
unsafe fn batch_call(
    b: *mut sys::mq_broker,
    d: *mut BatchData,
    ms: i64,
    cancel: *mut sys::mq_cancel,
    done: Option<(sys::mq_done_fn, *mut c_void)>,
) -> sys::mq_status {
    // SAFETY: the caller's promise.
    unsafe {
        let d = &mut *d;
        let results = if d.results.is_empty() {
            std::ptr::null_mut()
        } else {
            d.results.as_mut_ptr()
        };
        let (t, r, rs, n) = (
            d.topic.as_ptr(),
            d.records.as_ptr(),
            std::mem::size_of::<sys::mq_record>(),
            d.records.len(),
        );
        let res_size = std::mem::size_of::<sys::mq_publish_result>();
        match done {
            Some((done, user)) => sys::mq_topic_publish_batch_async(
                b,
                t,
                r,
                rs,
                n,
                ms,
                cancel,
                results,
                res_size,
                &mut d.published,
                done,
                user,
            ),
            None => sys::mq_topic_publish_batch(
                b,
                t,
                r,
                rs,
                n,
                ms,
                cancel,
                results,
                res_size,
                &mut d.published,
            ),
        }
    }
}

struct BatchFuture {
    raw: Arc<Raw>,
    data: Option<Result<BatchData>>,
    op: Option<Op<BatchData>>,
    wait: Wait,
    token: Option<CancelToken>,
}

impl Future for BatchFuture {
    type Output = (Result<(), BatchError>, Vec<Published>);

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let r = match &mut this.op {
            Some(op) => ready!(op.poll_ended(cx)),
            None => {
                let refused = |error| {
                    Poll::Ready((
                        Err(BatchError {
                            published: 0,
                            error,
                        }),
                        Vec::new(),
                    ))
                };
                let data = match this
                    .data
                    .take()
                    .expect("a batch future polled after it completed")
                {
                    Ok(d) => d,
                    Err(e) => return refused(e),
                };
                let token = match this.token.take().map_or_else(CancelToken::new, Ok) {
                    Ok(t) => t,
                    Err(e) => return refused(e),
                };
                let (b, ms) = (this.raw.as_ptr(), wait_ms(this.wait));
                let op = this.op.insert(Op::new(data, token));
                let raw = this.raw.clone();
                ready!(op.start(
                    cx,
                    // SAFETY (both): as for the publish.
                    |d, cancel, done, user| unsafe {
                        batch_call(b, d, ms, cancel, Some((done, user)))
                    },
                    move |d, cancel| unsafe { batch_call(raw.as_ptr(), d, ms, cancel, None) },
                ))
            }
        };
        let mut op = this.op.take().expect("the call just made");
        let d = op.data();
        let results = if d.results.iter().all(|r| r.partition != i32::MIN) {
            d.results
                .iter()
                .map(|r| Published {
                    partition: r.partition,
                    offset: r.offset,
                })
                .collect()
        } else {
            Vec::new()
        };
        let published = d.published;
        Poll::Ready((r.map_err(|error| BatchError { published, error }), results))
    }
}

impl Broker {
    /// [`publish`](Broker::publish) as a future, on the library's asynchronous publish: the
    /// record and the topic's name are copied when this is called (the future borrows nothing,
    /// so it can be handed to `tokio::spawn`), the call starts when the future is first
    /// polled, and dropping the future while it waits for room cancels it (nothing appended,
    /// unless it had completed).
    ///
    /// A pending call holds no thread: it is parked in the library and completed by the
    /// broker's one completer thread (started by its first pending call, shared by all), which
    /// wakes the task. Any executor runs these futures; they are `Send`.
    /// On the Kafka backend, which has no asynchronous calls, the blocking form runs on a
    /// thread of its own instead (a thread per pending call there).
    pub fn publish_async(
        &self,
        topic: &str,
        record: Record<'_>,
        wait: impl Into<Wait>,
    ) -> impl Future<Output = Result<Published>> + Send + 'static {
        self.publish_future(topic, &record, wait.into(), None)
    }

    /// [`publish_async`](Self::publish_async) that `token` can interrupt ([`Error::Cancelled`]);
    /// dropping the future while its call is pending triggers `token`.
    pub fn publish_async_cancellable(
        &self,
        topic: &str,
        record: Record<'_>,
        wait: impl Into<Wait>,
        token: &CancelToken,
    ) -> impl Future<Output = Result<Published>> + Send + 'static {
        self.publish_future(topic, &record, wait.into(), Some(token))
    }

    fn publish_future(
        &self,
        topic: &str,
        record: &Record<'_>,
        wait: Wait,
        token: Option<&CancelToken>,
    ) -> PublishFuture {
        let data = name::owned(topic).map(|topic| {
            let mut d = PublishData {
                topic,
                key: record.key_bytes().map(<[u8]>::to_vec),
                payload: record.payload_bytes().to_vec(),
                ..PublishData::default()
            };
            own_headers(record.header_pairs(), &mut d.header_bytes, &mut d.headers);
            d
        });
        PublishFuture {
            raw: self.raw().clone(),
            data: Some(data),
            op: None,
            wait,
            token: token.cloned(),
        }
    }

    /// [`publish_batch`](Broker::publish_batch) as a future (see
    /// [`publish_async`](Self::publish_async)): the records are copied when this is called.
    /// Returns where each record went.
    pub fn publish_batch_async(
        &self,
        topic: &str,
        records: &[Record<'_>],
        wait: impl Into<Wait>,
    ) -> impl Future<Output = Result<Vec<Published>, BatchError>> + Send + 'static {
        let f = self.batch_future(topic, records, wait.into(), None);
        async move {
            let (r, results) = f.await;
            r.map(|()| results)
        }
    }

    /// [`publish_batch_with`](Broker::publish_batch_with) as a future: with an optional cancel
    /// token (triggered when the future is dropped while its call is pending), it ends with
    /// the outcome and where each record went (one entry per record, offset -1 where not
    /// appended), or no entries when the batch was refused as a whole.
    pub fn publish_batch_async_with(
        &self,
        topic: &str,
        records: &[Record<'_>],
        wait: impl Into<Wait>,
        token: Option<&CancelToken>,
    ) -> impl Future<Output = (Result<(), BatchError>, Vec<Published>)> + Send + 'static {
        self.batch_future(topic, records, wait.into(), token)
    }

    fn batch_future(
        &self,
        topic: &str,
        records: &[Record<'_>],
        wait: Wait,
        token: Option<&CancelToken>,
    ) -> BatchFuture {
        BatchFuture {
            raw: self.raw().clone(),
            data: Some(BatchData::new(topic, records)),
            op: None,
            wait,
            token: token.cloned(),
        }
    }
}

// Every future of this module is `Send` (so `tokio::spawn` takes it), checked when the crate
// compiles; the signatures say `+ Send` too.
const _: fn() = || {
    fn assert_send<T: Send>() {}
    assert_send::<PollFuture<'static>>();
    assert_send::<PublishFuture>();
    assert_send::<BatchFuture>();
    assert_send::<Batch<'static>>();
    assert_send::<Result<Published>>();
};

#[cfg(test)]
mod tests {
    //! The Kafka backend's way (no asynchronous calls: the blocking form on a thread of its
    //! own), forced on the in-process broker.
    use super::*;
    use crate::{GroupOptions, TopicConfig};
    use std::pin::pin;
    use std::task::Wake;
    use std::time::Duration;

    struct Unpark(std::thread::Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }

    pub(super) fn block_on<F: Future>(f: F) -> F::Output {
        let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
        let mut f = pin!(f);
        loop {
            if let Poll::Ready(v) = f.as_mut().poll(&mut Context::from_waker(&waker)) {
                return v;
            }
            std::thread::park();
        }
    }

    pub(super) fn poll_once<F: Future>(f: Pin<&mut F>) -> Poll<F::Output> {
        struct NoWake;
        impl Wake for NoWake {
            fn wake(self: Arc<Self>) {}
        }
        f.poll(&mut Context::from_waker(&Waker::from(Arc::new(NoWake))))
    }

    #[test]
    fn without_asynchronous_calls_the_blocking_form_runs_on_a_thread() {
        FORCE_BLOCKING.with(|f| f.set(true));
        let b = Broker::new().unwrap();
        b.create_topic("t", &TopicConfig::new().capacity(1))
            .unwrap();
        b.subscribe_group("t", "g", &GroupOptions::new()).unwrap();
        let mut c = b.consumer("t", "g", 0).unwrap();
        // A poll completed by a publish from this thread (the poll waits on its own thread).
        {
            let mut f = pin!(c.poll_async(10, Wait::Forever));
            assert!(poll_once(f.as_mut()).is_pending());
            b.publish("t", Record::new(b"a"), Wait::NoWait).unwrap();
            let batch = block_on(f).unwrap();
            assert_eq!(batch.messages()[0].payload(), b"a");
        }
        // A publish waiting for room, let in by an ack-then-poll's ack.
        let mut p = pin!(b.publish_async("t", Record::new(b"b"), Wait::Forever));
        assert!(poll_once(p.as_mut()).is_pending());
        let batch = block_on(c.ack_and_poll_async(0, 10, Duration::from_secs(5))).unwrap();
        assert_eq!(batch.messages()[0].payload(), b"b");
        drop(batch);
        assert_eq!(block_on(p).unwrap().offset, 1);
        // A batch, a timeout, the detail read on the call's thread.
        let (r, _) = block_on(b.publish_batch_async_with(
            "t",
            &[Record::new(b"c")],
            Duration::from_millis(5),
            None,
        ));
        let e = r.unwrap_err();
        assert!(matches!(e.error, Error::Full(_)), "{e:?}");
        assert!(!e.error.message().is_empty(), "{e:?}");
        // Dropping a pending future cancels its blocking call; close ends another.
        let mut dropped = Box::pin(b.publish_async("t", Record::new(b"d"), Wait::Forever));
        assert!(poll_once(dropped.as_mut()).is_pending());
        drop(dropped);
        let mut closed = Box::pin(b.publish_async("t", Record::new(b"e"), Wait::Forever));
        assert!(poll_once(closed.as_mut()).is_pending());
        b.close().unwrap();
        assert!(matches!(block_on(closed).unwrap_err(), Error::Closed(_)));
        assert_eq!(b.partition_info("t", 0).unwrap().end, 2);
    }
}
