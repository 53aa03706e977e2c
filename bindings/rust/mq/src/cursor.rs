//! Cursor handles (library 1.7): one group's partition looked up once, for polls and acks that
//! skip the lookups.
use std::ptr::NonNull;

use mq_sys as sys;

use crate::broker::Broker;
use crate::cancel::CancelToken;
use crate::consumer::{Batch, PartitionConsumer};
#[cfg(doc)]
use crate::error::Error;
use crate::error::{check, Result};
use crate::wait::Wait;

/// An open `mq_cursor`, freed when dropped.
pub(crate) struct RawCursor(NonNull<sys::mq_cursor>);

// SAFETY: every call on a cursor is thread-safe; it is freed once, in Drop, when no call can be
// running (its consumer's calls borrow it).
unsafe impl Send for RawCursor {}
unsafe impl Sync for RawCursor {}

impl RawCursor {
    pub(crate) fn as_ptr(&self) -> *mut sys::mq_cursor {
        self.0.as_ptr()
    }
}

impl Drop for RawCursor {
    fn drop(&mut self) {
        // SAFETY: live handle, freed once.
        unsafe { sys::mq_cursor_close(self.0.as_ptr()) }
    }
}

/// Polls and acks one partition for one group, looked up once when it was opened
/// ([`Broker::cursor`], `mq_cursor_open`): each call does what the same call of a
/// [`PartitionConsumer`] does, with the same [`Batch`], results and errors, minus the name
/// lookups. The group's position is one: cursors, consumers and members of the group share it.
///
/// It holds its topic and group, not their names: once the topic is deleted its calls fail
/// with [`Error::NoTopic`], once the group is unsubscribed with [`Error::NoGroup`], even if a
/// topic or group of that name comes back (open a new cursor on it). Once the broker is closed
/// they fail with [`Error::Closed`] (a waiting poll at once). It keeps the broker's memory
/// alive, so it may be dropped before or after the broker.
///
/// The library has handle forms of poll, ack and ack-then-poll only: a batch's
/// [`nack`](Batch::nack), [`extend_lease`](Batch::extend_lease), [`settle`](Batch::settle),
/// [`release_after`](Batch::release_after) and
/// [`ack_and_poll_async`](Batch::ack_and_poll_async) go by the names. In a share group an ack
/// accepts, as [`PartitionConsumer::ack`] does.
///
/// Dropping it (or [`close`](Cursor::close)) frees it; no call of it can be running then (they
/// borrow it).
pub struct Cursor {
    c: PartitionConsumer,
}

impl std::fmt::Debug for Cursor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cursor")
            .field("topic", &self.c.topic)
            .field("group", &self.c.group)
            .field("partition", &self.c.partition)
            .finish()
    }
}

impl Broker {
    /// A cursor on `group`'s `partition` of `topic` (library 1.7). [`Error::NoTopic`],
    /// [`Error::NoGroup`] (the group must be subscribed), [`Error::Partition`],
    /// [`Error::Invalid`] (an illegal name), [`Error::Closed`].
    ///
    /// ```
    /// # fn main() -> mq::Result<()> {
    /// let broker = mq::Broker::new()?;
    /// broker.create_topic("orders", &mq::TopicConfig::new())?;
    /// broker.subscribe_group("orders", "billing", &mq::GroupOptions::new())?;
    /// broker.publish("orders", mq::Record::new(b"o-1"), mq::Wait::NoWait)?;
    /// let mut billing = broker.cursor("orders", "billing", 0)?;
    /// let batch = billing.poll(10, mq::Wait::NoWait)?;
    /// assert_eq!(batch.messages()[0].payload(), b"o-1");
    /// batch.ack()?;
    /// # Ok(()) }
    /// ```
    pub fn cursor(&self, topic: &str, group: &str, partition: i32) -> Result<Cursor> {
        let mut c = self.consumer(topic, group, partition)?;
        let mut p = std::ptr::null_mut();
        // SAFETY: live broker, NUL-terminated names, valid out-pointer.
        check(unsafe {
            sys::mq_cursor_open(
                c.raw.as_ptr(),
                c.topic.as_ptr(),
                c.group.as_ptr(),
                partition,
                &mut p,
            )
        })?;
        c.cursor = Some(RawCursor(
            NonNull::new(p).expect("mq_cursor_open returned MQ_OK and NULL"),
        ));
        Ok(Cursor { c })
    }
}

impl Cursor {
    /// The partition.
    pub fn partition(&self) -> i32 {
        self.c.partition()
    }

    /// The topic's name.
    pub fn topic(&self) -> &str {
        self.c.topic()
    }

    /// The group's name.
    pub fn group(&self) -> &str {
        self.c.group()
    }

    /// [`PartitionConsumer::poll`] through the cursor.
    pub fn poll(&mut self, max: usize, wait: impl Into<Wait>) -> Result<Batch<'_>> {
        self.c.poll(max, wait)
    }

    /// [`PartitionConsumer::poll_cancellable`] through the cursor.
    pub fn poll_cancellable(
        &mut self,
        max: usize,
        wait: impl Into<Wait>,
        token: &CancelToken,
    ) -> Result<Batch<'_>> {
        self.c.poll_cancellable(max, wait, token)
    }

    /// [`PartitionConsumer::ack`] through the cursor.
    pub fn ack(&mut self, offset: i64) -> Result<()> {
        self.c.ack(offset)
    }

    /// [`PartitionConsumer::ack_and_poll`] through the cursor.
    pub fn ack_and_poll(
        &mut self,
        offset: i64,
        max: usize,
        wait: impl Into<Wait>,
    ) -> Result<Batch<'_>> {
        self.c.ack_and_poll(offset, max, wait)
    }

    /// [`PartitionConsumer::ack_and_poll_cancellable`] through the cursor.
    pub fn ack_and_poll_cancellable(
        &mut self,
        offset: i64,
        max: usize,
        wait: impl Into<Wait>,
        token: &CancelToken,
    ) -> Result<Batch<'_>> {
        self.c.ack_and_poll_cancellable(offset, max, wait, token)
    }

    /// Frees the cursor (what dropping it does).
    pub fn close(self) {}
}
