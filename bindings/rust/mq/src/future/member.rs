//! Futures on a member's asynchronous polls (library 1.4: `mq_member_poll_copy_async`,
//! `mq_member_ack_poll_copy_async`), on the machinery of the group's: one [`Op`] per call, the
//! copy buffer and outputs owned by the state `done` shares, dropping a pending future
//! triggers its token, and a poll that ended with messages nobody will read nacks them.
//!
//! The futures borrow the [`Member`], as its batches do, so the member cannot be closed or
//! dropped while one is alive. A future dropped (or leaked) while its call is pending leaves
//! the call to end on its own; the library keeps the member's handle until that call's `done`
//! has returned (`mq_member_close` completes it with `MQ_CLOSED` and waits for it), so the
//! nack its `done` may make goes to an open handle. On a broker without asynchronous calls
//! (Kafka) the blocking form runs on a thread of its own, which the library does not know of:
//! there the member's [`BlockingCalls`] does that, and closing the member ends such calls
//! (their tokens) and waits for them.
use std::ffi::c_void;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Condvar, Mutex};
use std::task::{ready, Context, Poll};

use mq_sys as sys;

use super::call::{poll_copies, CallData, CopyPoll, Op};
use crate::cancel::CancelToken;
use crate::copy::Copies;
use crate::error::Result;
use crate::member::{Member, MemberBatch};
use crate::wait::Wait;

/// A member's calls whose blocking form runs on a thread of its own (see the module's text).
#[derive(Default)]
pub(crate) struct BlockingCalls {
    /// The next id, and the running calls with their tokens.
    calls: Mutex<(u64, Vec<(u64, CancelToken)>)>,
    idle: Condvar,
}

impl BlockingCalls {
    fn enter(self: &Arc<Self>, token: &CancelToken) -> BlockingCall {
        let mut c = self.calls.lock().unwrap_or_else(|e| e.into_inner());
        let id = c.0;
        c.0 += 1;
        c.1.push((id, token.clone()));
        BlockingCall {
            calls: self.clone(),
            id,
        }
    }

    /// Triggers the tokens of the running calls and waits until none runs. Only calls whose
    /// future is gone can be running (a live future borrows the member): their tokens are
    /// triggered already, unless the future was leaked.
    pub(crate) fn end_all(&self) {
        let mut c = self.calls.lock().unwrap_or_else(|e| e.into_inner());
        for (_, t) in &c.1 {
            t.cancel();
        }
        while !c.1.is_empty() {
            c = self.idle.wait(c).unwrap_or_else(|e| e.into_inner());
        }
    }
}

/// One running blocking form: the member's handle stays open until it goes.
struct BlockingCall {
    calls: Arc<BlockingCalls>,
    id: u64,
}

impl Drop for BlockingCall {
    fn drop(&mut self) {
        let mut c = self.calls.calls.lock().unwrap_or_else(|e| e.into_inner());
        c.1.retain(|(id, _)| *id != self.id);
        if c.1.is_empty() {
            self.calls.idle.notify_all();
        }
    }
}

/// The member's handle, used by the call (the library keeps it open until `done`).
struct Handle(*mut sys::mq_member);

impl Default for Handle {
    fn default() -> Handle {
        Handle(std::ptr::null_mut())
    }
}

#[derive(Default)]
struct MemberPollData {
    member: Handle,
    calls: Option<Arc<BlockingCalls>>,
    /// While the blocking form runs on a thread of its own.
    running: Option<BlockingCall>,
    copies: Copies,
    cap: usize,
    count: usize,
    needed: usize,
}

// SAFETY: the member's calls are thread-safe, and its handle is open while the call lives
// (see the module's text); `Copies` is Send.
unsafe impl Send for MemberPollData {}

impl CallData for MemberPollData {
    fn unclaimed(&mut self, status: sys::mq_status) {
        if status != sys::mq_status::MQ_OK {
            return;
        }
        if let Some(p) = self.copies.first_partition(self.count) {
            // Nobody will see these: hand them out again now rather than after the lease (a
            // member that no longer owns the partition is refused: its new owner has them).
            // SAFETY: the handle is open: in `done`, the library (or `running`) keeps it; after
            // it, the dropping future still borrows the member.
            let _ = unsafe { sys::mq_member_nack(self.member.0, p, 0) };
        }
    }

