//! Statuses and the [`Error`] type.
use std::ffi::CStr;
use std::fmt;

use mq_sys as sys;

/// A status code of the C API (`mq_status`). A newtype so that a status a later library
/// version adds is representable; [`Status::name`] asks the library for its name.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Status(pub i32);

impl Status {
    /// `MQ_OK`.
    pub const OK: Status = Status(sys::mq_status::MQ_OK.0 as i32);

    /// The constant's name as the library spells it (`"MQ_FULL"`), or `"MQ_UNKNOWN_STATUS"`.
    pub fn name(self) -> &'static str {
        // SAFETY: mq_status_name returns a static NUL-terminated ASCII string for any value.
        unsafe { CStr::from_ptr(sys::mq_status_name(self.0)) }
            .to_str()
            .unwrap_or("MQ_UNKNOWN_STATUS")
    }
}

impl fmt::Debug for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}({})", self.name(), self.0)
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A failed call: one variant per status, each carrying the library's detail message
/// (`mq_last_error`, read on the calling thread in the same call as the failure; for a pending
/// asynchronous call, in its `done` on the broker's completer thread).
///
/// ```
/// # fn main() -> mq::Result<()> {
/// let broker = mq::Broker::new()?;
/// broker.create_topic("orders", &mq::TopicConfig::new())?;
/// match broker.create_topic("orders", &mq::TopicConfig::new()) {
///     Err(mq::Error::Exists(msg)) => assert!(msg.contains("orders")),
///     other => panic!("expected Exists, got {other:?}"),
/// }
/// # Ok(()) }
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// `MQ_TIMEOUT`: nothing to hand out within the wait.
    Timeout(String),
    /// `MQ_FULL`: the partition was still full when the wait ended; nothing was appended.
    Full(String),
    /// `MQ_CLOSED`: the broker is closed (or was closed during the wait).
    Closed(String),
    /// `MQ_CANCELLED`: the call's [`CancelToken`](crate::CancelToken) was triggered (or its
    /// future was dropped).
    Cancelled(String),
    /// `MQ_REBALANCED`: the member's group changed generation; fetch the assignment and go on.
    Rebalanced(String),
    /// `MQ_ERR_INVALID`: a bad argument, name or config.
    Invalid(String),
    /// `MQ_ERR_NO_TOPIC`: no topic of that name.
    NoTopic(String),
    /// `MQ_ERR_NO_GROUP`: no such group on that topic.
    NoGroup(String),
    /// `MQ_ERR_EXISTS`: the topic, group or member id already exists.
    Exists(String),
    /// `MQ_ERR_PARTITION`: partition number out of range.
    Partition(String),
    /// `MQ_ERR_TOO_LARGE`: the message is larger than the broker's maximum or the byte budget.
    TooLarge(String),
    /// `MQ_ERR_NOT_IN_FLIGHT`: ack of an offset not in flight for the group.
    NotInFlight(String),
    /// `MQ_ERR_OWNED`: the partition is owned by someone else (another subscription).
    Owned(String),
    /// `MQ_ERR_DEADLOCK`: a subscription or member was closed from inside its own callback.
    Deadlock(String),
    /// `MQ_ERR_NO_MEMORY`: an allocation failed; nothing changed.
    NoMemory(String),
    /// `MQ_ERR_INTERNAL`: a bug in mq.
    Internal(String),
    /// `MQ_ERR_OUT_OF_RANGE`: seek to an offset outside the retained log.
    OutOfRange(String),
    /// `MQ_ERR_FENCED`: the member does not own the partition in the current generation.
    Fenced(String),
    /// `MQ_ERR_UNSUPPORTED` (library 1.2): the call or option has no meaning on this broker's
    /// backend, or the library was built without that backend — as this binding's own build
    /// of the core is without the Kafka one ([`BrokerOptions::kafka`](crate::BrokerOptions::kafka));
    /// nothing was done.
    Unsupported(String),
    /// `MQ_ERR_BACKEND` (library 1.2): the Kafka cluster refused the request or did not answer
    /// in time; the message carries the cluster's words.
    Backend(String),
    /// A status this version of the binding does not know.
    Unknown {
        /// The status returned.
        status: Status,
        /// The library's detail message.
        message: String,
    },
}

