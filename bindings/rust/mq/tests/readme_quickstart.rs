// The README's quick start, compiled and run; the second test keeps this copy equal to it.
#[test]
fn readme_quick_start() {
    main().unwrap();
}

#[test]
fn this_file_holds_the_readme_quick_start() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    // In the repository the binding's README is beside the crate; a packaged crate has it inside.
    let readme = [dir.join("../README.md"), dir.join("README.md")]
        .into_iter()
        .find_map(|p| std::fs::read_to_string(p).ok())
        .expect("the README");
    let start = readme.find("```rust\n").expect("a rust block") + "```rust\n".len();
    let block = &readme[start..start + readme[start..].find("```").unwrap()];
    assert!(
        include_str!("readme_quickstart.rs").ends_with(block),
        "update this file from the README's quick start"
    );
}

use mq::{Broker, GroupOptions, Record, SubscriptionOptions, TopicConfig, Wait};
use std::time::Duration;

fn main() -> mq::Result<()> {
    let broker = Broker::new()?;
    broker.create_topic("orders", &TopicConfig::new().partitions(2).capacity(64))?;
    broker.subscribe_group("orders", "billing", &GroupOptions::new())?;

    // Pull: the key picks the partition; poll hands out views, ack frees them.
    let at = broker.publish("orders", Record::new(b"o-1").key(b"user-a"), Wait::Forever)?;
    let mut billing = broker.consumer("orders", "billing", at.partition)?;
    let batch = billing.poll(10, Duration::from_secs(1))?;
    for m in &batch {
        println!("{}: {}", m.offset(), String::from_utf8_lossy(m.payload()));
    }
    batch.ack()?; // cumulative; the batch (and every borrow of its messages) ends here

    // Push: the library polls on its own threads, calls the closure, acks on Ok.
    let sub = broker.subscribe(
        "orders",
        "email",
        &SubscriptionOptions::new(),
        |m: &mq::Message<'_>| {
            println!("email {}", String::from_utf8_lossy(m.payload()));
            Ok::<(), String>(())
        },
    )?;
    sub.close()?; // waits until no handler runs
    Ok(())
}
