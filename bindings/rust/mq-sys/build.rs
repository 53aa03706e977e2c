//! Finds libmq the way nng-sys finds nng:
//!
//! 1. `MQ_LIB_DIR` (+ `MQ_INCLUDE_DIR`), or `MQ_DIR` (with `lib/` and `include/` under it):
//!    link that library (`MQ_STATIC=1` for `libmq.a`, else the shared `libmq.so`);
//! 2. with the `system` feature, pkg-config's `mq` (at least 1.7);
//! 3. unless `MQ_NO_VENDOR` is set, compile the C++ core from source: inside the repository
//!    its own `src/` and `include/`, in a packaged crate the copy in `vendor/` (filled by
//!    `vendor.sh` before `cargo package`).
//!
//! The vendored build compiles every `.cpp` under `src/`, at any depth, except the Kafka
//! backend's (anything below a folder named `kafka`, i.e. `src/engine/kafka/`).
//!
//! With the `kafka` feature the vendored build also compiles the Kafka backend's sources with
//! `MQ_HAVE_KAFKA` (the Kafka backend, CMake's `MQ_KAFKA=ON`) and links librdkafka found by
//! pkg-config (`rdkafka`; Debian: librdkafka-dev); a prebuilt static libmq is then linked with
//! librdkafka too. Without it the core refuses `kafka_bootstrap` with `MQ_ERR_UNSUPPORTED`, its
//! message naming the `kafka` feature (`MQ_KAFKA_HINT`) rather than CMake's option.
//!
//! The FFI declarations are generated ahead of time (`src/bindings.rs`, see `gen/`), so no
//! libclang is needed here.
use std::env;
use std::path::{Path, PathBuf};

const ENV_VARS: &[&str] = &[
    "MQ_DIR",
    "MQ_LIB_DIR",
    "MQ_INCLUDE_DIR",
    "MQ_STATIC",
    "MQ_NO_VENDOR",
];

/// What the backend-less core's error says to switch on (see `MQ_KAFKA_HINT` in the core).
#[cfg(not(feature = "kafka"))]
const KAFKA_HINT: &str = "\"the mq crate's `kafka` feature (needs librdkafka)\"";

fn flag(name: &str) -> bool {
    matches!(env::var(name), Ok(v) if !v.is_empty() && v != "0" && v != "false")
}

fn main() {
    for v in ENV_VARS {
        println!("cargo:rerun-if-env-changed={v}");
    }
    println!("cargo:rerun-if-changed=build.rs");
    let want_static = flag("MQ_STATIC");

    if let Some((lib, include)) = from_env() {
        link_prebuilt(&lib, include.as_deref(), want_static);
        return;
    }
    if try_pkg_config(want_static) {
        return;
    }
    if flag("MQ_NO_VENDOR") {
        panic!(
            "mq-sys: MQ_NO_VENDOR is set but no libmq was found: set MQ_DIR (a prefix with \
             lib/ and include/), or MQ_LIB_DIR and MQ_INCLUDE_DIR, or enable the `system` \
             feature to ask pkg-config for `mq`"
        );
    }
    build_vendored();
}

fn from_env() -> Option<(PathBuf, Option<PathBuf>)> {
    if let Some(lib) = env::var_os("MQ_LIB_DIR") {
        return Some((lib.into(), env::var_os("MQ_INCLUDE_DIR").map(PathBuf::from)));
    }
    let dir = PathBuf::from(env::var_os("MQ_DIR")?);
    let lib = [
        "lib",
        "lib64",
        "lib/x86_64-linux-gnu",
        "lib/aarch64-linux-gnu",
    ]
    .iter()
    .map(|d| dir.join(d))
    .find(|d| d.join("libmq.so").exists() || d.join("libmq.a").exists())
    .unwrap_or_else(|| dir.join("lib"));
    Some((lib, Some(dir.join("include"))))
}

fn link_prebuilt(lib: &Path, include: Option<&Path>, want_static: bool) {
    println!("cargo:rustc-link-search=native={}", lib.display());
    if want_static {
        println!("cargo:rustc-link-lib=static=mq");
        // A static libmq built with MQ_KAFKA=ON does not carry librdkafka: name it after libmq.
        if cfg!(feature = "kafka") {
            link_rdkafka(&probe_rdkafka());
        }
        link_cxx_runtime();
    } else {
        println!("cargo:rustc-link-lib=dylib=mq");
    }
    if let Some(include) = include {
        println!("cargo:include={}", include.display());
    }
}

/// The static library's C++ objects need the C++ runtime and threads.
fn link_cxx_runtime() {
    let target = env::var("TARGET").unwrap_or_default();
    if target.contains("apple") || target.contains("freebsd") {
        println!("cargo:rustc-link-lib=c++");
    } else if !target.contains("msvc") {
        println!("cargo:rustc-link-lib=stdc++");
        println!("cargo:rustc-link-lib=pthread");
    }
}

#[cfg(feature = "system")]
fn try_pkg_config(want_static: bool) -> bool {
    match pkg_config::Config::new()
        .atleast_version("1.7")
        .statik(want_static)
        .probe("mq")
    {
        Ok(lib) => {
            if let Some(include) = lib.include_paths.first() {
                println!("cargo:include={}", include.display());
            }
            if want_static {
                link_cxx_runtime();
            }
            true
        }
        Err(e) => {
            println!("cargo:warning=mq-sys: pkg-config found no usable mq ({e}); building the vendored sources");
            false
        }
    }
}

