#!/usr/bin/env bash
# Installs a built tree into a fresh prefix and builds tests/packaging/consumer out of tree
# against it, the ways a user would:
#   1. pkg-config --cflags --libs mq                  -> shared libmq
#   2. pkg-config --static --libs mq, -l:libmq.a      -> libmq.a (Libs.private must suffice)
#   3. find_package(mq CONFIG REQUIRED) + mq::mq      -> shared libmq
#   4. find_package(mq CONFIG REQUIRED) + mq::mq_static -> libmq.a
# Each program does a round trip through the C ABI and must run; shared ones must load the
# installed libmq.so.1 and static ones none at all.
# Usage: install_consumers.sh <build dir> <source dir>
# Environment: CMAKE, CC, PKG_CONFIG, CMAKE_GENERATOR (optional; the tools to use).
set -euo pipefail

build=$(realpath "$1")
source=$(realpath "$2")
cmake=${CMAKE:-cmake}
cc=${CC:-cc}
pkg_config=${PKG_CONFIG:-pkg-config}

# Fresh every run, under the build tree: nothing from an earlier run can make this pass.
work=$build/packaging/install_consumers
rm -rf "$work"
mkdir -p "$work"
prefix=$work/prefix

step() { echo "--- $*"; }
fail() {
    echo "FAIL: $*" >&2
    exit 1
}

step "cmake --install into $prefix"
"$cmake" --install "$build" --prefix "$prefix" >"$work/install.log" ||
    { cat "$work/install.log"; fail "cmake --install failed"; }

pc=$(find "$prefix" -path '*/pkgconfig/mq.pc' | head -n 1)
[ -n "$pc" ] || fail "no pkgconfig/mq.pc installed under $prefix"
libdir=$(dirname "$(dirname "$pc")")
for f in libmq.so libmq.so.1 libmq.a cmake/mq/mqConfig.cmake cmake/mq/mqConfigVersion.cmake; do
    [ -e "$libdir/$f" ] || fail "$libdir/$f is not installed"
done
[ "$(readlink "$libdir/libmq.so")" = libmq.so.1 ] || fail "libmq.so does not link to libmq.so.1"
cmp -s "$source/include/mq.h" "$prefix/include/mq.h" || fail "installed mq.h differs from include/mq.h"
version=$(sed -n 's/^#define MQ_VERSION_STRING "\(.*\)"$/\1/p' "$source/include/mq.h")
[ -n "$version" ] || fail "no MQ_VERSION_STRING in include/mq.h"

# Shared programs must load the libmq.so.1 of the prefix, not one installed elsewhere.
expect_installed_libmq() {
    local loaded
    loaded=$(LD_LIBRARY_PATH=${2:-} ldd "$1" | awk '$1 == "libmq.so.1" { print $3 }')
    [ -n "$loaded" ] || fail "$1 does not load libmq.so.1"
    [ "$(realpath "$loaded")" = "$(realpath "$libdir/libmq.so.1")" ] ||
        fail "$1 loads $loaded instead of $libdir/libmq.so.1"
}
expect_no_libmq() {
    if ldd "$1" | grep -q libmq; then
        fail "$1 is linked statically but loads a shared libmq"
    fi
}

src=$work/consumer
cp -r "$source/tests/packaging/consumer" "$src"
cflags_strict=(-std=c11 -Wall -Wextra -Wpedantic -Werror)

step "pkg-config: shared"
export PKG_CONFIG_PATH=$libdir/pkgconfig
[ "$("$pkg_config" --modversion mq)" = "$version" ] ||
    fail "pkg-config version $("$pkg_config" --modversion mq), header $version"
# mq.pc is relocatable: installed with --prefix, it must point into that prefix.
[ "$(realpath "$("$pkg_config" --variable=includedir mq)")" = "$(realpath "$prefix/include")" ] ||
    fail "mq.pc includedir is $("$pkg_config" --variable=includedir mq), not $prefix/include"
read -ra pc_cflags <<<"$("$pkg_config" --cflags mq)"
read -ra pc_libs <<<"$("$pkg_config" --libs mq)"
"$cc" "${cflags_strict[@]}" "${pc_cflags[@]}" "$src/consumer.c" "${pc_libs[@]}" \
    -o "$work/consumer_pkgconfig"
expect_installed_libmq "$work/consumer_pkgconfig" "$libdir"
LD_LIBRARY_PATH=$libdir "$work/consumer_pkgconfig"

step "pkg-config: static (libmq.a with Libs.private)"
read -ra pc_static_libs <<<"$("$pkg_config" --static --libs mq)"
static_libs=()
for arg in "${pc_static_libs[@]}"; do
    if [ "$arg" = -lmq ]; then
        arg=-l:libmq.a
    fi
    static_libs+=("$arg")
done
"$cc" "${cflags_strict[@]}" "${pc_cflags[@]}" "$src/consumer.c" "${static_libs[@]}" \
    -o "$work/consumer_pkgconfig_static"
expect_no_libmq "$work/consumer_pkgconfig_static"
"$work/consumer_pkgconfig_static"

step "find_package(mq CONFIG): mq::mq and mq::mq_static"
unset PKG_CONFIG_PATH
"$cmake" -S "$src" -B "$work/consumer-build" -DCMAKE_PREFIX_PATH="$prefix" \
    -DCMAKE_C_COMPILER="$cc" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_FLAGS="${cflags_strict[*]}" >"$work/consumer-configure.log" ||
    { cat "$work/consumer-configure.log"; fail "configuring the consumer failed"; }
found=$(sed -n 's/^mq_DIR:PATH=//p' "$work/consumer-build/CMakeCache.txt")
[ "$(realpath "$found")" = "$(realpath "$libdir/cmake/mq")" ] ||
    fail "find_package found mq in $found, not in $libdir/cmake/mq"
"$cmake" --build "$work/consumer-build"
# CMake gives the shared consumer an rpath to the imported libmq: no LD_LIBRARY_PATH.
expect_installed_libmq "$work/consumer-build/consumer_shared"
"$work/consumer-build/consumer_shared"
expect_no_libmq "$work/consumer-build/consumer_static"
"$work/consumer-build/consumer_static"

echo "ok: installed prefix works with pkg-config (shared, static) and find_package (mq::mq, mq::mq_static)"
