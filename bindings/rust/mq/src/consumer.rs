//! Pull consumption of one group partition, with messages copied into the consumer's buffer.
use std::ffi::CStr;
use std::sync::Arc;
use std::time::Duration;

use mq_sys as sys;

use crate::broker::{Broker, Raw};
use crate::cancel::{self, CancelToken};
use crate::copy::Copies;
use crate::cursor::RawCursor;
#[cfg(doc)]
use crate::error::Error;
use crate::error::{check, Result};
use crate::message::Message;
use crate::name;
use crate::wait::{duration_ms, Wait};

/// Where a [`PartitionConsumer::seek`] moves the group's cursor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SeekTo {
    /// This offset (in the retained range `start..=end`).
    Offset(i64),
    /// The oldest retained message: replay everything retained.
    Earliest,
    /// The end of the log: skip everything retained.
    End,
}

/// How [`PartitionConsumer::settle`] settles a message a share group acquired (library 1.6,
/// `mq_settle`). A release after a delay is [`PartitionConsumer::release_after`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Settle {
    /// Done: never handed out again (`MQ_SETTLE_ACCEPT`).
    Accept,
    /// Hand it out again, at once (`MQ_SETTLE_RELEASE`).
    Release,
    /// Never again: to the group's dead-letter topic if it has one (with the same origin
    /// headers as [`GroupOptions::max_deliveries`](crate::GroupOptions::max_deliveries)), else
    /// dropped; counted in [`GroupInfo::rejected`](crate::GroupInfo::rejected)
    /// (`MQ_SETTLE_REJECT`).
    Reject,
    /// Keep it: its lock starts over, for the topic's ack timeout (`MQ_SETTLE_RENEW`).
    Renew,
}

impl Settle {
    fn raw(self) -> i32 {
        use sys::mq_settle as s;
        (match self {
            Settle::Accept => s::MQ_SETTLE_ACCEPT,
            Settle::Release => s::MQ_SETTLE_RELEASE,
            Settle::Reject => s::MQ_SETTLE_REJECT,
            Settle::Renew => s::MQ_SETTLE_RENEW,
        }) as i32
    }
}

/// Consumes one partition for one group: poll, ack, nack, extend the lease, seek; in a share
/// group, settle each acquired message.
///
/// A poll returns a [`Batch`] that borrows the consumer mutably, and its messages borrow the
/// batch: the library copies them into the consumer's buffer (under the lock that keeps them
/// alive), which the next poll reuses (see the [crate docs](crate#message-lifetimes)).
/// Nobody's ack, seek, unsubscribe or deletion can end what a batch reads, so any number of
/// consumers, members and push subscriptions may share a group.
///
/// The consumer keeps the broker's memory alive; if the broker is closed (its last
/// [`Broker`] dropped), calls return [`Error::Closed`].
pub struct PartitionConsumer {
    /// A [`Cursor`](crate::Cursor)'s handle: its polls and acks go through it, not the names.
    pub(crate) cursor: Option<RawCursor>,
    pub(crate) raw: Arc<Raw>,
    pub(crate) topic: Arc<CStr>,
    pub(crate) group: Arc<CStr>,
    pub(crate) partition: i32,
    pub(crate) copies: Copies,
    /// The async polls' cancel token, reused while no future is dropped with its call pending
    /// (such a call keeps its triggered token).
    pub(crate) token: Option<CancelToken>,
}

impl std::fmt::Debug for PartitionConsumer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PartitionConsumer")
            .field("topic", &self.topic)
            .field("group", &self.group)
            .field("partition", &self.partition)
            .finish()
    }
}

impl Broker {
    /// A consumer of `partition` of `topic` for `group` (the group must be subscribed by the
    /// time it polls). [`Error::Invalid`] for a name the library cannot take.
    pub fn consumer(&self, topic: &str, group: &str, partition: i32) -> Result<PartitionConsumer> {
        Ok(PartitionConsumer {
            cursor: None,
            raw: self.raw().clone(),
            topic: name::owned(topic)?.into(),
            group: name::owned(group)?.into(),
            partition,
            copies: Copies::default(),
            token: None,
        })
    }

