//! 8 threads: 4 producers over 40 keys, 4 consumers (one per partition) that nack now and then;
//! every message arrives at least once and every key in publish order, with no gap.
mod common;
use std::collections::HashMap;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use mq::{Broker, Error, GroupOptions, Record, TopicConfig, Wait};

const PRODUCERS: u32 = 4;
const PER_PRODUCER: u32 = 5_000;
const KEYS: u32 = 40;
const PARTITIONS: i32 = 4;

fn key(k: u32) -> String {
    format!("key-{k:02}")
}

#[test]
fn eight_threads_at_least_once_and_per_key_order() {
    let b = Broker::new().unwrap();
    b.create_topic("s", &TopicConfig::new().partitions(PARTITIONS).capacity(64))
        .unwrap();
    b.subscribe_group("s", "g", &GroupOptions::new()).unwrap();
    let per_key = PRODUCERS * PER_PRODUCER / KEYS;
    let mut expected = [0u64; PARTITIONS as usize];
    for k in 0..KEYS {
        expected[mq::key_partition(key(k).as_bytes(), PARTITIONS).unwrap() as usize] +=
            u64::from(per_key);
    }
    let b = Arc::new(b);
    let producers: Vec<_> = (0..PRODUCERS)
        .map(|p| {
            let b = b.clone();
            thread::spawn(move || {
                let mine: Vec<u32> = (0..KEYS).filter(|k| k % PRODUCERS == p).collect();
                for i in 0..PER_PRODUCER {
                    let k = mine[(i as usize) % mine.len()];
                    let seq = i / mine.len() as u32;
                    let mut payload = [0u8; 8];
                    payload[..4].copy_from_slice(&k.to_le_bytes());
                    payload[4..].copy_from_slice(&seq.to_le_bytes());
                    b.publish(
                        "s",
                        Record::new(&payload).key(key(k).as_bytes()),
                        Wait::Forever,
                    )
                    .unwrap();
                }
            })
        })
        .collect();
    let consumers: Vec<_> = (0..PARTITIONS)
        .map(|p| {
            let b = b.clone();
            let want = expected[p as usize];
            thread::spawn(move || -> Result<(HashMap<u32, u32>, u64), String> {
                let mut c = b.consumer("s", "g", p).unwrap();
                let mut next: HashMap<u32, u32> = HashMap::new();
                let (mut done, mut polls, mut redelivered) = (0u64, 0u64, 0u64);
                let deadline = Instant::now() + Duration::from_secs(60);
                while done < want {
                    if Instant::now() > deadline {
                        return Err(format!("partition {p}: {done} of {want} after 60 s"));
                    }
                    let batch = match c.poll(16, Duration::from_millis(100)) {
                        Ok(batch) => batch,
                        Err(Error::Timeout(_)) => continue,
                        Err(e) => return Err(format!("poll: {e}")),
                    };
                    polls += 1;
                    let mut fresh = 0;
                    for m in &batch {
                        let pl = m.payload();
                        let k = u32::from_le_bytes(pl[..4].try_into().unwrap());
                        let seq = u32::from_le_bytes(pl[4..8].try_into().unwrap());
                        if m.key() != Some(key(k).as_bytes()) || m.partition() != p {
                            return Err(format!("key {k} in the wrong message or partition"));
                        }
                        if m.delivery_count() >= 2 {
                            redelivered += 1;
                        }
                        let n = next.entry(k).or_insert(0);
                        if seq > *n {
                            return Err(format!("{}: seq {seq} after {} (a gap)", key(k), *n));
                        } else if seq == *n {
                            *n += 1;
                            fresh += 1;
                        } else if m.delivery_count() < 2 {
                            return Err(format!("{}: seq {seq} again on first delivery", key(k)));
                        }
                    }
                    // Every 5th batch fails: its messages must come back, in order.
                    if polls % 5 == 0 {
                        for m in &batch {
                            let k = u32::from_le_bytes(m.payload()[..4].try_into().unwrap());
                            let seq = u32::from_le_bytes(m.payload()[4..8].try_into().unwrap());
                            let n = next.get_mut(&k).unwrap();
                            *n = (*n).min(seq);
                        }
                        batch.nack(Duration::ZERO).map_err(|e| e.to_string())?;
                    } else {
                        done += fresh;
                        batch.ack().map_err(|e| e.to_string())?;
                    }
                }
                Ok((next, redelivered))
            })
        })
        .collect();
    for p in producers {
        p.join().unwrap();
    }
    let mut seen: HashMap<u32, u32> = HashMap::new();
    let mut redelivered = 0;
    for c in consumers {
        let (next, r) = c.join().unwrap().unwrap();
        redelivered += r;
        seen.extend(next);
    }
    assert_eq!(seen.len(), KEYS as usize);
    for (k, n) in &seen {
        assert_eq!(*n, per_key, "{} ended at seq {n} of {per_key}", key(*k));
    }
    assert!(redelivered > 0, "the nacks were redelivered");
    let waits: i64 = (0..PARTITIONS)
        .map(|p| b.partition_info("s", p).unwrap().producer_waits)
        .sum();
    let largest = (0..PARTITIONS)
        .map(|p| b.partition_info("s", p).unwrap().max_backlog)
        .max()
        .unwrap();
    assert!(largest <= 64, "backlog {largest} above capacity");
    eprintln!(
        "stress: {redelivered} redelivered, {waits} producer waits, largest backlog {largest}"
    );
}
