//! Push consumption: the library polls on its own threads and calls a Rust handler.
use std::ffi::{c_int, c_void};
use std::fmt::Display;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mq_sys as sys;

use crate::broker::{Broker, Raw};
use crate::error::{check, Error, Result};
use crate::message::Message;
use crate::name;
use crate::report::{panic_text, report, CallbackError, Hook};
use crate::wait::duration_ms;

/// Options of a push subscription.
///
/// ```
/// let opts = mq::SubscriptionOptions::new()
///     .prefetch(64)
///     .on_error(|e| eprintln!("orders: {e}"));
/// # let _ = opts;
/// ```
#[derive(Clone, Default)]
pub struct SubscriptionOptions {
    prefetch: Option<i32>,
    partitions: Option<Vec<i32>>,
    session_timeout_ms: Option<i64>,
    on_error: Option<Hook>,
}

impl std::fmt::Debug for SubscriptionOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SubscriptionOptions")
            .field("prefetch", &self.prefetch)
            .field("partitions", &self.partitions)
            .field("session_timeout_ms", &self.session_timeout_ms)
            .field("on_error", &self.on_error.is_some())
            .finish()
    }
}

impl SubscriptionOptions {
    /// Defaults: prefetch 10, a member of the group (it owns what the group assigns it) with a
    /// 10 s session timeout, failures reported on stderr.
    pub fn new() -> SubscriptionOptions {
        SubscriptionOptions::default()
    }
    /// Messages per poll of each loop (at least 1).
    pub fn prefetch(mut self, n: i32) -> Self {
        self.prefetch = Some(n);
        self
    }
    /// Claims exactly these partitions instead of joining the group as a member.
    pub fn partitions(mut self, p: &[i32]) -> Self {
        self.partitions = Some(p.to_vec());
        self
    }
    /// The session timeout of the group member that a subscription without a
    /// [`partitions`](Self::partitions) list is (library 1.3; default 10 s), as
    /// [`MemberOptions::session_timeout`](crate::MemberOptions::session_timeout): at least
    /// 1 ms and at most 2^40 ms, rounded up to whole milliseconds.
    ///
    /// On a Kafka cluster it bounds how long a crashed process keeps its partitions before the
    /// group moves them to the other members. In-process the subscription's membership lasts
    /// exactly as long as the subscription, so the value is only checked: out of range,
    /// [`Broker::subscribe`] fails with [`Error::Invalid`] naming `session_timeout_ms`.
    ///
    /// ```
    /// # fn main() -> mq::Result<()> {
    /// # let broker = mq::Broker::new()?;
    /// # broker.create_topic("t", &mq::TopicConfig::new())?;
    /// let opts = mq::SubscriptionOptions::new().session_timeout(std::time::Duration::from_secs(3));
    /// let sub = broker.subscribe("t", "g", &opts, |_m: &mq::Message<'_>| Ok::<(), String>(()))?;
    /// # sub.close()?;
    /// let zero = mq::SubscriptionOptions::new().session_timeout(std::time::Duration::ZERO);
    /// let e = broker.subscribe("t", "h", &zero, |_m: &mq::Message<'_>| Ok::<(), String>(()));
    /// assert!(matches!(e, Err(mq::Error::Invalid(_))));
    /// # Ok(()) }
    /// ```
    pub fn session_timeout(mut self, d: Duration) -> Self {
        self.session_timeout_ms = Some(duration_ms(d));
        self
    }
    /// [`session_timeout`](Self::session_timeout) in milliseconds, passed to the library
    /// unchecked (it checks the range).
    pub fn session_timeout_ms(mut self, ms: i64) -> Self {
        self.session_timeout_ms = Some(ms);
        self
    }
    /// Where handler failures (errors and panics) are reported; default stderr. Runs on the
    /// library thread that called the handler.
    pub fn on_error(mut self, f: impl Fn(&CallbackError) + Send + Sync + 'static) -> Self {
        self.on_error = Some(Arc::new(f));
        self
    }
}

struct PushState<F> {
    handler: Mutex<F>,
    on_error: Option<Hook>,
    topic: String,
    group: String,
}

