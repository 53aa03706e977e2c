//! Publisher handles (library 1.7): a topic looked up once, for publishes that skip the lookup.
use std::ptr::NonNull;
use std::sync::Arc;

use mq_sys as sys;

use crate::broker::{check_results, Broker, Raw, Target};
use crate::cancel::CancelToken;
#[cfg(doc)]
use crate::error::Error;
use crate::error::{check, BatchError, Result};
use crate::message::{Published, Record};
use crate::name::with_name;
use crate::wait::Wait;

/// Publishes to one topic, looked up once when it was opened ([`Broker::publisher`],
/// `mq_publisher_open`): each call does what [`Broker::publish`] and its siblings do for that
/// topic, with the same results and errors, minus the name lookup.
///
/// It holds its topic, not the name: once the topic is deleted its calls fail with
/// [`Error::NoTopic`], even if a topic of that name is created again (open a new publisher on
/// it). Once the broker is closed they fail with [`Error::Closed`]. Like the other things made
/// from a broker it keeps the broker's memory alive, so it may be dropped before or after the
/// broker.
///
/// `Send + Sync`: share one between threads (its calls take `&self`) or open one per thread.
/// Dropping it (or [`close`](Publisher::close)) frees it; no call of it can be running then.
pub struct Publisher {
    ptr: NonNull<sys::mq_publisher>,
    topic: String,
    // After `ptr` is freed: the clock and callbacks the broker may use live as long as it.
    _raw: Arc<Raw>,
}

// SAFETY: every call on a publisher is thread-safe; it is freed once, in Drop, when no call can
// be running (they borrow it).
unsafe impl Send for Publisher {}
unsafe impl Sync for Publisher {}

impl std::fmt::Debug for Publisher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Publisher")
            .field("topic", &self.topic)
            .finish()
    }
}

impl Broker {
    /// A publisher of `topic` (library 1.7). [`Error::NoTopic`], [`Error::Invalid`] (an
    /// illegal name), [`Error::Closed`].
    ///
    /// ```
    /// # fn main() -> mq::Result<()> {
    /// let broker = mq::Broker::new()?;
    /// broker.create_topic("orders", &mq::TopicConfig::new())?;
    /// broker.subscribe_group("orders", "billing", &mq::GroupOptions::new())?;
    /// let orders = broker.publisher("orders")?;
    /// let at = orders.publish(mq::Record::new(b"o-1"), mq::Wait::NoWait)?;
    /// assert_eq!((at.partition, at.offset), (0, 0));
    /// # Ok(()) }
    /// ```
    pub fn publisher(&self, topic: &str) -> Result<Publisher> {
        let mut p = std::ptr::null_mut();
        with_name(topic, |t| {
            // SAFETY: live broker, NUL-terminated name, valid out-pointer.
            check(unsafe { sys::mq_publisher_open(self.raw().as_ptr(), t, &mut p) })
        })?;
        Ok(Publisher {
            ptr: NonNull::new(p).expect("mq_publisher_open returned MQ_OK and NULL"),
            topic: topic.to_owned(),
            _raw: self.raw().clone(),
        })
    }
}

impl Publisher {
    /// The topic's name.
    pub fn topic(&self) -> &str {
        &self.topic
    }

    fn target(&self) -> Target {
        Target::Publisher(self.ptr.as_ptr())
    }

    /// [`Broker::publish`] on the publisher's topic.
    pub fn publish(&self, record: Record<'_>, wait: impl Into<Wait>) -> Result<Published> {
        self.target().publish(&record, wait.into(), None)
    }

    /// [`Broker::publish_cancellable`] on the publisher's topic.
    pub fn publish_cancellable(
        &self,
        record: Record<'_>,
        wait: impl Into<Wait>,
        token: &CancelToken,
    ) -> Result<Published> {
        self.target().publish(&record, wait.into(), Some(token))
    }

    /// [`Broker::publish_batch`] on the publisher's topic.
    pub fn publish_batch(
        &self,
        records: &[Record<'_>],
        wait: impl Into<Wait>,
    ) -> Result<(), BatchError> {
        self.target()
            .publish_batch(records, wait.into(), None, None)
    }

    /// [`Broker::publish_batch_with`] on the publisher's topic.
    pub fn publish_batch_with(
        &self,
        records: &[Record<'_>],
        wait: impl Into<Wait>,
        token: Option<&CancelToken>,
        results: &mut [Published],
    ) -> Result<(), BatchError> {
        check_results(records, results)?;
        self.target()
            .publish_batch(records, wait.into(), token, Some(results))
    }

    /// Frees the publisher (what dropping it does). A closed publisher cannot be called:
    ///
    /// ```compile_fail
    /// # fn main() -> mq::Result<()> {
    /// # let broker = mq::Broker::new()?;
    /// # broker.create_topic("t", &mq::TopicConfig::new())?;
    /// let p = broker.publisher("t")?;
    /// p.close();
    /// p.publish(mq::Record::new(b"x"), mq::Wait::NoWait)?; // error[E0382]: use of moved value
    /// # Ok(()) }
    /// ```
    pub fn close(self) {}
}

impl Drop for Publisher {
    fn drop(&mut self) {
        // SAFETY: live handle, freed once; no call borrows it any more.
        unsafe { sys::mq_publisher_close(self.ptr.as_ptr()) }
    }
}
