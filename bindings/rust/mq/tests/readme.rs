//! The READMEs' code blocks that are not Rust. The Rust ones are doctests (src/lib.rs includes
//! the README; mq-sys's lib.rs its own), so this checks that every block is one of the kinds
//! checked, that no Rust block opts out of running, and that the Cargo and shell lines name
//! features, packages and paths that exist.
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn manifest() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The repository root when this crate sits in it (not in a packaged crate).
fn repo() -> Option<PathBuf> {
    let root = manifest().join("../../..");
    root.join("include/mq.h").is_file().then_some(root)
}

/// (info string, body) of every fenced block.
fn blocks(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut open: Option<(String, String)> = None;
    for line in text.lines() {
        match (&mut open, line.strip_prefix("```")) {
            (None, Some(info)) => open = Some((info.trim().to_owned(), String::new())),
            (Some(_), Some(_)) => out.push(open.take().unwrap()),
            (Some((_, body)), None) => {
                body.push_str(line);
                body.push('\n');
            }
            (None, None) => {}
        }
    }
    assert!(open.is_none(), "a code block is not closed");
    out
}

fn features(cargo_toml: &Path) -> BTreeSet<String> {
    let text = std::fs::read_to_string(cargo_toml).unwrap();
    let section = text
        .split("\n[features]\n")
        .nth(1)
        .expect("a [features] table");
    section
        .lines()
        .take_while(|l| !l.starts_with('['))
        .filter_map(|l| l.split_once(" = ").map(|(k, _)| k.trim().to_owned()))
        .filter(|k| !k.starts_with('#'))
        .collect()
}

fn check(readme: &Path) -> usize {
    let text = std::fs::read_to_string(readme).unwrap();
    let mq_features = features(&manifest().join("Cargo.toml"));
    let feature = |f: &str| {
        let f = f.strip_prefix("mq/").unwrap_or(f);
        assert!(
            mq_features.contains(f),
            "{}: no feature {f:?} of mq",
            readme.display()
        );
    };
    let blocks = blocks(&text);
    for (info, body) in &blocks {
        match info.as_str() {
            // Exactly `rust`: rustdoc compiles and runs it (no ignore, no_run, compile_fail).
            "rust" => {}
            "toml" => {
                for line in body.lines() {
                    if let Some((_, listed)) = line.split_once("features") {
                        listed.split('"').skip(1).step_by(2).for_each(feature);
                    }
                    let Some(rest) = line.split_once("path = \"").map(|(_, r)| r) else {
                        continue;
                    };
                    let path = &rest[..rest.find('"').unwrap()];
                    if let Some(repo) = repo() {
                        let toml = repo.join(path).join("Cargo.toml");
                        let text = std::fs::read_to_string(&toml).unwrap_or_default();
                        assert!(
                            text.contains("\nname = \"mq\"\n"),
                            "{path} is not the mq crate"
                        );
                    }
                }
            }
            "sh" => {
                for line in body.lines() {
                    let line = line.split('#').next().unwrap();
                    let words: Vec<&str> = line.split_whitespace().collect();
                    for pair in words.windows(2) {
                        match pair[0] {
                            "--features" => pair[1].split(',').for_each(feature),
                            "-p" => {
                                if let Some(repo) = repo() {
                                    let dir = repo.join("bindings/rust").join(pair[1]);
                                    assert!(
                                        dir.join("Cargo.toml").is_file(),
                                        "no package {}",
                                        pair[1]
                                    );
                                }
                            }
                            _ => {}
                        }
                    }
                }
            }
            other => panic!(
                "{}: a ```{other} block, which no test checks",
                readme.display()
            ),
        }
    }
    blocks.len()
}

#[test]
fn every_block_of_the_readmes_is_checked() {
    let n = check(&manifest().join("README.md"));
    assert!(n >= 5, "the README's blocks were not found ({n})");
    // mq-sys's README, beside this crate in the repository (its own package checks nothing
    // more: its Rust blocks are its doctests).
    let sys = manifest().join("../mq-sys/README.md");
    if sys.is_file() {
        check(&sys);
    }
}
