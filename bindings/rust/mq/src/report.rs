//! Failures of user callbacks (push handlers, assignors, rebalance callbacks): they never cross
//! into C and are never lost — each goes to the hook the caller gave, or to stderr.
use std::any::Any;
use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

/// Which callback failed and how.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CallbackError {
    /// A push handler returned an error: its message was nacked.
    Handler {
        /// The subscription's topic.
        topic: String,
        /// The subscription's group.
        group: String,
        /// The message's partition.
        partition: i32,
        /// The message's offset.
        offset: i64,
        /// The handler's error, as text.
        error: String,
    },
    /// A push handler panicked: the panic was caught and its message nacked.
    HandlerPanic {
        /// The subscription's topic.
        topic: String,
        /// The subscription's group.
        group: String,
        /// The message's partition.
        partition: i32,
        /// The message's offset.
        offset: i64,
        /// The panic's payload, as text.
        panic: String,
    },
    /// An assignor panicked: the rebalance fell back to round-robin.
    AssignorPanic {
        /// The panic's payload, as text.
        panic: String,
    },
    /// A rebalance callback panicked (the rebalance itself is not affected).
    RebalancePanic {
        /// The member's id.
        member: String,
        /// The generation it was told of.
        generation: i64,
        /// The panic's payload, as text.
        panic: String,
    },
}

impl fmt::Display for CallbackError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CallbackError::Handler {
                topic,
                group,
                partition,
                offset,
                error,
            } => write!(
                f,
                "handler of {group} on {topic} failed at partition {partition} offset {offset} \
                 (nacked): {error}"
            ),
            CallbackError::HandlerPanic {
                topic,
                group,
                partition,
                offset,
                panic,
            } => write!(
                f,
                "handler of {group} on {topic} panicked at partition {partition} offset \
                 {offset} (nacked): {panic}"
            ),
            CallbackError::AssignorPanic { panic } => {
                write!(f, "assignor panicked (round-robin used instead): {panic}")
            }
            CallbackError::RebalancePanic {
                member,
                generation,
                panic,
            } => write!(
                f,
                "rebalance callback of member {member} panicked at generation {generation}: {panic}"
            ),
        }
    }
}

impl std::error::Error for CallbackError {}

/// Where callback failures go.
pub(crate) type Hook = Arc<dyn Fn(&CallbackError) + Send + Sync>;

pub(crate) fn panic_text(p: &(dyn Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic with a non-string payload".to_owned()
    }
}

/// Sends `e` to `hook`, or to stderr without one (or if the hook itself panics).
pub(crate) fn report(hook: Option<&Hook>, e: CallbackError) {
    if let Some(h) = hook {
        if catch_unwind(AssertUnwindSafe(|| h(&e))).is_ok() {
            return;
        }
        eprintln!("mq: the error hook panicked while reporting: {e}");
        return;
    }
    eprintln!("mq: {e}");
}