/// `std::result::Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// The error for `status` with the given message.
    pub fn new(status: Status, message: impl Into<String>) -> Error {
        let m = message.into();
        use sys::mq_status as s;
        match sys::mq_status(status.0 as _) {
            s::MQ_TIMEOUT => Error::Timeout(m),
            s::MQ_FULL => Error::Full(m),
            s::MQ_CLOSED => Error::Closed(m),
            s::MQ_CANCELLED => Error::Cancelled(m),
            s::MQ_REBALANCED => Error::Rebalanced(m),
            s::MQ_ERR_INVALID => Error::Invalid(m),
            s::MQ_ERR_NO_TOPIC => Error::NoTopic(m),
            s::MQ_ERR_NO_GROUP => Error::NoGroup(m),
            s::MQ_ERR_EXISTS => Error::Exists(m),
            s::MQ_ERR_PARTITION => Error::Partition(m),
            s::MQ_ERR_TOO_LARGE => Error::TooLarge(m),
            s::MQ_ERR_NOT_IN_FLIGHT => Error::NotInFlight(m),
            s::MQ_ERR_OWNED => Error::Owned(m),
            s::MQ_ERR_DEADLOCK => Error::Deadlock(m),
            s::MQ_ERR_NO_MEMORY => Error::NoMemory(m),
            s::MQ_ERR_INTERNAL => Error::Internal(m),
            s::MQ_ERR_OUT_OF_RANGE => Error::OutOfRange(m),
            s::MQ_ERR_FENCED => Error::Fenced(m),
            s::MQ_ERR_UNSUPPORTED => Error::Unsupported(m),
            s::MQ_ERR_BACKEND => Error::Backend(m),
            // MQ_PENDING (library 1.4) is never the status of an ended call: the futures take
            // it as "the call is parked" and make no error of it.
            _ => Error::Unknown { status, message: m },
        }
    }

    /// The status this error stands for.
    pub fn status(&self) -> Status {
        use sys::mq_status as s;
        let raw = match self {
            Error::Timeout(_) => s::MQ_TIMEOUT,
            Error::Full(_) => s::MQ_FULL,
            Error::Closed(_) => s::MQ_CLOSED,
            Error::Cancelled(_) => s::MQ_CANCELLED,
            Error::Rebalanced(_) => s::MQ_REBALANCED,
            Error::Invalid(_) => s::MQ_ERR_INVALID,
            Error::NoTopic(_) => s::MQ_ERR_NO_TOPIC,
            Error::NoGroup(_) => s::MQ_ERR_NO_GROUP,
            Error::Exists(_) => s::MQ_ERR_EXISTS,
            Error::Partition(_) => s::MQ_ERR_PARTITION,
            Error::TooLarge(_) => s::MQ_ERR_TOO_LARGE,
            Error::NotInFlight(_) => s::MQ_ERR_NOT_IN_FLIGHT,
            Error::Owned(_) => s::MQ_ERR_OWNED,
            Error::Deadlock(_) => s::MQ_ERR_DEADLOCK,
            Error::NoMemory(_) => s::MQ_ERR_NO_MEMORY,
            Error::Internal(_) => s::MQ_ERR_INTERNAL,
            Error::OutOfRange(_) => s::MQ_ERR_OUT_OF_RANGE,
            Error::Fenced(_) => s::MQ_ERR_FENCED,
            Error::Unsupported(_) => s::MQ_ERR_UNSUPPORTED,
            Error::Backend(_) => s::MQ_ERR_BACKEND,
            Error::Unknown { status, .. } => return *status,
        };
        Status(raw.0 as i32)
    }

    /// The library's detail message, e.g. `"offset 7 is not in flight for billing (nothing is)"`.
    pub fn message(&self) -> &str {
        match self {
            Error::Timeout(m)
            | Error::Full(m)
            | Error::Closed(m)
            | Error::Cancelled(m)
            | Error::Rebalanced(m)
            | Error::Invalid(m)
            | Error::NoTopic(m)
            | Error::NoGroup(m)
            | Error::Exists(m)
            | Error::Partition(m)
            | Error::TooLarge(m)
            | Error::NotInFlight(m)
            | Error::Owned(m)
            | Error::Deadlock(m)
            | Error::NoMemory(m)
            | Error::Internal(m)
            | Error::OutOfRange(m)
            | Error::Fenced(m)
            | Error::Unsupported(m)
            | Error::Backend(m) => m,
            Error::Unknown { message, .. } => message,
        }
    }

    /// Builds the error of a failed call from the calling thread's `mq_last_error()`.
    /// Must run on the thread that made the call, before any other mq call.
    #[cold]
    pub(crate) fn last(status: sys::mq_status) -> Error {
        // SAFETY: never NULL; valid until the next failing call on this thread, and copied now.
        let msg = unsafe { CStr::from_ptr(sys::mq_last_error()) };
        Error::new(Status(status.0 as i32), msg.to_string_lossy().into_owned())
    }
}

/// The calling thread's `mq_last_error()`, copied (an asynchronous call's `done` reads it on
/// the completer thread, where the failure was recorded).
pub(crate) fn last_detail() -> String {
    // SAFETY: never NULL; valid until the next failing call on this thread, and copied now.
    unsafe { CStr::from_ptr(sys::mq_last_error()) }
        .to_string_lossy()
        .into_owned()
}

/// Turns a status into a `Result`, reading the detail message at once on failure.
#[inline]
pub(crate) fn check(status: sys::mq_status) -> Result<()> {
    if status == sys::mq_status::MQ_OK {
        Ok(())
    } else {
        Err(Error::last(status))
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.message().is_empty() {
            write!(f, "{}", self.status())
        } else {
            write!(f, "{}: {}", self.status(), self.message())
        }
    }
}

impl std::error::Error for Error {}

/// A batch publish that failed, with how many of its records were appended before it stopped
/// (a prefix of each partition's records; see
/// [`Broker::publish_batch`](crate::Broker::publish_batch)).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BatchError {
    /// Records appended before the batch stopped (0 unless the error is `Full`, `Closed` or
    /// `Cancelled`).
    pub published: usize,
    /// Why it stopped.
    pub error: Error,
}

impl fmt::Display for BatchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({} records published)", self.error, self.published)
    }
}

impl std::error::Error for BatchError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

impl From<BatchError> for Error {
    fn from(e: BatchError) -> Error {
        e.error
    }
}