extern "C" fn call_handler<F, E>(user: *mut c_void, msg: *const sys::mq_message) -> c_int
where
    F: FnMut(&Message<'_>) -> std::result::Result<(), E> + Send + 'static,
    E: Display,
{
    // SAFETY: `user` is the PushState this trampoline was registered with; the library keeps
    // it until user_free. `msg` is valid during the call.
    let state = unsafe { &*(user as *const PushState<F>) };
    let raw = unsafe { &*msg };
    let (partition, offset) = (raw.partition, raw.offset);
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: valid during this call, and the &Message cannot escape it (higher-ranked).
        let m = unsafe { Message::from_raw(raw) };
        // A panic in an earlier call poisons the lock; the handler's state is the user's to
        // keep consistent (we assert unwind safety on their behalf, as thread::spawn does).
        let mut h = state.handler.lock().unwrap_or_else(|e| e.into_inner());
        h(m).map_err(|e| e.to_string())
    }));
    let failure = match outcome {
        Ok(Ok(())) => return 0,
        Ok(Err(error)) => CallbackError::Handler {
            topic: state.topic.clone(),
            group: state.group.clone(),
            partition,
            offset,
            error,
        },
        Err(p) => CallbackError::HandlerPanic {
            topic: state.topic.clone(),
            group: state.group.clone(),
            partition,
            offset,
            panic: panic_text(&*p),
        },
    };
    report(state.on_error.as_ref(), failure);
    1
}

extern "C" fn free_state<F>(user: *mut c_void) {
    // SAFETY: called exactly once by the library, after the handler can no longer run.
    let state = unsafe { Box::from_raw(user as *mut PushState<F>) };
    // The user's closure may panic in its Drop: it must not unwind into C.
    let _ = catch_unwind(AssertUnwindSafe(move || drop(state)));
}

/// A running push subscription. Dropping it (or [`close`](Subscription::close)) stops its
/// loops and returns once no handler of it is running; then the handler is dropped.
pub struct Subscription {
    raw: Arc<Raw>,
    ptr: *mut sys::mq_subscription,
    topic: String,
    group: String,
    managed: bool,
}

// SAFETY: mq_subscription_close may be called from any thread (but the handler's own).
unsafe impl Send for Subscription {}
unsafe impl Sync for Subscription {}

impl std::fmt::Debug for Subscription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subscription")
            .field("topic", &self.topic)
            .field("group", &self.group)
            .finish()
    }
}

