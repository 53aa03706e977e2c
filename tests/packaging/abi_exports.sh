#!/usr/bin/env bash
# The exported surface of the shared library is exactly the MQ_API functions of mq.h:
#   - its SONAME is libmq.so.1 (what programs record and the loader looks for);
#   - every defined dynamic symbol is an mq_ name (no libstdc++ or internal symbol leaks, so
#     libmq cannot interpose on or clash with what the program links besides it);
#   - every exported mq_ symbol is declared MQ_API in mq.h (nothing undocumented escapes), and
#     every MQ_API function is exported (the header promises nothing the library lacks).
#   - every function of the 1.0 interface (abi_1.0.symbols beside this script) and of each later
#     minor (abi_1.1.symbols, ...) is still declared and exported under its version node: 1.x
#     only adds (docs/ABI.md).
# Usage: abi_exports.sh <path to libmq.so> <path to mq.h>   (NM / READELF may name the tools)
set -euo pipefail

lib=$1
header=$2
nm=${NM:-nm}
readelf=${READELF:-readelf}
failed=0

fail() {
    echo "FAIL: $*"
    failed=1
}

soname=$("$readelf" -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\].*/\1/p')
if [ "$soname" != "libmq.so.1" ]; then
    fail "SONAME of $lib is '$soname', expected 'libmq.so.1'"
fi

# "value type name"; binutils >= 2.37 prints versioned names as name@@MQ_1. The version nodes
# of src/capi/mq.map appear as absolute (A) symbols named after the node: they are not functions.
exported=$("$nm" -D --defined-only "$lib" |
    awk '!($2 == "A" && $3 ~ /^MQ_[0-9_.]+$/) { print $NF }' | sed 's/@.*//' | sort -u)
if [ -z "$exported" ]; then
    fail "$lib exports no symbol at all"
fi

not_mq=$(grep -v '^mq_' <<<"$exported" || true)
if [ -n "$not_mq" ]; then
    fail "symbols exported without the mq_ prefix:"
    sed 's/^/    /' <<<"$not_mq"
fi

# Every public declaration has "MQ_API <type> mq_name(" on one line; preprocessor lines
# (the definition of MQ_API itself) are not declarations.
declared=$(grep -v '^[[:space:]]*#' "$header" | grep -o 'MQ_API[^;(]*(' |
    sed -E 's/.*[^A-Za-z0-9_]([A-Za-z_][A-Za-z0-9_]*)[[:space:]]*\($/\1/' | sort -u)
if [ "$(wc -l <<<"$declared")" -lt 10 ]; then
    fail "found only these MQ_API functions in $header (is the parser broken?): $declared"
fi
bad_names=$(grep -v '^mq_' <<<"$declared" || true)
if [ -n "$bad_names" ]; then
    fail "MQ_API declarations without the mq_ prefix (or unparsed): $bad_names"
fi

missing=$(comm -23 <(echo "$declared") <(echo "$exported"))
if [ -n "$missing" ]; then
    fail "declared MQ_API in mq.h but not exported by $lib:"
    sed 's/^/    /' <<<"$missing"
fi
undeclared=$(comm -13 <(echo "$declared") <(grep '^mq_' <<<"$exported" || true))
if [ -n "$undeclared" ]; then
    fail "exported by $lib but not declared MQ_API in mq.h:"
    sed 's/^/    /' <<<"$undeclared"
fi

# Each abi_1.<minor>.symbols beside this script lists the functions that minor version added:
# all stay declared, and each is exported under its version node (MQ_1 for 1.0, MQ_1.<minor>
# after), so a program linked against 1.n fails to load on an older library by name.
for frozen in "$(dirname "$0")"/abi_1.*.symbols; do
    removed=$(comm -23 <(sort -u "$frozen") <(echo "$declared"))
    if [ -n "$removed" ]; then
        fail "functions of $(basename "$frozen") no longer declared in $header:"
        sed 's/^/    /' <<<"$removed"
    fi
    minor=$(basename "$frozen" .symbols | sed 's/^abi_1\.//')
    node=MQ_1
    [ "$minor" = 0 ] || node=MQ_1.$minor
    while read -r fn; do
        [ -n "$fn" ] || continue
        "$nm" -D --defined-only "$lib" | grep -q '@' || break  # an nm that prints no versions
        if ! "$nm" -D --defined-only "$lib" | grep -q " $fn@@$node\$"; then
            fail "$fn is not exported under version node $node"
        fi
    done <"$frozen"
done

if [ "$failed" -ne 0 ]; then
    exit 1
fi
echo "ok: SONAME $soname; $(wc -l <<<"$exported") exported symbols, all mq_ and all declared in mq.h"
