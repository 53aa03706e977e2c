#!/usr/bin/env bash
# Copies the repository's C++ core (src/, include/) into mq-sys/vendor/ so that `cargo package`
# produces a crate that builds on its own. Inside the repository build.rs reads ../../../src
# directly; vendor/ is ignored by git.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
rm -rf "$here/vendor"
mkdir -p "$here/vendor"
cp -R "$root/src" "$root/include" "$here/vendor/"
cp "$root/README.md" "$here/vendor/MQ_README.md" 2>/dev/null || true
echo "vendored $(find "$here/vendor/src" -name "*.cpp" | wc -l) C++ sources into $here/vendor"