    fn blocking(&mut self, token: &CancelToken) {
        self.running = self.calls.as_ref().map(|c| c.enter(token));
    }

    fn ended(&mut self) {
        self.running = None;
    }
}

impl CopyPoll for MemberPollData {
    type Ack = (i32, i64);

    unsafe fn call(
        d: *mut MemberPollData,
        ack: Option<(i32, i64)>,
        max: usize,
        ms: i64,
        cancel: *mut sys::mq_cancel,
        done: Option<(sys::mq_done_fn, *mut c_void)>,
    ) -> sys::mq_status {
        // SAFETY: the caller's promise; the member's handle is open (see the module's text).
        unsafe {
            let d = &mut *d;
            let (buf, cap) = d.copies.target();
            d.cap = cap;
            let m = d.member.0;
            let (n, needed): (*mut usize, *mut usize) = (&mut d.count, &mut d.needed);
            match (ack, done) {
                (Some((p, o)), Some((done, user))) => sys::mq_member_ack_poll_copy_async(
                    m, p, o, buf, cap, max, ms, cancel, n, needed, done, user,
                ),
                // A retry after MQ_ERR_TOO_LARGE has no ack: the first call's stands.
                (None, Some((done, user))) => sys::mq_member_poll_copy_async(
                    m, buf, cap, max, ms, cancel, n, needed, done, user,
                ),
                (Some((p, o)), None) => {
                    sys::mq_member_ack_poll_copy(m, p, o, buf, cap, max, ms, cancel, n, needed)
                }
                (None, None) => sys::mq_member_poll_copy(m, buf, cap, max, ms, cancel, n, needed),
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

/// A poll (after an ack, for the ack-then-poll forms) of a [`Member`].
struct MemberPollFuture<'m> {
    m: &'m Member,
    /// The buffers of the batch this poll follows, else the member's pool's.
    reuse: Option<Copies>,
    op: Option<Op<MemberPollData>>,
    max: usize,
    wait: Wait,
    /// The partition and offset to ack with the first call.
    ack: Option<(i32, i64)>,
    /// The caller's token, when given (else a pooled one of the member's).
    token: Option<CancelToken>,
    ended: bool,
}

impl<'m> MemberPollFuture<'m> {
    fn new(
        m: &'m Member,
        reuse: Option<Copies>,
        ack: Option<(i32, i64)>,
        max: usize,
        wait: Wait,
        token: Option<&CancelToken>,
    ) -> MemberPollFuture<'m> {
        MemberPollFuture {
            m,
            reuse,
            op: None,
            max,
            wait,
            ack,
            token: token.cloned(),
            ended: false,
        }
    }
}

impl<'m> Future for MemberPollFuture<'m> {
    type Output = Result<MemberBatch<'m>>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<MemberBatch<'m>>> {
        let this = self.get_mut();
        let m = this.m;
        let op = match &mut this.op {
            Some(op) => op,
            None => {
                assert!(!this.ended, "a poll future polled after it completed");
                let token = match this.token.clone().map_or_else(|| m.take_token(), Ok) {
                    Ok(t) => t,
                    Err(e) => {
                        this.ended = true;
                        return Poll::Ready(Err(e));
                    }
                };
                let mut copies = this.reuse.take().unwrap_or_else(|| m.take_copies());
                copies.begin(this.max);
                let data = MemberPollData {
                    member: Handle(m.ptr()),
                    calls: Some(m.blocking_calls().clone()),
                    copies,
                    ..MemberPollData::default()
                };
                this.op.insert(Op::new(data, token))
            }
        };
        let res = ready!(poll_copies(op, cx, &mut this.ack, this.max, this.wait));
        this.ended = true;
        let mut op = this.op.take().expect("the call just made");
        let copies = std::mem::take(&mut op.data().copies);
        if this.token.is_none() {
            m.give_token(op.token().clone());
        }
        Poll::Ready(match res {
            Ok(n) => Ok(MemberBatch::new(m, copies, n)),
            Err(e) => {
                m.give_back(copies);
                Err(e)
            }
        })
    }
}

impl Drop for MemberPollFuture<'_> {
    fn drop(&mut self) {
        // Never started: the batch's buffers go back to the member. (A started call's are the
        // shared state's, freed after its `done`.)
        if let Some(b) = self.reuse.take() {
            self.m.give_back(b);
        }
    }
}

impl Member {
    /// [`poll`](Member::poll) as a future, on the library's asynchronous member poll: a
    /// pending poll holds no thread (see [`Broker::publish_async`](crate::Broker::publish_async)),
    /// waits on every partition the member owns, and any executor can run it. The call starts
    /// when the future is first polled; it ends as the blocking poll would: messages of one
    /// partition, [`Error::Rebalanced`](crate::Error::Rebalanced) when the generation changes
    /// while it waits (nothing handed out), `Timeout`, `Fenced`, `Closed` when the broker is
    /// closed.
    ///
    /// The future borrows the member (like the [`MemberBatch`] it returns), so the member
    /// cannot be closed under it. Dropping the future while the call is pending cancels it;
    /// messages it had already been handed are nacked (handed out again at once). The future
    /// is `Send`. On the Kafka backend, which has no asynchronous calls, the blocking form runs
    /// on a thread of its own instead (closing the member ends it first).
    ///
    /// ```
    /// # fn main() -> mq::Result<()> {
    /// # let broker = mq::Broker::new()?;
    /// # broker.create_topic("jobs", &mq::TopicConfig::new().partitions(2))?;
    /// let m = broker.join("jobs", "workers", &mq::MemberOptions::new())?;
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let publish = broker.publish_async("jobs", mq::Record::new(b"j-1").key(b"k"), mq::Wait::Forever);
    /// let (batch, _) = tokio::join!(m.poll_async(10, mq::Wait::Forever), publish);
    /// let batch = batch?;
    /// assert_eq!(batch.messages()[0].payload(), b"j-1");
    /// batch.ack()
    /// # })
    /// # }
    /// ```
    pub fn poll_async(
        &self,
        max: usize,
        wait: impl Into<Wait>,
    ) -> impl Future<Output = Result<MemberBatch<'_>>> + Send + '_ {
        MemberPollFuture::new(self, None, None, max, wait.into(), None)
    }

