#!/usr/bin/env bash
# Regenerates src/bindings.rs from the repository's include/mq.h with bindgen (gen/).
#   regen-bindings.sh          rewrite src/bindings.rs
#   regen-bindings.sh --check  fail if the committed file differs from a fresh generation
# Needs libclang (Debian: libclang-dev).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
header="$here/../../../include/mq.h"
out="$(mktemp)"
trap 'rm -f "$out"' EXIT
cargo run --quiet --locked --manifest-path "$here/gen/Cargo.toml" -- "$header" > "$out.raw"
rustfmt --edition 2021 < "$out.raw" > "$out"
rm -f "$out.raw"
if [[ "${1:-}" == "--check" ]]; then
  if ! diff -u "$here/src/bindings.rs" "$out"; then
    echo "mq-sys/src/bindings.rs differs from a fresh bindgen run: run bindings/rust/mq-sys/regen-bindings.sh" >&2
    exit 1
  fi
  echo "mq-sys/src/bindings.rs matches include/mq.h"
else
  cp "$out" "$here/src/bindings.rs"
  echo "wrote $here/src/bindings.rs"
fi