    /// Exactly [`consumer`](Self::consumer). It used to skip the one-consumer-per-partition
    /// rule that kept message views sound; batches are copies now and the rule is gone.
    ///
    /// # Safety
    ///
    /// None needed any more; kept `unsafe` so existing callers compile unchanged.
    #[deprecated(
        since = "1.3.0",
        note = "batches are copies now: use `Broker::consumer`"
    )]
    pub unsafe fn consumer_unchecked(
        &self,
        topic: &str,
        group: &str,
        partition: i32,
    ) -> Result<PartitionConsumer> {
        self.consumer(topic, group, partition)
    }
}

impl PartitionConsumer {
    /// The partition consumed.
    pub fn partition(&self) -> i32 {
        self.partition
    }

    /// The topic's name.
    pub fn topic(&self) -> &str {
        self.topic.to_str().unwrap_or("")
    }

    /// The group's name.
    pub fn group(&self) -> &str {
        self.group.to_str().unwrap_or("")
    }

    /// Hands out up to `max` messages from the group's `next` offset, starting a lease on
    /// everything in flight. With nothing to hand out it waits up to `wait`, then fails with
    /// [`Error::Timeout`]. Also [`Error::Closed`], [`Error::NoGroup`], [`Error::Invalid`]
    /// (`max` 0), ...
    ///
    /// Steady state allocates nothing: the library copies into the consumer's buffer, which
    /// grows when a message does not fit (or when it, not the log, cut a batch short).
    pub fn poll(&mut self, max: usize, wait: impl Into<Wait>) -> Result<Batch<'_>> {
        self.poll_inner(None, max, wait.into(), None)
    }

    /// [`poll`](Self::poll) that `token` can interrupt ([`Error::Cancelled`]).
    pub fn poll_cancellable(
        &mut self,
        max: usize,
        wait: impl Into<Wait>,
        token: &CancelToken,
    ) -> Result<Batch<'_>> {
        self.poll_inner(None, max, wait.into(), Some(token))
    }

    /// [`ack`](Self::ack) of `offset`, then [`poll`](Self::poll), in one call into the library
    /// (one lock round trip instead of two; the publishers the ack makes room for are woken
    /// once). [`Batch::ack_and_poll`] does this for the batch just handled.
    ///
    /// The ack comes first and stands whatever the poll then finds: after
    /// [`Error::Timeout`] or [`Error::Cancelled`] the offset is acked. A rejected ack polls
    /// nothing and changes nothing: [`Error::NotInFlight`] (with the in-flight range, as
    /// [`ack`](Self::ack)), and no wait. Other errors as [`poll`](Self::poll) (an
    /// [`Error::Closed`] or [`Error::NoTopic`] may come before or after the ack).
    ///
    /// ```
    /// # fn main() -> mq::Result<()> {
    /// # let broker = mq::Broker::new()?;
    /// # broker.create_topic("t", &mq::TopicConfig::new())?;
    /// # broker.subscribe_group("t", "g", &mq::GroupOptions::new())?;
    /// # for p in [b"a", b"b"] { broker.publish("t", mq::Record::new(p), mq::Wait::NoWait)?; }
    /// let mut c = broker.consumer("t", "g", 0)?;
    /// drop(c.poll(1, mq::Wait::NoWait)?); // offset 0 in flight
    /// let batch = c.ack_and_poll(0, 10, mq::Wait::NoWait)?;
    /// assert_eq!(batch.messages()[0].payload(), b"b");
    /// # Ok(()) }
    /// ```
    pub fn ack_and_poll(
        &mut self,
        offset: i64,
        max: usize,
        wait: impl Into<Wait>,
    ) -> Result<Batch<'_>> {
        self.poll_inner(Some(offset), max, wait.into(), None)
    }

    /// [`ack_and_poll`](Self::ack_and_poll) whose poll `token` can interrupt
    /// ([`Error::Cancelled`], the ack made).
    pub fn ack_and_poll_cancellable(
        &mut self,
        offset: i64,
        max: usize,
        wait: impl Into<Wait>,
        token: &CancelToken,
    ) -> Result<Batch<'_>> {
        self.poll_inner(Some(offset), max, wait.into(), Some(token))
    }

    #[inline]
    fn poll_inner(
        &mut self,
        ack: Option<i64>,
        max: usize,
        wait: Wait,
        token: Option<&CancelToken>,
    ) -> Result<Batch<'_>> {
        let (b, t, g, p) = (
            self.raw.as_ptr(),
            self.topic.as_ptr(),
            self.group.as_ptr(),
            self.partition,
        );
        let (cur, ms, c) = (
            self.cursor.as_ref().map(RawCursor::as_ptr),
            wait.millis(),
            cancel::ptr(token),
        );
        let n = self.copies.poll(max, &mut |first, buf, cap, n, needed| {
            // A retry after MQ_ERR_TOO_LARGE polls without the ack: the first call's stands.
            let ack = ack.filter(|_| first);
            // SAFETY: live broker and names, or live cursor (the consumer's); `buf` is `cap`
            // writable, 8-byte aligned bytes.
            unsafe {
                match (cur, ack) {
                    (None, None) => {
                        sys::mq_group_poll_copy(b, t, g, p, buf, cap, max, ms, c, n, needed)
                    }
                    (None, Some(o)) => {
                        sys::mq_group_ack_poll_copy(b, t, g, p, o, buf, cap, max, ms, c, n, needed)
                    }
                    (Some(k), None) => sys::mq_cursor_poll_copy(k, buf, cap, max, ms, c, n, needed),
                    (Some(k), Some(o)) => {
                        sys::mq_cursor_ack_poll_copy(k, o, buf, cap, max, ms, c, n, needed)
                    }
                }
            }
        })?;
        Ok(Batch { c: self, len: n })
    }

    /// Acknowledges every offset up to and including `offset` (cumulative). Needs no batch
    /// alive (`&mut self`): an ack may free what a batch borrows. [`Error::NotInFlight`]
    /// names the in-flight range when `offset` is not in it.
    pub fn ack(&mut self, offset: i64) -> Result<()> {
        // SAFETY: live cursor, or live broker and valid names.
        check(unsafe {
            match &self.cursor {
                Some(k) => sys::mq_cursor_ack(k.as_ptr(), offset),
                None => sys::mq_group_ack(
                    self.raw.as_ptr(),
                    self.topic.as_ptr(),
                    self.group.as_ptr(),
                    self.partition,
                    offset,
                ),
            }
        })
    }

    /// Rewinds the group to its committed offset: what is in flight is handed out again, after
    /// `delay` (zero: at once).
    pub fn nack(&mut self, delay: Duration) -> Result<()> {
        // SAFETY: as above.
        check(unsafe {
            sys::mq_group_nack(
                self.raw.as_ptr(),
                self.topic.as_ptr(),
                self.group.as_ptr(),
                self.partition,
                duration_ms(delay),
            )
        })
    }

    /// [`nack`](Self::nack) with the delay in milliseconds, passed through unchecked (a
    /// negative one is [`Error::Invalid`]).
    pub fn nack_ms(&mut self, delay_ms: i64) -> Result<()> {
        // SAFETY: as above.
        check(unsafe {
            sys::mq_group_nack(
                self.raw.as_ptr(),
                self.topic.as_ptr(),
                self.group.as_ptr(),
                self.partition,
                delay_ms,
            )
        })
    }

    /// Restarts the lease of what is in flight ([`Error::NotInFlight`] if nothing is).
    pub fn extend_lease(&self) -> Result<()> {
        // SAFETY: as above.
        check(unsafe {
            sys::mq_group_extend_lease(
                self.raw.as_ptr(),
                self.topic.as_ptr(),
                self.group.as_ptr(),
                self.partition,
            )
        })
    }

    /// Settles one message a poll of this share group acquired (library 1.6,
    /// `mq_share_settle`): `offset` and `delivery_count` are the message's as the poll handed
    /// it out ([`Message::offset`], [`Message::delivery_count`]). The delivery count is the
    /// fencing token: once the lock ran out and another poll acquired the message, the old
    /// acquisition's settlement is refused. Settlements may come in any order and from any
    /// thread; never blocks.
    ///
    /// [`Error::NotInFlight`] when that acquisition does not hold the message (never handed
    /// out, already settled or released, its lock ran out, or acquired again since; the
    /// message says which), [`Error::Invalid`] when the group is not a share group,
    /// [`Error::NoGroup`], [`Error::NoTopic`], [`Error::Partition`], [`Error::Closed`],
    /// [`Error::Unsupported`] on the Kafka backend.
    ///
    /// ```
    /// # fn main() -> mq::Result<()> {
    /// # let broker = mq::Broker::new()?;
    /// # broker.create_topic("jobs", &mq::TopicConfig::new())?;
    /// broker.subscribe_group("jobs", "workers", &mq::GroupOptions::new().share(mq::ShareMode::All))?;
    /// broker.publish("jobs", mq::Record::new(b"resize"), mq::Wait::NoWait)?;
    /// let mut c = broker.consumer("jobs", "workers", 0)?;
    /// let (offset, count) = {
    ///     let batch = c.poll(10, mq::Wait::NoWait)?;
    ///     (batch.messages()[0].offset(), batch.messages()[0].delivery_count())
    /// };
    /// c.settle(offset, count, mq::Settle::Accept)?;
    /// assert!(matches!(
    ///     c.settle(offset, count, mq::Settle::Accept),
    ///     Err(mq::Error::NotInFlight(_))
    /// ));
    /// # Ok(()) }
    /// ```
    pub fn settle(&self, offset: i64, delivery_count: u32, action: Settle) -> Result<()> {
        self.settle_ms(offset, delivery_count, action, 0)
    }

    /// [`settle`](Self::settle) with [`Settle::Release`] after `delay`: the message is handed
    /// out again once the broker clock has moved on by `delay` (rounded up to whole
    /// milliseconds; zero is a plain release). Counted in
    /// [`GroupInfo::delayed`](crate::GroupInfo::delayed) meanwhile.
    pub fn release_after(&self, offset: i64, delivery_count: u32, delay: Duration) -> Result<()> {
        self.settle_ms(offset, delivery_count, Settle::Release, duration_ms(delay))
    }

    /// [`settle`](Self::settle) with the delay in milliseconds, passed through unchecked: the
    /// library takes a delay with [`Settle::Release`] only, and refuses a negative one or one
    /// with another action ([`Error::Invalid`]).
    pub fn settle_ms(
        &self,
        offset: i64,
        delivery_count: u32,
        action: Settle,
        delay_ms: i64,
    ) -> Result<()> {
        // SAFETY: as above.
        check(unsafe {
            sys::mq_share_settle(
                self.raw.as_ptr(),
                self.topic.as_ptr(),
                self.group.as_ptr(),
                self.partition,
                offset,
                delivery_count,
                action.raw(),
                delay_ms,
            )
        })
    }

    /// Moves the group's cursor (committed = next): replay or skip. What was in flight is
    /// forgotten. [`Error::OutOfRange`] outside the retained log.
    pub fn seek(&mut self, to: SeekTo) -> Result<()> {
        let offset = match to {
            SeekTo::Offset(o) => o,
            SeekTo::Earliest => sys::MQ_OFFSET_EARLIEST,
            SeekTo::End => sys::MQ_OFFSET_END,
        };
        // SAFETY: as above.
        check(unsafe {
            sys::mq_group_seek(
                self.raw.as_ptr(),
                self.topic.as_ptr(),
                self.group.as_ptr(),
                self.partition,
                offset,
            )
        })
    }
}

