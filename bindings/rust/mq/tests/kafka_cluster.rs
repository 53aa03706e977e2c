//! The binding on a real Kafka cluster: the one at `MQ_KAFKA_BOOTSTRAP` (test.sh starts one
//! with scripts/kafka-server.sh). Built only with the `kafka` feature, whose core has the
//! backend; every test fails, not skips, when the address is missing. Each test works on topics
//! and groups named for it and this run, and deletes its topics, so runs can share a cluster.
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use mq::{Broker, BrokerOptions, Error, GroupOptions, Header, MemberOptions, Record, TopicConfig};

const WAIT: Duration = Duration::from_secs(10);

fn bootstrap() -> String {
    match std::env::var("MQ_KAFKA_BOOTSTRAP") {
        Ok(b) if !b.is_empty() => b,
        _ => panic!(
            "MQ_KAFKA_BOOTSTRAP is not set: these tests need a Kafka cluster \
             (bootstrap=$(scripts/kafka-server.sh start | tail -n 1), then export \
             MQ_KAFKA_BOOTSTRAP=$bootstrap)"
        ),
    }
}

fn open() -> Broker {
    let opts = BrokerOptions::new()
        .kafka(bootstrap())
        .kafka_setting("client.id", "mq-rust-tests");
    Broker::with_options(&opts).unwrap_or_else(|e| panic!("broker on {}: {e}", bootstrap()))
}

fn unique(what: &str) -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("rust-{what}-{}-{nanos}", std::process::id())
}

/// Deletes the topic when the test ends, whether it passed or not.
struct Topic<'b> {
    broker: &'b Broker,
    name: String,
}

impl<'b> Topic<'b> {
    fn create(broker: &'b Broker, what: &str, partitions: i32) -> Topic<'b> {
        let name = unique(what);
        broker
            .create_topic(&name, &TopicConfig::new().partitions(partitions))
            .unwrap_or_else(|e| panic!("create {name}: {e}"));
        Topic { broker, name }
    }
}

impl Drop for Topic<'_> {
    fn drop(&mut self) {
        let _ = self.broker.delete_topic(&self.name);
    }
}

fn headers_of(m: &mq::Message<'_>) -> Vec<(Vec<u8>, Vec<u8>)> {
    m.headers().map(|(n, v)| (n.to_vec(), v.to_vec())).collect()
}

#[test]
fn a_keyed_record_with_headers_goes_through_a_group_and_the_commit_survives_the_client() {
    let b = open();
    let t = Topic::create(&b, "pull", 3);
    assert!(
        b.topics().unwrap().contains(&t.name),
        "the cluster lists it"
    );
    assert_eq!(b.topic_info(&t.name).unwrap().partitions, 3);
    b.subscribe_group(&t.name, "billing", &GroupOptions::new())
        .unwrap();

    // Duplicate names and an empty value travel as Kafka record headers, in order.
    let hs = [
        Header::new(b"trace", b"t-1"),
        Header::new(b"trace", b"t-2"),
        Header::new(b"empty", b""),
    ];
    let at = b
        .publish(
            &t.name,
            Record::new(b"o-1").key(b"user-a").headers(&hs),
            mq::Wait::NoWait,
        )
        .unwrap();
    assert_eq!(at.partition, mq::key_partition(b"user-a", 3).unwrap());
    assert_eq!(at.offset, 0);

    let mut c = b.consumer(&t.name, "billing", at.partition).unwrap();
    let batch = c.poll(10, WAIT).unwrap();
    assert_eq!(batch.len(), 1);
    let m = &batch.messages()[0];
    assert_eq!(
        (m.partition(), m.offset(), m.payload(), m.key()),
        (at.partition, 0, &b"o-1"[..], Some(&b"user-a"[..]))
    );
    assert_eq!(m.delivery_count(), 1);
    assert_eq!(
        headers_of(m),
        [
            (b"trace".to_vec(), b"t-1".to_vec()),
            (b"trace".to_vec(), b"t-2".to_vec()),
            (b"empty".to_vec(), Vec::new()),
        ]
    );
    // Kafka's timestamps are wall-clock time (milliseconds), not a monotonic clock's.
    let now_ns = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos() as i64;
    assert!(
        (now_ns - m.timestamp_ns()).abs() < 600_000_000_000,
        "timestamp {} is not near now {now_ns}",
        m.timestamp_ns()
    );
    batch.ack().unwrap();
    let info = b.group_info(&t.name, "billing", at.partition).unwrap();
    assert_eq!((info.committed, info.in_flight, info.lag), (1, 0, 0));
    drop(c);

    // Another client (what another process would be) resumes the group at its commit.
    let other = open();
    other
        .subscribe_group(&t.name, "billing", &GroupOptions::new())
        .unwrap();
    b.publish(
        &t.name,
        Record::new(b"o-2").key(b"user-a"),
        mq::Wait::NoWait,
    )
    .unwrap();
    let mut c2 = other.consumer(&t.name, "billing", at.partition).unwrap();
    let batch = c2.poll(10, WAIT).unwrap();
    let got: Vec<(i64, &[u8])> = batch.iter().map(|m| (m.offset(), m.payload())).collect();
    assert_eq!(got, [(1, &b"o-2"[..])]);
    batch.ack().unwrap();
    drop(c2);
    drop(other);

    // Deleted: the cluster no longer lists it and this handle's group is gone with it.
    b.delete_topic(&t.name).unwrap();
    assert!(!b.topics().unwrap().contains(&t.name));
    assert!(matches!(
        b.group_info(&t.name, "billing", at.partition),
        Err(Error::NoGroup(_) | Error::NoTopic(_))
    ));
}

