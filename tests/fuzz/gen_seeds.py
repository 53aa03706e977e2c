#!/usr/bin/env python3
"""Writes the seed corpus (corpus/): short call sequences in the fuzz target's input encoding,
each reaching a different part of the contract, so fuzzing starts from meaningful states.
Run from anywhere: python3 tests/fuzz/gen_seeds.py"""
import os

OPS = dict(create=0, subscribe=1, unsubscribe=2, publish=3, poll=6, ack=8, nack=10, seek=11,
           extend=12, clock=13, other=15)


def call(op, topic=0, group=0, partition=0, *args):
    # topic, group, partition (a nonzero selector byte, then the partition), op, op arguments
    return bytes([topic, group, 1, partition, OPS[op], *args])


def create(t, parts, cap, budget=None, timeout=30, bounded=False, age_ms=None):
    b = [parts, cap] + ([0, budget] if budget is not None else [1]) + [timeout]
    b += [0 if bounded else 1] + ([0, age_ms] if age_ms is not None else [1])
    return call("create", t, 0, 0, *b)


def sub(t, g, earliest=0):
    return call("subscribe", t, g, 0, 1, earliest)


def pub(t, key, length):  # key 0..5 from the key table, 7 = no key
    return call("publish", t, 0, 0, key, length)


def poll(t, g, p, mx):
    return call("poll", t, g, p, mx)


def ack(t, g, p, how):  # 0 committed-1, 1 committed, 2 next-1, 3 next, 6 end+1
    return call("ack", t, g, p, how)


def nack(t, g, p, delay_ms=0):  # 0: mq_group_nack; otherwise mq_group_nack
    if delay_ms == 0:
        return call("nack", t, g, p, 0, 1)
    return call("nack", t, g, p, 1, delay_ms + 5, 0)


def seek(t, g, p, how):
    return call("seek", t, g, p, how)


def clock(ms):
    return call("clock", 0, 0, 0, 1, ms)


def close():
    return call("other", 0, 0, 0, 0)


def lists(cap):
    return call("other", 0, 0, 0, 1, cap)


# SPEC.md's reference trace, as far as the encoding allows.
reference = (create(0, 2, 3) + sub(0, 0) + sub(0, 1) + pub(0, 0, 3) + pub(0, 0, 3) + pub(0, 0, 3)
             + pub(0, 1, 3) + pub(0, 0, 3) + poll(0, 0, 1, 2) + ack(0, 0, 1, 1)
             + poll(0, 1, 1, 5) + ack(0, 1, 1, 2) + pub(0, 0, 3) + clock(255) + clock(255)
             + poll(0, 0, 1, 5) + ack(0, 0, 1, 2) + ack(0, 0, 1, 6))
seeds = {
    "reference_trace": reference,
    "no_groups_trim": create(1, 1, 2) + pub(1, 7, 5) + pub(1, 7, 5) + sub(1, 0) + pub(1, 7, 5)
    + poll(1, 0, 0, 3),
    "byte_budget": create(2, 1, 5, 20) + sub(2, 2) + pub(2, 0, 10) + pub(2, 0, 10) + pub(2, 0, 10)
    + pub(2, 0, 40) + poll(2, 2, 0, 5) + ack(2, 2, 0, 2) + pub(2, 0, 10),
    "nack_and_delay": create(0, 1, 4) + sub(0, 1) + pub(0, 7, 4) + pub(0, 7, 4) + poll(0, 1, 0, 5)
    + nack(0, 1, 0) + poll(0, 1, 0, 5) + nack(0, 1, 0, 60) + poll(0, 1, 0, 5) + clock(80)
    + poll(0, 1, 0, 5) + ack(0, 1, 0, 2),
    "seek_and_extend": create(1, 2, 5) + sub(1, 0) + sub(1, 1, 1) + pub(1, 3, 2) + pub(1, 4, 2)
    + poll(1, 0, 0, 5) + call("extend", 1, 0, 0) + clock(20) + seek(1, 0, 0, 7) + seek(1, 1, 0, 8)
    + seek(1, 0, 0, 6) + poll(1, 0, 0, 5) + poll(1, 0, 1, 5),
    "unsubscribe_wakes": create(0, 1, 2) + sub(0, 0) + sub(0, 1) + pub(0, 7, 1) + pub(0, 7, 1)
    + pub(0, 7, 1) + poll(0, 0, 0, 5) + ack(0, 0, 0, 2) + call("unsubscribe", 0, 1, 0) + pub(0, 7, 1)
    + lists(5),
    "close_then_calls": create(0, 1, 2) + sub(0, 0) + pub(0, 7, 1) + poll(0, 0, 0, 1) + close()
    + pub(0, 7, 1) + poll(0, 0, 0, 1) + ack(0, 0, 0, 2) + lists(11),
    # Issue 18: a group that subscribed late seeks to the earliest offset, is handed a view of
    # it, and a publish drops it (bounded retention): the view must still read its bytes.
    "seek_then_bounded_drop": create(0, 1, 3, 20, bounded=True) + sub(0, 0) + pub(0, 7, 16)
    + sub(0, 1) + seek(0, 1, 0, 7) + call("unsubscribe", 0, 0, 0) + poll(0, 1, 0, 1)
    + pub(0, 7, 8) + poll(0, 1, 0, 5),
    # The same with max age, after acking and seeking back; then another group's poll drops it.
    "seek_then_age_out": create(1, 1, 5, age_ms=100) + sub(1, 0) + sub(1, 1) + pub(1, 7, 10)
    + poll(1, 1, 0, 5) + ack(1, 1, 0, 2) + seek(1, 1, 0, 7) + poll(1, 1, 0, 5) + clock(150)
    + poll(1, 0, 0, 5) + pub(1, 7, 10) + pub(1, 7, 10) + poll(1, 1, 0, 5),
    "seek_then_age_out_unsubscribed": create(1, 1, 5, age_ms=100) + sub(1, 0) + sub(1, 1)
    + pub(1, 7, 10) + poll(1, 1, 0, 5) + ack(1, 1, 0, 2) + seek(1, 1, 0, 4) + poll(1, 1, 0, 5)
    + call("unsubscribe", 1, 0, 0) + clock(150) + pub(1, 7, 10) + poll(1, 1, 0, 5),
    "bounded_loss_reported": create(2, 1, 2, bounded=True) + sub(2, 2) + pub(2, 7, 3)
    + pub(2, 7, 3) + poll(2, 2, 0, 1) + pub(2, 7, 3) + pub(2, 7, 3) + pub(2, 7, 3)
    + poll(2, 2, 0, 5) + seek(2, 2, 0, 7) + poll(2, 2, 0, 5),
    "bad_inputs": create(4, 1, 1) + create(0, 0, 1) + create(0, 1, 0) + sub(3, 3) + sub(0, 3)
    + poll(0, 0, 0, 0) + call("ack", 0, 0, 4, 3) + pub(3, 7, 2) + pub(0, 7, 40),
}
out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")
os.makedirs(out, exist_ok=True)
for name, data in seeds.items():
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)
print(f"wrote {len(seeds)} seeds to {out}")
