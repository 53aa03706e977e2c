"""Partitioning helpers: Kafka's partitioner and round-robin assignment."""

from __future__ import annotations

from mq import _convert as cv
from mq._native import check, ctx, ffi, lib
from mq._types import Bytes

__all__ = ["key_partition", "murmur2", "round_robin"]


def key_partition(key: Bytes, partitions: int) -> int:
    """Kafka's default partition for a key: ``(murmur2(key) & 0x7fffffff) % partitions``."""
    k = cv.data(key, "key")
    out = ffi.new("int32_t *")
    c = ctx()
    check(lib.mqw_key_partition(k, len(k), cv.int32(partitions, "partitions"), out, c), c)
    return int(out[0])


def murmur2(key: Bytes) -> int:
    """Kafka's murmur2 of a key, signed as Kafka's ``Utils.murmur2`` returns it."""
    k = cv.data(key, "key")
    return int(lib.mq_key_murmur2(k, len(k)))


def round_robin(partitions: int, members: int, member: int) -> list[int]:
    """The partitions member ``member`` of ``members`` owns (partition p to member p % members)."""
    p = cv.int32(partitions, "partitions")
    c = ctx()
    count = ffi.new("size_t *")
    cap = max(p, 1) if p > 0 else 1
    out = ffi.new("int32_t[]", cap)
    check(
        lib.mqw_assignment_round_robin(
            p, cv.int32(members, "members"), cv.int32(member, "member"), out, cap, count, c
        ),
        c,
    )
    return list(ffi.unpack(out, min(count[0], cap)))
