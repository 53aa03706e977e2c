//! Async calls for tokio (feature `tokio`).
//!
//! The blocking C calls run on tokio's blocking pool (`spawn_blocking`), never on an executor
//! worker, each with its own [`CancelToken`]: dropping the future triggers the token, so the C
//! call returns within milliseconds instead of waiting out its wait. A poll whose future was
//! dropped after the library had handed it messages nacks them, so they come again at once.
//!
//! Push subscriptions become a [`Stream`](futures_core::Stream) of owned messages with a
//! bounded buffer: while the buffer is full the handler waits, so the subscription takes no
//! more from the log (back-pressure is preserved). A message counts as handled (and is acked)
//! once it is in the buffer: up to `buffer` messages that were acked but not read are lost when
//! the stream is dropped (at-least-once holds for everything else).
//!
//! These functions must be called from within a tokio runtime.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> mq::Result<()> {
//! use futures_util::StreamExt;
//! let broker = mq::Broker::new()?;
//! broker.create_topic("t", &mq::TopicConfig::new())?;
//! broker.subscribe_group("t", "g", &mq::GroupOptions::new())?;
//! let mut stream = broker.subscribe_stream("t", "push", &mq::SubscriptionOptions::new(), 16)?;
//! broker.publish_async("t", mq::Record::new(b"hi"), mq::Wait::Forever).await?;
//! let mut c = broker.consumer("t", "g", 0)?;
//! let batch = c.poll_async(10, std::time::Duration::from_secs(5)).await?;
//! assert_eq!(batch.messages()[0].payload(), b"hi");
//! batch.ack()?;
//! assert_eq!(stream.next().await.unwrap().payload, b"hi");
//! # Ok(()) }
//! ```
use std::ffi::CString;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use ::tokio::sync::{mpsc, oneshot};
use mq_sys as sys;

use crate::broker::Raw;
use crate::cancel::CancelToken;
use crate::consumer::{Batch, PartitionConsumer};
use crate::error::{check, Error, Result};
use crate::message::{Header, Message, OwnedMessage, Published, Record};
use crate::subscription::{Subscription, SubscriptionOptions};
use crate::wait::Wait;
use crate::Broker;

/// Triggers the call's token when the future is dropped before the call returned.
struct CancelOnDrop(Option<CancelToken>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(t) = self.0.take() {
            t.cancel();
        }
    }
}

fn gone() -> Error {
    Error::Internal("the blocking task of an async mq call ended without an answer".into())
}

impl Broker {
    /// [`publish`](Broker::publish) as a future: the record and the topic's name are copied
    /// when this is called (the future borrows nothing, so it can be handed to
    /// `tokio::spawn`), the call runs on the blocking pool when the future is first polled,
    /// and dropping the future cancels it ([`Error::Cancelled`] inside).
    pub fn publish_async(
        &self,
        topic: &str,
        record: Record<'_>,
        wait: impl Into<Wait>,
    ) -> impl Future<Output = Result<Published>> + Send + 'static {
        let wait = wait.into();
        let topic = topic.to_owned();
        let key = record.key_bytes().map(<[u8]>::to_vec);
        let payload = record.payload_bytes().to_vec();
        let headers: Vec<(Vec<u8>, Vec<u8>)> = record
            .header_pairs()
            .map(|(n, v)| (n.to_vec(), v.to_vec()))
            .collect();
        let broker = self.clone();
        // Only owned bytes cross the await: the `Record` and `Header` views (raw pointers)
        // are rebuilt on the blocking thread.
        async move {
            let token = CancelToken::new()?;
            let mut guard = CancelOnDrop(Some(token.clone()));
            let r = ::tokio::task::spawn_blocking(move || {
                let hs: Vec<Header<'_>> = headers.iter().map(|(n, v)| Header::new(n, v)).collect();
                let rec = Record::new(&payload).maybe_key(key.as_deref()).headers(&hs);
                broker.publish_cancellable(&topic, rec, wait, &token)
            })
            .await;
            guard.0 = None;
            r.unwrap_or_else(|_| Err(gone()))
        }
    }
}

/// The consumer's buffer of message views on its way to the blocking half of an async poll
/// and back, with the number of views the poll wrote.
struct Polled {
    buf: Vec<sys::mq_message>,
    n: usize,
}

// SAFETY: while it travels nothing dereferences the views (the C poll only writes them); once
// back, only the consumer the poll belongs to reads them, through a Batch of the first `n`.
unsafe impl Send for Polled {}