impl Broker {
    /// Starts a push subscription of `group` to `topic` (subscribing the group at the end of
    /// the log if needed): for each owned partition a library thread polls, calls `handler`
    /// for each message in order and acks it.
    ///
    /// `Ok(())` acks; `Err(e)` nacks (the message and the rest of its batch come again) and
    /// reports `e`; a panic is caught, nacks likewise and is reported as
    /// [`CallbackError::HandlerPanic`]. Handler calls of one subscription are serialised (it is
    /// an `FnMut`), while different partitions are polled on their own threads.
    ///
    /// ```
    /// use std::sync::mpsc;
    /// # fn main() -> mq::Result<()> {
    /// let broker = mq::Broker::new()?;
    /// broker.create_topic("payments", &mq::TopicConfig::new())?;
    /// let (tx, rx) = mpsc::channel();
    /// let sub = broker.subscribe("payments", "ledger", &mq::SubscriptionOptions::new(),
    ///     move |m: &mq::Message<'_>| tx.send(m.payload().to_vec()).map_err(|e| e.to_string()))?;
    /// broker.publish("payments", mq::Record::new(b"pay-1"), mq::Wait::Forever)?;
    /// assert_eq!(rx.recv_timeout(std::time::Duration::from_secs(10)).unwrap(), b"pay-1");
    /// sub.close()?;
    /// # Ok(()) }
    /// ```
    pub fn subscribe<F, E>(
        &self,
        topic: &str,
        group: &str,
        opts: &SubscriptionOptions,
        handler: F,
    ) -> Result<Subscription>
    where
        F: FnMut(&Message<'_>) -> std::result::Result<(), E> + Send + 'static,
        E: Display,
    {
        self.raw().registry.manage(topic, group)?;
        let r = self.open_push(topic, group, opts, handler);
        if r.is_err() {
            self.raw().registry.unmanage(topic, group);
        }
        r
    }

    fn open_push<F, E>(
        &self,
        topic: &str,
        group: &str,
        opts: &SubscriptionOptions,
        handler: F,
    ) -> Result<Subscription>
    where
        F: FnMut(&Message<'_>) -> std::result::Result<(), E> + Send + 'static,
        E: Display,
    {
        let (t, g) = (name::owned(topic)?, name::owned(group)?);
        let mut o = sys::mq_subscription_options::default();
        // SAFETY: valid options of the size passed.
        unsafe { sys::mq_subscription_options_init(&mut o, std::mem::size_of_val(&o)) };
        if let Some(n) = opts.prefetch {
            o.prefetch = n;
        }
        if let Some(p) = &opts.partitions {
            o.partitions = p.as_ptr();
            o.partition_count = p.len();
        }
        if let Some(ms) = opts.session_timeout_ms {
            o.session_timeout_ms = ms;
        }
        let state = Box::into_raw(Box::new(PushState {
            handler: Mutex::new(handler),
            on_error: opts.on_error.clone(),
            topic: topic.to_owned(),
            group: group.to_owned(),
        }));
        let mut sub = std::ptr::null_mut();
        // From here on the library owns `state`: it calls free_state exactly once, on close or
        // before returning a failure.
        // SAFETY: live broker, valid names and options; the trampolines match F and E.
        check(unsafe {
            sys::mq_subscription_open(
                self.raw().as_ptr(),
                t.as_ptr(),
                g.as_ptr(),
                &o,
                Some(call_handler::<F, E>),
                state.cast(),
                Some(free_state::<F>),
                &mut sub,
            )
        })?;
        Ok(Subscription {
            raw: self.raw().clone(),
            ptr: sub,
            topic: topic.to_owned(),
            group: group.to_owned(),
            managed: true,
        })
    }
}

impl Subscription {
    /// Stops the subscription and waits until no handler of it runs.
    /// [`Error::Deadlock`] from inside its own handler (the subscription then closes as soon
    /// as that handler returns, on a helper thread).
    pub fn close(mut self) -> Result<()> {
        self.close_inner()
    }

    fn close_inner(&mut self) -> Result<()> {
        let ptr = std::mem::replace(&mut self.ptr, std::ptr::null_mut());
        if ptr.is_null() {
            return Ok(());
        }
        // SAFETY: live handle, closed once.
        let r = check(unsafe { sys::mq_subscription_close(ptr) });
        match r {
            Err(Error::Deadlock(m)) => {
                // Dropped from inside its own handler: close once that handler has returned.
                let p = SendPtr(ptr);
                let raw = self.raw.clone();
                let (topic, group) = (self.topic.clone(), self.group.clone());
                std::thread::spawn(move || {
                    let p = p;
                    // SAFETY: live handle, closed once, from a thread that is no handler.
                    let _ = unsafe { sys::mq_subscription_close(p.0) };
                    raw.registry.unmanage(&topic, &group);
                });
                self.managed = false;
                Err(Error::Deadlock(m))
            }
            other => {
                if self.managed {
                    self.raw.registry.unmanage(&self.topic, &self.group);
                    self.managed = false;
                }
                other
            }
        }
    }
}

struct SendPtr(*mut sys::mq_subscription);
// SAFETY: the handle is only closed through it, which is thread-safe.
unsafe impl Send for SendPtr {}

impl Drop for Subscription {
    fn drop(&mut self) {
        let _ = self.close_inner();
    }
}

/// Calls a push handler may make about the message it is handling.
pub mod handler {
    use super::*;

    /// Restarts the lease of the messages this handler's loop holds, for work that outlives
    /// the ack timeout. [`Error::Invalid`] outside a push handler.
    pub fn extend_lease() -> Result<()> {
        // SAFETY: no arguments; thread-local to the calling handler.
        check(unsafe { sys::mq_handler_extend_lease() })
    }

    /// If the handler then fails, its nack is delayed by `delay` (this call only).
    /// [`Error::Invalid`] outside a push handler.
    pub fn set_nack_delay(delay: Duration) -> Result<()> {
        set_nack_delay_ms(duration_ms(delay))
    }

    /// [`set_nack_delay`] in milliseconds, passed through unchecked.
    pub fn set_nack_delay_ms(delay_ms: i64) -> Result<()> {
        // SAFETY: no pointers.
        check(unsafe { sys::mq_handler_set_nack_delay(delay_ms) })
    }
}