#[test]
fn a_member_joins_the_group_on_the_cluster_and_polls_its_partitions() {
    let b = open();
    let t = Topic::create(&b, "member", 2);
    let group = unique("g");
    let m = b
        .join(&t.name, &group, &MemberOptions::new().id("one"))
        .unwrap_or_else(|e| panic!("join: {e}"));
    assert_eq!(m.id(), "one");
    let a = m.assignment().unwrap();
    assert_eq!(a.partitions, [0, 1], "the only member owns every partition");
    assert_eq!(a.generation, 1);

    let hs = [Header::new(b"trace", b"m-1")];
    let at = b
        .publish(
            &t.name,
            Record::new(b"hello").key(b"user-b").headers(&hs),
            mq::Wait::NoWait,
        )
        .unwrap();
    let batch = m.poll(4, WAIT).unwrap();
    assert_eq!(batch.partition(), Some(at.partition));
    assert_eq!(batch.len(), 1);
    let msg = &batch.messages()[0];
    assert_eq!(
        (msg.offset(), msg.payload(), msg.key()),
        (at.offset, &b"hello"[..], Some(&b"user-b"[..]))
    );
    assert_eq!(headers_of(msg), [(b"trace".to_vec(), b"m-1".to_vec())]);
    batch.ack().unwrap();
    // Acked means committed: with nothing more published, a short poll hands out nothing.
    assert!(matches!(
        m.poll(4, Duration::from_millis(200)),
        Err(Error::Timeout(_))
    ));
    m.close().unwrap();
}

#[test]
fn a_push_subscription_on_the_cluster_hands_the_handler_a_keyed_record_with_headers() {
    let b = open();
    let t = Topic::create(&b, "push", 2);
    let group = unique("g");
    let (tx, rx) = std::sync::mpsc::channel();
    let sub = b
        .subscribe(
            &t.name,
            &group,
            &mq::SubscriptionOptions::new(),
            move |m: &mq::Message<'_>| -> Result<(), &'static str> {
                let _ = tx.send((
                    m.partition(),
                    m.payload().to_vec(),
                    m.key().map(<[u8]>::to_vec),
                    headers_of(m),
                ));
                Ok(())
            },
        )
        .unwrap_or_else(|e| panic!("subscribe: {e}"));
    let hs = [Header::new(b"trace", b"p-1")];
    let at = b
        .publish(
            &t.name,
            Record::new(b"pushed").key(b"user-c").headers(&hs),
            mq::Wait::NoWait,
        )
        .unwrap();
    let got = rx
        .recv_timeout(WAIT)
        .expect("the handler got the record within 10 s");
    assert_eq!(
        got,
        (
            at.partition,
            b"pushed".to_vec(),
            Some(b"user-c".to_vec()),
            vec![(b"trace".to_vec(), b"p-1".to_vec())]
        )
    );
    sub.close().unwrap();
}
