//! Cancellation of blocking calls.
use std::ptr::NonNull;
use std::sync::Arc;

use mq_sys as sys;

use crate::error::{check, Result};

struct RawCancel(NonNull<sys::mq_cancel>);

// SAFETY: mq_cancel_* are thread-safe; the token is freed once, in Drop.
unsafe impl Send for RawCancel {}
unsafe impl Sync for RawCancel {}

impl Drop for RawCancel {
    fn drop(&mut self) {
        // SAFETY: the handle is live and freed exactly once; a call still waiting with it
        // keeps it alive inside the library.
        unsafe { sys::mq_cancel_free(self.0.as_ptr()) }
    }
}

/// Wakes a blocking call from another thread: pass the token to a `*_cancellable` call, call
/// [`cancel`](CancelToken::cancel) from anywhere, and that call returns
/// [`Error::Cancelled`](crate::Error::Cancelled) at once (or as soon as it would wait).
///
/// Clones share one token. The token stays triggered until [`reset`](CancelToken::reset).
/// Like the C token, it wakes one waiter: give it to one blocking call at a time.
///
/// ```
/// use std::time::Duration;
/// # fn main() -> mq::Result<()> {
/// let broker = mq::Broker::new()?;
/// broker.create_topic("t", &mq::TopicConfig::new())?;
/// broker.subscribe_group("t", "g", &mq::GroupOptions::new())?;
/// let token = mq::CancelToken::new()?;
/// let waker = token.clone();
/// std::thread::spawn(move || { std::thread::sleep(Duration::from_millis(10)); waker.cancel() });
/// let mut c = broker.consumer("t", "g", 0)?;
/// let r = c.poll_cancellable(10, mq::Wait::Forever, &token);
/// assert!(matches!(r, Err(mq::Error::Cancelled(_))));
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct CancelToken(Arc<RawCancel>);

impl CancelToken {
    /// A fresh, untriggered token.
    pub fn new() -> Result<CancelToken> {
        let mut p = std::ptr::null_mut();
        // SAFETY: `p` is a valid out-pointer.
        check(unsafe { sys::mq_cancel_new(&mut p) })?;
        let raw = NonNull::new(p).expect("mq_cancel_new returned MQ_OK and NULL");
        Ok(CancelToken(Arc::new(RawCancel(raw))))
    }

    /// Triggers the token: the call waiting with it returns `Cancelled`.
    pub fn cancel(&self) {
        // SAFETY: live handle; thread-safe.
        unsafe { sys::mq_cancel_trigger(self.as_ptr()) }
    }

    /// Clears a triggered token so it can be used again.
    pub fn reset(&self) {
        // SAFETY: live handle; thread-safe.
        unsafe { sys::mq_cancel_reset(self.as_ptr()) }
    }

    /// Whether the token is triggered.
    pub fn is_cancelled(&self) -> bool {
        // SAFETY: live handle; thread-safe.
        unsafe { sys::mq_cancel_is_triggered(self.as_ptr()) != 0 }
    }

    pub(crate) fn as_ptr(&self) -> *mut sys::mq_cancel {
        self.0 .0.as_ptr()
    }
}

impl std::fmt::Debug for CancelToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CancelToken")
            .field("cancelled", &self.is_cancelled())
            .finish()
    }
}

pub(crate) fn ptr(c: Option<&CancelToken>) -> *mut sys::mq_cancel {
    c.map_or(std::ptr::null_mut(), CancelToken::as_ptr)
}