    /// [`poll_async`](Self::poll_async) that `token` can interrupt
    /// ([`Error::Cancelled`](crate::Error::Cancelled)); dropping the future while its call is
    /// pending triggers `token`.
    pub fn poll_async_cancellable(
        &self,
        max: usize,
        wait: impl Into<Wait>,
        token: &CancelToken,
    ) -> impl Future<Output = Result<MemberBatch<'_>>> + Send + '_ {
        MemberPollFuture::new(self, None, None, max, wait.into(), Some(token))
    }

    /// [`ack_and_poll`](Member::ack_and_poll) as a future (see
    /// [`poll_async`](Self::poll_async)): the ack is made when the future is first polled,
    /// before the poll waits, and stands whatever the poll then finds.
    pub fn ack_and_poll_async(
        &self,
        partition: i32,
        offset: i64,
        max: usize,
        wait: impl Into<Wait>,
    ) -> impl Future<Output = Result<MemberBatch<'_>>> + Send + '_ {
        MemberPollFuture::new(
            self,
            None,
            Some((partition, offset)),
            max,
            wait.into(),
            None,
        )
    }

    /// [`ack_and_poll_async`](Self::ack_and_poll_async) whose poll `token` can interrupt.
    pub fn ack_and_poll_async_cancellable(
        &self,
        partition: i32,
        offset: i64,
        max: usize,
        wait: impl Into<Wait>,
        token: &CancelToken,
    ) -> impl Future<Output = Result<MemberBatch<'_>>> + Send + '_ {
        MemberPollFuture::new(
            self,
            None,
            Some((partition, offset)),
            max,
            wait.into(),
            Some(token),
        )
    }
}

impl<'m> MemberBatch<'m> {
    /// [`ack_and_poll`](MemberBatch::ack_and_poll) as a future (see [`Member::poll_async`]):
    /// the batch ends now and its buffers go to the poll; the ack is made when the future is
    /// first polled. An empty batch acks nothing and just polls.
    ///
    /// ```
    /// # fn main() -> mq::Result<()> {
    /// # let broker = mq::Broker::new()?;
    /// # broker.create_topic("t", &mq::TopicConfig::new())?;
    /// let m = broker.join("t", "g", &mq::MemberOptions::new())?;
    /// # for i in 0..10u8 { broker.publish("t", mq::Record::new(&[i]), mq::Wait::NoWait)?; }
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let mut seen = Vec::new();
    /// let mut batch = m.poll_async(4, mq::Wait::NoWait).await?;
    /// loop {
    ///     seen.extend(batch.iter().map(|m| m.payload()[0]));
    ///     match batch.ack_and_poll_async(4, mq::Wait::NoWait).await {
    ///         Ok(next) => batch = next,
    ///         Err(mq::Error::Timeout(_)) => break, // the last batch is acked
    ///         Err(e) => return Err(e),
    ///     }
    /// }
    /// assert_eq!(seen, (0..10).collect::<Vec<u8>>());
    /// # Ok(()) })
    /// # }
    /// ```
    pub fn ack_and_poll_async(
        self,
        max: usize,
        wait: impl Into<Wait>,
    ) -> impl Future<Output = Result<MemberBatch<'m>>> + Send + 'm {
        let (m, b, last) = self.into_parts();
        MemberPollFuture::new(m, Some(b), last, max, wait.into(), None)
    }
}

// Checked when the crate compiles, as the group's futures are.
const _: fn() = || {
    fn assert_send<T: Send>() {}
    assert_send::<MemberPollFuture<'static>>();
    assert_send::<MemberBatch<'static>>();
};

#[cfg(test)]
mod tests {
    //! The Kafka backend's way (no asynchronous calls: the blocking form on a thread of its
    //! own), forced on the in-process broker: the member's handle must outlive such a call.
    use super::super::call::FORCE_BLOCKING;
    use super::super::tests::{block_on, poll_once};
    use crate::{Broker, Error, MemberOptions, Record, TopicConfig, Wait};
    use std::pin::pin;

