//! What this binding must know to keep message views sound: which group partitions a
//! [`PartitionConsumer`](crate::PartitionConsumer) holds, and which groups are driven by push
//! subscriptions or members (whose acks could end a consumer's views behind its back).
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::error::{Error, Result};

/// Shared between a consumer and the registry: how a poll and a call that may free the
/// group's views (unsubscribing the group, deleting its topic) keep out of each other's way.
///
/// `holding` is set while a batch of views is alive. `seq` counts the starts and ends of those
/// calls (odd while one is deciding), and `why` says which it is. A poll reads `seq` before its
/// C call, stores `holding` after it, and reads `seq` again; it keeps its views only if both
/// reads are the same even number. The call increments `seq`, then reads `holding`, and runs
/// only if it is clear. All SeqCst: if the call started (its increment) before the poll's
/// second read, the poll gives up its views, unless the call had also ended before the poll's
/// first read, and then the C poll started after the call took effect and handed out nothing
/// it could free. If the call started after the poll's second read, it sees `holding` and
/// refuses. (A single flag set during the call is not enough: a poll whose C call returned just
/// before the call ran could store `holding` after the call had ended and keep dead views.)
#[derive(Default)]
pub(crate) struct Claim {
    pub(crate) holding: AtomicBool,
    seq: AtomicU64,
    why: AtomicU8,
}

/// What a [`Claim`]'s last view-ending call was.
const UNSUBSCRIBE: u8 = 0;
const DELETE: u8 = 1;

impl Claim {
    /// Read before the C poll.
    pub(crate) fn before_poll(&self) -> u64 {
        self.seq.load(Ordering::SeqCst)
    }

    /// After a C poll that handed out views: marks them alive, or gives them up (the error to
    /// return) when a call that may free them ran or was running (`before` from
    /// [`before_poll`](Self::before_poll)).
    pub(crate) fn after_poll(&self, before: u64, topic: &str, group: &str) -> Result<()> {
        self.holding.store(true, Ordering::SeqCst);
        let now = self.seq.load(Ordering::SeqCst);
        if now == before && now % 2 == 0 {
            return Ok(());
        }
        self.holding.store(false, Ordering::SeqCst);
        Err(if self.why.load(Ordering::SeqCst) == DELETE {
            Error::NoTopic(format!(
                "topic {topic} was being deleted while this poll of group {group} returned; its                  messages were not handed out"
            ))
        } else {
            Error::NoGroup(format!(
                "group {group} of {topic} was being unsubscribed while this poll returned; its                  messages stay in flight"
            ))
        })
    }
}

#[derive(Default)]
struct Group {
    consumers: HashMap<i32, Arc<Claim>>,
    managed: usize,
}

#[derive(Default)]
pub(crate) struct Registry(Mutex<HashMap<(String, String), Group>>);

impl Registry {
    fn lock(&self) -> MutexGuard<'_, HashMap<(String, String), Group>> {
        // The map stays consistent across a panic (each change is one insert or remove).
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn claim(&self, topic: &str, group: &str, partition: i32) -> Result<Arc<Claim>> {
        let mut map = self.lock();
        let g = map.entry((topic.to_owned(), group.to_owned())).or_default();
        if g.managed > 0 {
            return Err(Error::Owned(format!(
                "group {group} of {topic} is driven by {} push subscription(s) or member(s) in \
                 this process; a PartitionConsumer of the same group could have its message \
                 views freed by their acks: close them first or use another group",
                g.managed
            )));
        }
        if g.consumers.contains_key(&partition) {
            return Err(Error::Owned(format!(
                "partition {partition} of {topic} already has a PartitionConsumer for group \
                 {group} in this process (one per group and partition: its acks would free the \
                 other's views); use that one or drop it first"
            )));
        }
        let c = Arc::new(Claim::default());
        g.consumers.insert(partition, c.clone());
        Ok(c)
    }

    pub(crate) fn release(&self, topic: &str, group: &str, partition: i32) {
        let mut map = self.lock();
        let key = (topic.to_owned(), group.to_owned());
        if let Some(g) = map.get_mut(&key) {
            g.consumers.remove(&partition);
            if g.consumers.is_empty() && g.managed == 0 {
                map.remove(&key);
            }
        }
    }

    /// Counts a push subscription or member of the group; refused while consumers hold it.
    pub(crate) fn manage(&self, topic: &str, group: &str) -> Result<()> {
        let mut map = self.lock();
        let g = map.entry((topic.to_owned(), group.to_owned())).or_default();
        if let Some(p) = g.consumers.keys().min() {
            return Err(Error::Owned(format!(
                "group {group} of {topic} has a PartitionConsumer in this process (partition \
                 {p}); a push subscription or member of the same group could free its views \
                 with their acks: drop the consumer first or use another group"
            )));
        }
        g.managed += 1;
        Ok(())
    }

