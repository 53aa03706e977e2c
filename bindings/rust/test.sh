#!/usr/bin/env bash
# The Rust binding's whole check, from a fresh clone (CI=true, no stdin): installs what it needs
# (a C++ compiler, libclang for bindgen, CMake for the installed-library check), then runs
#   cargo fmt --check, clippy -D warnings, rustdoc -D warnings,
#   the bindgen check (src/bindings.rs equals a fresh generation from include/mq.h),
#   cargo test (unit, integration, doc and compile_fail tests, conformance, tokio),
#   the reference trace against the C demo (examples/rust),
#   linking an installed libmq (MQ_DIR, pkg-config with MQ_STATIC),
#   cargo package of the workspace, built and tested from the packaged files alone, each
#   crate carrying the root's LICENSE-MIT and LICENSE-APACHE,
#   a smoke run of the benchmark,
#   the `kafka` feature (the core with its Kafka backend, librdkafka) on a real cluster:
#   MQ_KAFKA_BOOTSTRAP's, else one started here (scripts/kafka-server.sh) and stopped on exit;
#   mq's kafka_cluster test and tests/conformance/kafka_scenarios.txt through the testee.
# Idempotent; the first failure stops it.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cd "$here"
source "$root/scripts/lib/setup.sh"

start=$SECONDS
step() { section "rust: $* ($((SECONDS - start)) s)"; }

