//! How long a blocking call may wait.
use std::time::Duration;

/// The longest wait the library accepts (2^40 ms, about 35 years); longer waits are
/// [`Wait::Forever`].
const MAX_WAIT_MS: u128 = 1 << 40;

/// How long a blocking call (publish into a full partition, poll of an empty one) may wait.
///
/// Anything that converts into `Wait` is accepted: a [`Duration`] (rounded up to whole
/// milliseconds, so a short wait never becomes "don't wait"), or an `Option<Duration>` where
/// `None` waits forever.
///
/// ```
/// use std::time::Duration;
/// use mq::Wait;
/// assert_eq!(Wait::from(Duration::from_micros(1500)), Wait::For(Duration::from_micros(1500)));
/// assert_eq!(Wait::from(None::<Duration>), Wait::Forever);
/// assert_eq!(Wait::from(Duration::ZERO), Wait::NoWait);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Wait {
    /// Do not block: fail with `Full` / `Timeout` at once.
    #[default]
    NoWait,
    /// Block until the call can complete, the broker closes or the call is cancelled.
    Forever,
    /// Block for at most this long.
    For(Duration),
}

impl Wait {
    /// A wait given in the C API's milliseconds: `-1` waits forever, `0` does not wait, a
    /// positive number waits that long. Any other value is [`Error::Invalid`](crate::Error).
    ///
    /// ```
    /// use mq::Wait;
    /// assert_eq!(Wait::from_millis(-1)?, Wait::Forever);
    /// assert!(Wait::from_millis(-2).is_err());
    /// # Ok::<(), mq::Error>(())
    /// ```
    pub fn from_millis(ms: i64) -> crate::Result<Wait> {
        match ms {
            -1 => Ok(Wait::Forever),
            0 => Ok(Wait::NoWait),
            ms if ms > 0 => Ok(Wait::For(Duration::from_millis(ms as u64))),
            ms => Err(crate::Error::Invalid(format!(
                "wait {ms} ms: a wait is 0 (do not wait), -1 (forever) or a positive number of \
                 milliseconds"
            ))),
        }
    }

    /// The `wait_ms` argument of the C API.
    pub(crate) fn millis(self) -> i64 {
        match self {
            Wait::NoWait => mq_sys::MQ_NO_WAIT,
            Wait::Forever => mq_sys::MQ_WAIT_FOREVER,
            Wait::For(d) => {
                let ms = d.as_nanos().div_ceil(1_000_000);
                if ms > MAX_WAIT_MS {
                    mq_sys::MQ_WAIT_FOREVER
                } else {
                    ms as i64
                }
            }
        }
    }
}

impl From<Duration> for Wait {
    fn from(d: Duration) -> Wait {
        if d.is_zero() {
            Wait::NoWait
        } else {
            Wait::For(d)
        }
    }
}

impl From<Option<Duration>> for Wait {
    fn from(d: Option<Duration>) -> Wait {
        d.map_or(Wait::Forever, Wait::from)
    }
}

/// Converts a delay or duration to the library's milliseconds, rounding up and saturating (the
/// library refuses values above 2^40 ms with `Invalid`).
pub(crate) fn duration_ms(d: Duration) -> i64 {
    i64::try_from(d.as_nanos().div_ceil(1_000_000)).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_round_up_and_saturate() {
        assert_eq!(Wait::NoWait.millis(), 0);
        assert_eq!(Wait::Forever.millis(), -1);
        assert_eq!(Wait::For(Duration::from_nanos(1)).millis(), 1);
        assert_eq!(Wait::For(Duration::from_millis(250)).millis(), 250);
        assert_eq!(Wait::For(Duration::MAX).millis(), -1);
        assert_eq!(duration_ms(Duration::from_micros(1001)), 2);
    }
}