/// The messages of one poll, copied into the consumer's buffer and borrowed from the batch.
///
/// [`ack`](Batch::ack) acknowledges them (through the last one) and consumes the batch, handing
/// the consumer back for the next poll; [`nack`](Batch::nack) hands them out again. Dropping
/// the batch leaves them in flight: the lease runs out and they are delivered again.
///
/// ```
/// # fn main() -> mq::Result<()> {
/// # let broker = mq::Broker::new()?;
/// # broker.create_topic("t", &mq::TopicConfig::new())?;
/// # broker.subscribe_group("t", "g", &mq::GroupOptions::new())?;
/// # broker.publish("t", mq::Record::new(b"hello"), mq::Wait::NoWait)?;
/// let mut c = broker.consumer("t", "g", 0)?;
/// let batch = c.poll(16, mq::Wait::NoWait)?;
/// let copies: Vec<mq::OwnedMessage> = batch.iter().map(|m| m.detach()).collect();
/// batch.ack()?;
/// assert_eq!(copies[0].payload, b"hello"); // the copies outlive the ack
/// # Ok(()) }
/// ```
pub struct Batch<'c> {
    c: &'c mut PartitionConsumer,
    len: usize,
}

impl<'c> Batch<'c> {
    /// The messages, in partition order. They borrow the batch.
    pub fn messages(&self) -> &[Message<'_>] {
        // SAFETY: the views point into the consumer's buffer, which only its next poll (needing
        // `&mut`, so no batch alive) changes.
        unsafe { Message::slice(&self.c.copies.messages()[..self.len]) }
    }