    #[test]
    fn without_asynchronous_calls_the_blocking_form_runs_on_a_thread() {
        FORCE_BLOCKING.with(|f| f.set(true));
        let b = Broker::new().unwrap();
        b.create_topic("t", &TopicConfig::new().partitions(2))
            .unwrap();
        let m = b.join("t", "g", &MemberOptions::new()).unwrap();
        // A poll completed by a publish from this thread (the poll waits on its own thread).
        {
            let mut f = pin!(m.poll_async(10, Wait::Forever));
            assert!(poll_once(f.as_mut()).is_pending());
            b.publish("t", Record::new(b"a"), Wait::NoWait).unwrap();
            let batch = block_on(f).unwrap();
            assert_eq!(batch.messages()[0].payload(), b"a");
            // Ack-then-poll through the batch, ended by its deadline (the ack made).
            let e = block_on(batch.ack_and_poll_async(10, std::time::Duration::from_millis(5)))
                .unwrap_err();
            assert!(matches!(e, Error::Timeout(_)), "{e:?}");
        }
        // Dropped while its blocking call waits (the drop triggers its token): close waits for
        // that call to return before the handle goes.
        let mut dropped = Box::pin(m.poll_async(10, Wait::Forever));
        assert!(poll_once(dropped.as_mut()).is_pending());
        drop(dropped);
        m.close().unwrap();
        // Leaked while its blocking call waits: close triggers its token and waits for it.
        let m = b.join("t", "g", &MemberOptions::new()).unwrap();
        let mut leaked = Box::pin(m.poll_async(10, Wait::Forever));
        assert!(poll_once(leaked.as_mut()).is_pending());
        std::mem::forget(leaked);
        drop(m);
        // The broker's close ends a blocking call too.
        let m = b.join("t", "g", &MemberOptions::new()).unwrap();
        let mut closed = Box::pin(m.poll_async(10, Wait::Forever));
        assert!(poll_once(closed.as_mut()).is_pending());
        b.close().unwrap();
        assert!(matches!(block_on(closed).unwrap_err(), Error::Closed(_)));
    }
}