impl PartitionConsumer {
    /// [`poll`](PartitionConsumer::poll) as a future: the call runs on the blocking pool, and
    /// dropping the future cancels it (messages it had already been handed are nacked). The
    /// future is `Send`, as is the [`Batch`] it returns.
    pub fn poll_async(
        &mut self,
        max: usize,
        wait: impl Into<Wait>,
    ) -> impl Future<Output = Result<Batch<'_>>> + Send + '_ {
        let wait = wait.into();
        async move {
            let token = CancelToken::new()?;
            let mut guard = CancelOnDrop(Some(token.clone()));
            // The consumer's buffer of raw views travels inside `Polled` (which is `Send`) and
            // only there: a bare `Vec<mq_message>` alive across the await below would make this
            // future `!Send`.
            let mut polled = Polled {
                buf: std::mem::take(&mut self.buf),
                n: 0,
            };
            if polled.buf.len() < max {
                polled.buf.resize(max, sys::mq_message::default());
            }
            let (raw, topic, group, partition) = (
                self.raw.clone(),
                self.topic.clone(),
                self.group.clone(),
                self.partition,
            );
            let (tx, rx) = oneshot::channel::<Result<Polled>>();
            let before = self.claim.before_poll();
            ::tokio::task::spawn_blocking(move || {
                let r = blocking_poll(&raw, &topic, &group, partition, polled, max, wait, &token);
                if let Err(Ok(p)) = tx.send(r) {
                    if p.n > 0 {
                        // Nobody will see these: hand them out again now rather than after the
                        // lease. SAFETY: live broker, valid names.
                        let _ = unsafe {
                            sys::mq_group_nack(
                                raw.as_ptr(),
                                topic.as_ptr(),
                                group.as_ptr(),
                                partition,
                                0,
                            )
                        };
                    }
                }
            });
            let polled = rx.await.unwrap_or_else(|_| Err(gone()));
            guard.0 = None;
            let p = polled?;
            self.buf = p.buf;
            self.batch_from(before, p.n)
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn blocking_poll(
    raw: &Arc<Raw>,
    topic: &CString,
    group: &CString,
    partition: i32,
    mut p: Polled,
    max: usize,
    wait: Wait,
    token: &CancelToken,
) -> Result<Polled> {
    let buf = &mut p.buf;
    let mut n = 0usize;
    // SAFETY: live broker; `buf` has room for `max` messages of the size passed.
    check(unsafe {
        sys::mq_group_poll(
            raw.as_ptr(),
            topic.as_ptr(),
            group.as_ptr(),
            partition,
            buf.as_mut_ptr(),
            std::mem::size_of::<sys::mq_message>(),
            max,
            wait.millis(),
            token.as_ptr(),
            &mut n,
        )
    })?;
    p.n = n;
    Ok(p)
}

impl PartitionConsumer {
    /// Turns `n` freshly polled views in `buf` into a batch (see registry::Claim; `before`
    /// was read before the C poll started).
    fn batch_from(&mut self, before: u64, n: usize) -> Result<Batch<'_>> {
        self.claim.after_poll(before, self.topic(), self.group())?;
        Ok(Batch::new(self, n))
    }
}

/// A push subscription as a [`Stream`](futures_core::Stream) of owned messages, with a bounded
/// buffer (see the [module docs](self)). Dropping it closes the subscription.
pub struct MessageStream {
    // Declared first: the receiver must close before the subscription does (a handler waiting
    // for room must be released, or closing would wait for it forever).
    rx: mpsc::Receiver<OwnedMessage>,
    sub: Option<Subscription>,
}

impl std::fmt::Debug for MessageStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MessageStream")
            .field("sub", &self.sub)
            .finish()
    }
}

impl Broker {
    /// A push subscription whose messages arrive as a stream, at most `buffer` of them waiting
    /// to be read (at least 1).
    pub fn subscribe_stream(
        &self,
        topic: &str,
        group: &str,
        opts: &SubscriptionOptions,
        buffer: usize,
    ) -> Result<MessageStream> {
        let (tx, rx) = mpsc::channel(buffer.max(1));
        let sub = self.subscribe(topic, group, opts, move |m: &Message<'_>| {
            // Runs on a library thread, outside the runtime: blocking here is the back-pressure.
            tx.blocking_send(m.detach())
                .map_err(|_| "the stream was dropped")
        })?;
        Ok(MessageStream { rx, sub: Some(sub) })
    }
}

impl MessageStream {
    /// Closes the subscription (waiting until no handler runs); messages still buffered can
    /// be read afterwards.
    pub fn close(&mut self) -> Result<()> {
        self.rx.close();
        match self.sub.take() {
            Some(s) => s.close(),
            None => Ok(()),
        }
    }
}

impl futures_core::Stream for MessageStream {
    type Item = OwnedMessage;
    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<OwnedMessage>> {
        self.rx.poll_recv(cx)
    }
}

impl Drop for MessageStream {
    fn drop(&mut self) {
        self.rx.close();
        while self.rx.try_recv().is_ok() {}
        drop(self.sub.take());
    }
}

// Every future and stream of this module is `Send` (so `tokio::spawn` takes it), checked when
// the crate compiles. The signatures say `+ Send` too; this also covers what they return and
// the stream, and keeps the check if a signature goes back to `async fn`.
const _: fn() = || {
    fn assert_send<T: Send>(_: &T) {}
    fn assert_send_type<T: Send>() {}
    fn futures(b: &Broker, c: &mut PartitionConsumer) {
        assert_send(&b.publish_async("t", Record::new(b""), Wait::Forever));
        assert_send(&c.poll_async(1, Wait::Forever));
    }
    let _ = futures;
    assert_send_type::<Batch<'static>>();
    assert_send_type::<Result<Published>>();
    assert_send_type::<MessageStream>();
    assert_send_type::<OwnedMessage>();
};