#[cfg(not(feature = "system"))]
fn try_pkg_config(_want_static: bool) -> bool {
    false
}

/// The C++ sources: the repository's own when this crate sits in it (so an edit of `src/` is
/// always what gets built), else the copy vendored into a packaged crate.
fn sources() -> (PathBuf, PathBuf) {
    let manifest = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let repo = manifest.join("../../..");
    // The repository: its public header, and its CMakeLists beside a src/ folder (whatever the
    // layout inside).
    if repo.join("include/mq.h").is_file()
        && repo.join("CMakeLists.txt").is_file()
        && repo.join("src").is_dir()
    {
        return (repo.join("src"), repo.join("include"));
    }
    let vendor = manifest.join("vendor");
    if vendor.join("src").is_dir() && vendor.join("include/mq.h").is_file() {
        return (vendor.join("src"), vendor.join("include"));
    }
    panic!(
        "mq-sys: no C++ sources to build: neither the repository's src/ and include/ nor {}/vendor \
         (run vendor.sh before packaging) were found; set MQ_DIR or enable `system`",
        manifest.display()
    );
}

/// librdkafka as pkg-config describes it, without printing anything yet: its link lines must
/// follow libmq's, which needs it.
#[cfg(feature = "kafka")]
fn probe_rdkafka() -> pkg_config::Library {
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    pkg_config::Config::new()
        .cargo_metadata(false)
        .probe("rdkafka")
        .unwrap_or_else(|e| {
            panic!(
                "mq-sys: the `kafka` feature needs librdkafka, found by pkg-config as `rdkafka` \
                 (Debian/Ubuntu: apt-get install librdkafka-dev): {e}"
            )
        })
}

#[cfg(feature = "kafka")]
fn link_rdkafka(lib: &pkg_config::Library) {
    for dir in &lib.link_paths {
        println!("cargo:rustc-link-search=native={}", dir.display());
    }
    for name in &lib.libs {
        println!("cargo:rustc-link-lib={name}");
    }
}

#[cfg(not(feature = "kafka"))]
struct NoRdkafka;

#[cfg(not(feature = "kafka"))]
fn probe_rdkafka() -> NoRdkafka {
    NoRdkafka
}

#[cfg(not(feature = "kafka"))]
fn link_rdkafka(_: &NoRdkafka) {}

/// Every file under `dir`, at any depth, sorted (the core lays its sources out in folders by
/// layer; nothing here depends on which).
fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    let entries = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("read the mq sources in {}: {e}", dir.display()));
    for path in entries.filter_map(|e| e.ok().map(|e| e.path())) {
        if path.is_dir() {
            println!("cargo:rerun-if-changed={}", path.display());
            files_under(&path, out);
        } else if path.is_file() {
            out.push(path);
        }
    }
}

/// Whether a source belongs to the Kafka backend: anything below a folder named `kafka`
/// (`src/engine/kafka/`, formerly `src/kafka/`), which only the `kafka` feature compiles.
fn kafka_only(src: &Path, file: &Path) -> bool {
    file.strip_prefix(src)
        .map(|rel| rel.parent().is_some_and(|d| d.iter().any(|c| c == "kafka")))
        .unwrap_or(false)
}

fn build_vendored() {
    let (src, include) = sources();
    let mut files = Vec::new();
    files_under(&src, &mut files);
    files.sort();
    if !cfg!(feature = "kafka") {
        files.retain(|f| !kafka_only(&src, f));
    }
    println!("cargo:rerun-if-changed={}", src.display());
    println!("cargo:rerun-if-changed={}", include.display());
    for f in &files {
        println!("cargo:rerun-if-changed={}", f.display());
    }
    let cpp: Vec<&PathBuf> = files
        .iter()
        .filter(|f| f.extension().is_some_and(|e| e == "cpp"))
        .collect();
    let rdkafka = probe_rdkafka();
    let mut build = cc::Build::new();
    #[cfg(feature = "kafka")]
    build
        .define("MQ_HAVE_KAFKA", None)
        .includes(&rdkafka.include_paths);
    // The core's refusal of kafka_bootstrap names the switch that adds the backend; by default
    // that is CMake's, which a Rust user never runs: name the feature they can turn on. (A C
    // string literal: the compiler gets the argument as is, no shell between.)
    #[cfg(not(feature = "kafka"))]
    build.define("MQ_KAFKA_HINT", Some(KAFKA_HINT));
    build
        .cpp(true)
        .std("c++20")
        .files(cpp)
        .include(&include)
        .include(&src)
        .define("MQ_BUILDING", None)
        .define("MQ_STATIC", None)
        .flag_if_supported("-fvisibility=hidden")
        .pic(true)
        // The core is not what a Rust user debugs: keep it optimised even in debug builds, so
        // the tests' stress runs at the speed users see.
        .opt_level(2)
        .warnings(false)
        .compile("mq");
    link_rdkafka(&rdkafka);
    if !env::var("TARGET").unwrap_or_default().contains("msvc") {
        println!("cargo:rustc-link-lib=pthread");
    }
    println!("cargo:include={}", include.display());
    println!("cargo:vendored=1");
    // For mq_sys::VENDORED: the tests can tell which core's messages they get.
    println!("cargo:rustc-env=MQ_SYS_VENDORED=1");
}
