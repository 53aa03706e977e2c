//! Push subscriptions as a tokio-fed stream (feature `tokio`).
//!
//! The futures of poll, ack-then-poll, publish and batch publish need no feature and no
//! runtime: they are built on the library's asynchronous calls (see
//! [`Broker::publish_async`] and [`PartitionConsumer::poll_async`](crate::PartitionConsumer::poll_async)).
//!
//! Push subscriptions become a [`Stream`](futures_core::Stream) of owned messages with a
//! bounded buffer: while the buffer is full the handler waits, so the subscription takes no
//! more from the log (back-pressure is preserved). A message counts as handled (and is acked)
//! once it is in the buffer: up to `buffer` messages that were acked but not read are lost when
//! the stream is dropped (at-least-once holds for everything else).
//!
//! [`Broker::subscribe_stream`] may be called anywhere; the stream is read from any executor.
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
use std::pin::Pin;
use std::task::{Context, Poll};

use ::tokio::sync::mpsc;

use crate::error::Result;
use crate::message::{Message, OwnedMessage};
use crate::subscription::{Subscription, SubscriptionOptions};
use crate::Broker;

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

// The stream is `Send` (so `tokio::spawn` takes it), checked when the crate compiles.
const _: fn() = || {
    fn assert_send_type<T: Send>() {}
    assert_send_type::<MessageStream>();
    assert_send_type::<OwnedMessage>();
};