    pub(crate) fn unmanage(&self, topic: &str, group: &str) {
        let mut map = self.lock();
        let key = (topic.to_owned(), group.to_owned());
        if let Some(g) = map.get_mut(&key) {
            g.managed = g.managed.saturating_sub(1);
            if g.consumers.is_empty() && g.managed == 0 {
                map.remove(&key);
            }
        }
    }

    /// Runs `f` (the unsubscribe) unless a consumer of the group holds a batch of views.
    pub(crate) fn while_no_views<R>(
        &self,
        topic: &str,
        group: &str,
        f: impl FnOnce() -> Result<R>,
    ) -> Result<R> {
        self.while_none_hold(|t, g| t == topic && g == group, UNSUBSCRIBE, f)
    }

    /// Runs `f` (the deletion) unless a consumer of any group of the topic holds a batch.
    pub(crate) fn while_no_views_on_topic<R>(
        &self,
        topic: &str,
        f: impl FnOnce() -> Result<R>,
    ) -> Result<R> {
        self.while_none_hold(|t, _| t == topic, DELETE, f)
    }

    /// Runs `f` unless a consumer of a group `which` selects holds a batch of views (see
    /// [`Claim`]); the registry's lock is held throughout, so no consumer is made meanwhile.
    fn while_none_hold<R>(
        &self,
        which: impl Fn(&str, &str) -> bool,
        why: u8,
        f: impl FnOnce() -> Result<R>,
    ) -> Result<R> {
        let map = self.lock();
        let claims: Vec<(&(String, String), i32, &Arc<Claim>)> = map
            .iter()
            .filter(|((t, g), _)| which(t, g))
            .flat_map(|(k, g)| g.consumers.iter().map(move |(p, c)| (k, *p, c)))
            .collect();
        for (_, _, c) in &claims {
            c.why.store(why, Ordering::SeqCst);
            c.seq.fetch_add(1, Ordering::SeqCst);
        }
        let busy = claims
            .iter()
            .find(|(_, _, c)| c.holding.load(Ordering::SeqCst));
        let r = match busy {
            Some(((topic, group), p, _)) => Err(Error::Owned(format!(
                "a batch of messages of group {group} on partition {p} of {topic} is alive (views                  into the log that {} would free): ack or drop it first",
                if why == DELETE {
                    "deleting the topic"
                } else {
                    "unsubscribing"
                }
            ))),
            None => f(),
        };
        for (_, _, c) in &claims {
            c.seq.fetch_add(1, Ordering::SeqCst);
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The interleaving a flag set only during the call lets through: the C poll returns its
    /// views, the whole unsubscribe (or deletion) runs, and only then does the poll mark its
    /// views alive. The poll must give them up.
    #[test]
    fn a_poll_that_returned_before_a_whole_unsubscribe_gives_up_its_views() {
        let r = Registry::default();
        let c = r.claim("t", "g", 0).unwrap();
        let before = c.before_poll();
        // ... the C poll hands out views here ...
        let mut ran = false;
        r.while_no_views("t", "g", || {
            ran = true;
            Ok(())
        })
        .unwrap();
        assert!(ran, "nothing held views when the unsubscribe looked");
        assert!(matches!(
            c.after_poll(before, "t", "g"),
            Err(Error::NoGroup(_))
        ));
        assert!(!c.holding.load(Ordering::SeqCst));

        let before = c.before_poll();
        r.while_no_views_on_topic("t", || Ok(())).unwrap();
        assert!(matches!(
            c.after_poll(before, "t", "g"),
            Err(Error::NoTopic(_))
        ));
    }

    #[test]
    fn a_poll_after_the_call_keeps_its_views_and_blocks_the_next_call() {
        let r = Registry::default();
        let c = r.claim("t", "g", 0).unwrap();
        r.while_no_views_on_topic("t", || Ok(())).unwrap();
        let before = c.before_poll();
        c.after_poll(before, "t", "g").unwrap();
        assert!(matches!(
            r.while_no_views_on_topic("t", || Ok(())),
            Err(Error::Owned(_))
        ));
        assert!(matches!(
            r.while_no_views("t", "g", || Ok(())),
            Err(Error::Owned(_))
        ));
        // Other topics and groups are not held.
        r.while_no_views("t", "h", || Ok(())).unwrap();
        r.while_no_views_on_topic("u", || Ok(())).unwrap();
    }
}
