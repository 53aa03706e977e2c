//! What this binding must know to keep message views sound: which group partitions a
//! [`PartitionConsumer`](crate::PartitionConsumer) holds, and which groups are driven by push
//! subscriptions or members (whose acks could end a consumer's views behind its back).
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::error::{Error, Result};

/// Shared between a consumer and the registry. `holding` is set while a batch of views is
/// alive; `blocked` while an unsubscribe of the group is deciding. Each side stores its own
/// flag and then reads the other's (both SeqCst), so at least one sees the other: either the
/// unsubscribe refuses, or the poll gives up its fresh batch before anyone reads it.
#[derive(Default)]
pub(crate) struct Claim {
    pub(crate) holding: AtomicBool,
    pub(crate) blocked: AtomicBool,
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
        let map = self.lock();
        let Some(g) = map.get(&(topic.to_owned(), group.to_owned())) else {
            drop(map);
            return f();
        };
        for c in g.consumers.values() {
            c.blocked.store(true, Ordering::SeqCst);
        }
        let busy = g
            .consumers
            .iter()
            .find(|(_, c)| c.holding.load(Ordering::SeqCst))
            .map(|(p, _)| *p);
        let r = match busy {
            Some(p) => Err(Error::Owned(format!(
                "a batch of messages of group {group} on partition {p} of {topic} is alive (views \
                 into the log that unsubscribing would free): ack or drop it first"
            ))),
            None => f(),
        };
        for c in g.consumers.values() {
            c.blocked.store(false, Ordering::SeqCst);
        }
        r
    }
}
