//! Futures on the C API's asynchronous calls (library 1.4): poll, ack-then-poll, publish and
//! batch publish, with no thread of their own.
//!
//! A future starts its C call (`mq_group_poll_copy_async`, `mq_group_ack_poll_copy_async`,
//! `mq_topic_publish_async`, `mq_topic_publish_batch_async`) on the thread that first polls it.
//! A call that need not wait ends there (the future is ready at once); one that must is
//! parked inside the library, holding no thread, and when it ends the broker's one completer
//! thread (shared by all its pending calls) runs this module's `done` (in [`call`]), which
//! records the status and wakes the task's [`Waker`](std::task::Waker). Any executor works:
//! nothing here needs a runtime.
//!
//! What the library writes into while a call is pending (the copy buffer, the outputs, the
//! records and names) belongs to state shared with `done` (the `user` pointer is a counted
//! reference), so it lives until the call has ended, whenever the future is dropped. Dropping
//! a future whose call is pending triggers the call's [`CancelToken`](crate::CancelToken); a
//! poll that still ended with messages nacks them, so they are handed out again at once rather
//! than after the lease.
//! `done` never lets a panic (a waker's, say) unwind into C.
//!
//! A broker without asynchronous calls (the Kafka backend: they return `MQ_ERR_UNSUPPORTED`)
//! gets the blocking form instead, on a thread of its own that runs `done` when it returns.
//!
//! Where things are: [`call`], what every call shares (the state shared with `done`, one call
//! at a time in an [`Op`](call::Op), the copying poll's driver
//! [`poll_copies`](call::poll_copies), the one call of a publish or a batch publish
//! [`BrokerCall`](call::BrokerCall)); [`poll`], the group's polls; [`publish`], the publish
//! and the batch publish; [`member`], a member's polls (`mq_member_poll_copy_async`,
//! `mq_member_ack_poll_copy_async`), on the same [`Op`](call::Op) and copying-poll driver.
mod call;
pub(crate) mod member;
mod poll;
mod publish;

#[cfg(test)]
mod tests {
    //! The Kafka backend's way (no asynchronous calls: the blocking form on a thread of its
    //! own), forced on the in-process broker.
    use super::call::FORCE_BLOCKING;
    use crate::{Broker, Error, GroupOptions, Record, TopicConfig, Wait};
    use std::future::Future;
    use std::pin::{pin, Pin};
    use std::sync::Arc;
    use std::task::{Context, Poll, Wake, Waker};
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