    /// Iterates over the messages.
    pub fn iter(&self) -> std::slice::Iter<'_, Message<'_>> {
        self.messages().iter()
    }

    /// Number of messages.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the poll handed out nothing (only possible after dead-lettering).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The offset of the last message, if any.
    pub fn last_offset(&self) -> Option<i64> {
        self.c.copies.messages()[..self.len]
            .last()
            .map(|m| m.offset)
    }

    /// Acknowledges the whole batch (a cumulative ack of its last offset).
    pub fn ack(self) -> Result<()> {
        match self.last_offset() {
            Some(o) => self.ack_through(o),
            None => Ok(()),
        }
    }

    /// Acknowledges every offset up to and including `offset`, ending the batch. Messages
    /// after it stay in flight (ack them later with [`PartitionConsumer::ack`]).
    pub fn ack_through(self, offset: i64) -> Result<()> {
        let c = self.release();
        c.ack(offset)
    }

    /// Acknowledges the whole batch and polls again, in one call into the library (see
    /// [`PartitionConsumer::ack_and_poll`]): the batch ends with the ack, the next one borrows
    /// the consumer in its place. An empty batch acks nothing and just polls.
    ///
    /// ```
    /// # fn main() -> mq::Result<()> {
    /// # let broker = mq::Broker::new()?;
    /// # broker.create_topic("t", &mq::TopicConfig::new())?;
    /// # broker.subscribe_group("t", "g", &mq::GroupOptions::new())?;
    /// # for i in 0..10u8 { broker.publish("t", mq::Record::new(&[i]), mq::Wait::NoWait)?; }
    /// let mut c = broker.consumer("t", "g", 0)?;
    /// let mut seen = Vec::new();
    /// let mut batch = c.poll(4, mq::Wait::NoWait)?;
    /// loop {
    ///     seen.extend(batch.iter().map(|m| m.payload()[0]));
    ///     match batch.ack_and_poll(4, mq::Wait::NoWait) {
    ///         Ok(next) => batch = next,
    ///         Err(mq::Error::Timeout(_)) => break, // the last batch is acked
    ///         Err(e) => return Err(e),
    ///     }
    /// }
    /// assert_eq!(seen, (0..10).collect::<Vec<u8>>());
    /// assert_eq!(broker.group_info("t", "g", 0)?.committed, 10);
    /// # Ok(()) }
    /// ```
    pub fn ack_and_poll(self, max: usize, wait: impl Into<Wait>) -> Result<Batch<'c>> {
        let last = self.last_offset();
        self.release().poll_inner(last, max, wait.into(), None)
    }

    /// [`ack_and_poll`](Self::ack_and_poll) whose poll `token` can interrupt
    /// ([`Error::Cancelled`], the batch acked).
    pub fn ack_and_poll_cancellable(
        self,
        max: usize,
        wait: impl Into<Wait>,
        token: &CancelToken,
    ) -> Result<Batch<'c>> {
        let last = self.last_offset();
        self.release()
            .poll_inner(last, max, wait.into(), Some(token))
    }

    /// Hands the in-flight messages out again, after `delay`.
    pub fn nack(self, delay: Duration) -> Result<()> {
        let c = self.release();
        c.nack(delay)
    }

    /// Restarts the lease of the in-flight messages; the batch stays usable.
    pub fn extend_lease(&self) -> Result<()> {
        self.c.extend_lease()
    }

    /// Share groups (library 1.6): settles `message` (one of this batch's) with its offset and
    /// delivery count, as [`PartitionConsumer::settle`]; the batch stays usable, so its
    /// messages can be settled one by one, in any order.
    ///
    /// In a share group settle each message: [`ack`](Self::ack) accepts only the batch's last
    /// message (an ack there is not cumulative) and [`nack`](Self::nack) releases every
    /// message the group holds on the partition, other consumers' too.
    ///
    /// ```
    /// # fn main() -> mq::Result<()> {
    /// # let broker = mq::Broker::new()?;
    /// # broker.create_topic("jobs", &mq::TopicConfig::new())?;
    /// let opts = mq::GroupOptions::new().share(mq::ShareMode::All);
    /// broker.subscribe_group("jobs", "workers", &opts)?;
    /// for job in [&b"ok"[..], b"bad", b"later"] {
    ///     broker.publish("jobs", mq::Record::new(job), mq::Wait::NoWait)?;
    /// }
    /// let mut c = broker.consumer("jobs", "workers", 0)?;
    /// let batch = c.poll(10, mq::Wait::NoWait)?;
    /// for m in &batch {
    ///     match m.payload() {
    ///         b"ok" => batch.settle(m, mq::Settle::Accept)?,
    ///         b"bad" => batch.settle(m, mq::Settle::Reject)?,
    ///         _ => batch.release_after(m, std::time::Duration::from_secs(30))?,
    ///     }
    /// }
    /// drop(batch);
    /// let info = broker.group_info("jobs", "workers", 0)?;
    /// assert_eq!((info.acquired, info.rejected, info.delayed), (0, 1, 1));
    /// # Ok(()) }
    /// ```
    pub fn settle(&self, message: &Message<'_>, action: Settle) -> Result<()> {
        self.c
            .settle(message.offset(), message.delivery_count(), action)
    }

    /// [`settle`](Self::settle) with a release after `delay`, as
    /// [`PartitionConsumer::release_after`].
    pub fn release_after(&self, message: &Message<'_>, delay: Duration) -> Result<()> {
        self.c
            .release_after(message.offset(), message.delivery_count(), delay)
    }
}

impl<'c> Batch<'c> {
    /// A batch of the first `n` messages of the consumer's buffer.
    pub(crate) fn new(c: &'c mut PartitionConsumer, n: usize) -> Batch<'c> {
        Batch { c, len: n }
    }

    /// Ends the batch without running its Drop, handing back the consumer it borrowed.
    pub(crate) fn release(self) -> &'c mut PartitionConsumer {
        let this = std::mem::ManuallyDrop::new(self);
        // SAFETY: `this` is never used or dropped again, so moving its exclusive borrow out is
        // a move, not a copy.
        unsafe { std::ptr::read(&this.c) }
    }
}

// Nothing to do (the batch is a copy the next poll overwrites); the impl exists because
// `drop(batch)` is how a program ends a batch's borrow early (the docs do it), and without a
// Drop impl clippy's drop_non_drop would flag every such call in programs that did so before.
impl Drop for Batch<'_> {
    fn drop(&mut self) {}
}

impl<'b> IntoIterator for &'b Batch<'_> {
    type Item = &'b Message<'b>;
    type IntoIter = std::slice::Iter<'b, Message<'b>>;
    fn into_iter(self) -> Self::IntoIter {
        self.messages().iter()
    }
}

impl std::fmt::Debug for Batch<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}
