//! The group's polls as futures (`mq_group_poll_copy_async`, `mq_group_ack_poll_copy_async`):
//! a [`PartitionConsumer`]'s poll and ack-then-poll, and a [`Batch`]'s ack-then-poll, on the
//! copying poll's driver ([`poll_copies`]).
use std::ffi::{c_void, CStr};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use mq_sys as sys;

use super::call::{poll_copies, CallData, CopyPoll, Op};
use crate::broker::Raw;
use crate::cancel::CancelToken;
use crate::consumer::{Batch, PartitionConsumer};
use crate::copy::Copies;
use crate::error::Result;
use crate::wait::Wait;

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
            c.token = Some(op.token().clone());
        }
        Poll::Ready(res.map(|n| Batch::new(c, n)))
    }
}

impl PartitionConsumer {
    /// [`poll`](PartitionConsumer::poll) as a future, on the library's asynchronous poll: a
    /// pending poll holds no thread (see [`Broker::publish_async`](crate::Broker::publish_async)
    /// for what that costs), and any executor can run it. The call starts when the future is
    /// first polled. Dropping the future while the call is pending cancels it; messages it had
    /// already been handed are nacked (handed out again at once). The future is `Send`, as is
    /// the [`Batch`] it returns. On the Kafka backend, which has no asynchronous calls, the
    /// blocking form runs on a thread of its own instead.
    pub fn poll_async(
        &mut self,
        max: usize,
        wait: impl Into<Wait>,
    ) -> impl Future<Output = Result<Batch<'_>>> + Send + '_ {
        PollFuture::new(self, None, max, wait.into(), None)
    }

    /// [`poll_async`](Self::poll_async) that `token` can interrupt
    /// ([`Error::Cancelled`](crate::Error::Cancelled)); dropping the future while its call is
    /// pending triggers `token`.
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

// Every future of this module is `Send` (so `tokio::spawn` takes it), checked when the crate
// compiles; the signatures say `+ Send` too.
const _: fn() = || {
    fn assert_send<T: Send>() {}
    assert_send::<PollFuture<'static>>();
    assert_send::<Batch<'static>>();
};