# ---- tools -------------------------------------------------------------------------------------
if ! command -v cargo >/dev/null 2>&1; then
    [ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"
fi
command -v cargo >/dev/null 2>&1 || {
    echo "bindings/rust/test.sh: cargo not found: install a Rust toolchain (rustup)" >&2
    exit 1
}
if command -v rustup >/dev/null 2>&1; then
    for c in rustfmt clippy; do
        rustup component list --installed 2>/dev/null | grep -q "^$c" || rustup component add "$c"
    done
fi
# librdkafka: the `kafka` feature's core links it (clippy checks that variant too).
ensure_tools g++ cmake ninja pkg-config rdkafka
apt_install() {
    local sudo=()
    [ "$(id -u)" -ne 0 ] && sudo=(sudo)
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$@"
}
# bindgen loads libclang at run time (libclang.so or libclang-N.so; libclang-cpp, which other
# packages bring, is not it).
if ! compgen -G '/usr/lib/llvm-*/lib/libclang.so*' >/dev/null && ! compgen -G '/usr/lib/*/libclang-[0-9]*.so*' >/dev/null; then
    apt_install libclang-dev
fi
export CARGO_TERM_COLOR=never
features=(--features tokio)

# Whatever stops the script: the packaging step's vendored copy goes, a cluster started here stops.
vendored=0
kafka_dir="$here/target/kafka-server"
kafka_started=0
cleanup() {
    [ "$vendored" = 1 ] && rm -rf "$here/mq-sys/vendor"
    if [ "$kafka_started" = 1 ]; then
        "$root/scripts/kafka-server.sh" stop "$kafka_dir" || true
    fi
}
trap cleanup EXIT

# ---- lints and docs ------------------------------------------------------------------------------
step "cargo fmt --check"
cargo fmt --all -- --check
(cd "$root/examples/rust" && cargo fmt -- --check)

step "cargo clippy -D warnings"
# With `kafka` too: its code (build.rs's librdkafka, the cluster tests) is linted at no extra
# build (a second clippy of the other variant would compile the core once more); the
# #[cfg(not(feature = "kafka"))] tests are still compiled, with warnings, by cargo test.
cargo clippy --workspace --all-targets --features tokio,kafka -- -D warnings

step "cargo doc -D warnings"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps "${features[@]}"

step "bindgen: mq-sys/src/bindings.rs matches include/mq.h"
mq-sys/regen-bindings.sh --check

# ---- tests ---------------------------------------------------------------------------------------
step "cargo test (workspace, with tokio)"
cargo test --workspace "${features[@]}"

step "cargo test without default features (no tokio)"
cargo test -p mq --lib --tests

step "examples/rust: the reference trace equals the C demo's, byte for byte"
(cd "$root/examples/rust" && CARGO_TARGET_DIR="$here/target" cargo clippy --all-targets -- -D warnings &&
    CARGO_TARGET_DIR="$here/target" cargo test)

# ---- linking an installed libmq ------------------------------------------------------------------
step "an installed libmq: MQ_DIR (shared) and pkg-config (static)"
core="$here/target/core"
cmake -S "$root" -B "$core/build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMQ_BUILD_TESTS=OFF \
    -DMQ_BUILD_EXAMPLES=OFF -DMQ_BUILD_BENCH=OFF >/dev/null
cmake --build "$core/build" -j2 >/dev/null
cmake --install "$core/build" --prefix "$core/prefix" >/dev/null
libdir="$(dirname "$(find "$core/prefix" -name libmq.so | head -1)")"
MQ_DIR="$core/prefix" LD_LIBRARY_PATH="$libdir" CARGO_TARGET_DIR="$here/target/linked" \
    cargo test -p mq-sys
PKG_CONFIG_PATH="$libdir/pkgconfig" MQ_STATIC=1 MQ_NO_VENDOR=1 CARGO_TARGET_DIR="$here/target/linked" \
    cargo test -p mq-sys --features system

# ---- packaging -----------------------------------------------------------------------------------
step "cargo package: the packaged crates build and pass their tests on their own"
vendored=1
mq-sys/vendor.sh
cargo package --workspace --allow-dirty --no-verify --exclude mq-conformance --exclude mq-bench
# A fixed place outside the source tree's crates (so reruns reuse the build), emptied first.
pkg="$here/target/package-check"
v="$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -1)"  # [workspace.package]
rm -rf "$pkg"/mq-sys-* "$pkg"/mq-[0-9]*
mkdir -p "$pkg"
for c in mq-sys mq; do
    tar -xzf "target/package/$c-$v.crate" -C "$pkg"
done
# "MIT OR Apache-2.0": each crate carries both texts (links to the root's files in the
# repository, which cargo package copies), equal to the repository's.
for c in mq-sys mq; do
    listed="$(cargo package --list -p "$c" --allow-dirty 2>/dev/null)"
    for f in LICENSE-MIT LICENSE-APACHE; do
        grep -qx "$f" <<<"$listed" || { echo "rust: cargo package --list -p $c lacks $f" >&2; exit 1; }
        cmp "$root/$f" "$pkg/$c-$v/$f" || { echo "rust: the packaged $c's $f differs from the root's" >&2; exit 1; }
    done
done
cat > "$pkg/Cargo.toml" <<TOML
[workspace]
members = ["mq-sys-$v", "mq-$v"]
resolver = "2"
[patch.crates-io]
mq-sys = { path = "mq-sys-$v" }
TOML
(cd "$pkg" && CARGO_TARGET_DIR="$here/target/packaged" cargo test --workspace "${features[@]}")
rm -rf "$here/mq-sys/vendor"

# ---- benchmark -----------------------------------------------------------------------------------
step "benchmark smoke run (every workload verifies what it received)"
cargo run -p mq-bench -- --smoke  # the dev profile: a check of what it verifies, not a measurement

# ---- the Kafka backend ---------------------------------------------------------------------------
# The same target directory: cargo keeps the kafka-featured core beside the default one, so a
# rerun rebuilds nothing. Only what the run needs is built: mq's kafka_cluster test and the
# conformance crate's testee and kafka_conformance test.
step "kafka: a cluster"
kafka_start=$SECONDS
if [ -z "${MQ_KAFKA_BOOTSTRAP:-}" ]; then
    kafka_started=1
    MQ_KAFKA_BOOTSTRAP=$("$root/scripts/kafka-server.sh" start "$kafka_dir" | tail -n 1)
    echo "started a single-node Kafka at $MQ_KAFKA_BOOTSTRAP"
else
    echo "the cluster at MQ_KAFKA_BOOTSTRAP=$MQ_KAFKA_BOOTSTRAP"
fi
export MQ_KAFKA_BOOTSTRAP
kafka_build=$SECONDS
step "kafka: build the kafka feature's tests (core with src/engine/kafka/, librdkafka)"
cargo test --no-run -p mq --features kafka --test kafka_cluster
cargo test --no-run -p mq-conformance --features kafka --test kafka_conformance
kafka_tests=$SECONDS
step "kafka: the binding on the cluster (mq/tests/kafka_cluster.rs)"
cargo test -p mq --features kafka --test kafka_cluster
step "kafka: tests/conformance/kafka_scenarios.txt, one at a time, MQ_CONFORMANCE_BACKEND=kafka"
cargo test -p mq-conformance --features kafka --test kafka_conformance
echo "(kafka: cluster $((kafka_build - kafka_start)) s, build $((kafka_tests - kafka_build)) s," \
    "tests $((SECONDS - kafka_tests)) s)"

step "done in $((SECONDS - start)) s"
