#!/usr/bin/env python3
"""Writes the seed corpus (corpus/): short call sequences in the fuzz target's input encoding,
each reaching a different part of the contract, so fuzzing starts from meaningful states.
Run from anywhere: python3 tests/fuzz/gen_seeds.py"""
import os

OPS = dict(create=0, subscribe=1, unsubscribe=2, publish=3, poll=6, ack=8, nack=10, seek=11,
           extend=12, clock=13, other=15, member=16, token=18, settle=19,
           batch=21)
NO_TOKEN = 1  # pick_cancel's first byte: anything but 0 passes no token, wait 0


def call(op, topic=0, group=0, partition=0, *args):
    # topic, group, partition (a nonzero selector byte, then the partition), op, op arguments
    return bytes([topic, group, 1, partition, OPS[op], *args])


def create(t, parts, cap, budget=None, timeout=30, bounded=False, age_ms=None):
    b = [parts, cap] + ([0, budget] if budget is not None else [1]) + [timeout]
    b += [0 if bounded else 1] + ([0, age_ms] if age_ms is not None else [1])
    return call("create", t, 0, 0, *b)


def sub(t, g, earliest=0, share=0, max_acquired=1):
    """share: 0 ordered, 4 MQ_SHARE_ALL, 6 MQ_SHARE_KEY, 8 ordered with max_acquired (invalid).
    max_acquired (share groups): 0..4 as is, 5 = 7, 6 = 0 (default 2000), 7 = 1000001."""
    return call("subscribe", t, g, 0, 1, earliest, share,
                *([max_acquired] if share in (4, 5, 6, 7) else []))


def pub(t, key, length, headers=(), cancel=(NO_TOKEN,)):
    """key 0..5 from the key table, 7 = no key. headers: (name 0..3, value, form) with value
    0 = empty, 1 = "v", (n, byte) = n bytes; form 0 = NULL name if empty, 1 = NULL value if
    empty, 2 = NULL value with a nonzero length (MQ_ERR_INVALID), else the pointers as they are."""
    b = [key, length, len(headers)]
    for name, value, form in headers:
        b += [name] + ([value] if isinstance(value, int) else [2, *value]) + [form]
    b += [1] if not headers else [1]  # with none: a non-NULL array; with some: not NULL
    return call("publish", t, 0, 0, *b, *cancel)


def delayed(t, key, length, delay_ms):
    """A one-record mq_topic_publish_batch with delay_ms (0..255)."""
    return call("batch", t, 0, 0, key, length, 0, 1, 1, delay_ms, NO_TOKEN)


def settle(t, g, p, index, action, delay=None, skew=2):
    """The index-th entry the group holds, with its delivery count (skew 0: one less, 1: one
    more). action 0 accept, 3 release, 5 reject, 6 renew, 8 invalid; delay (release) 0..119."""
    d = [0] if delay is None else [4, delay]
    return call("settle", t, g, p, 1, index, skew, action, *d)


def poll(t, g, p, mx, cancel=(NO_TOKEN,)):
    return call("poll", t, g, p, mx, *cancel)


# With a triggered token: (0, slot, 1, 1) waits 1000 ms, (0, slot, 1, 0) forever: MQ_CANCELLED
# where the call would wait. (0, slot, 0) passes the token with wait 0.
def waits(slot, forever=False):
    return (0, slot, 1, 0 if forever else 1)


def token(slot, action=None):  # None: create; 0 free, 1 trigger, 2 reset, 3 check
    return call("token", 0, 0, 0, slot, *([] if action is None else [action]))


def join(t, slot, mg, how=2):  # member group 0..2 (2 illegal); how 0 generated id, 1 illegal
    return call("member", t, 0, 0, slot, mg, how)


def member(slot, action, *args, p=0):  # 0 close, 1 poll, 2 ack, 3 nack, 4 extend, 5 assignment
    return call("member", 0, 0, p, slot, action, *args)


def mpoll(slot, mx, cancel=(NO_TOKEN,)):
    return member(slot, 1, mx, *cancel)


def free_broker():
    return call("other", 0, 0, 0, 0, 0)


def delete(t):
    return call("other", t, 0, 0, 1, 0)


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
    return call("other", 0, 0, 0, 0, 1)


def lists(cap):
    return call("other", 0, 0, 0, 1, 1, cap)


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
    # Headers: empty names and values, fuzzed bytes, NULL pointers with length 0 (allowed) and
    # with a nonzero length (MQ_ERR_INVALID), over the 32-byte maximum and the byte budget.
    "headers": create(0, 1, 5, 30) + sub(0, 0) + pub(0, 7, 3, [(0, 0, 0), (1, 1, 1), (2, 1, 5)])
    + pub(0, 0, 2, [(0, 1, 3), (3, 0, 0)]) + pub(0, 7, 3, [(1, (12, 65), 4)])
    + pub(0, 7, 3, [(1, 1, 2)]) + pub(0, 7, 3, [(3, (12, 66), 4), (3, (12, 66), 4)])
    + pub(0, 7, 2, [(1, 0, 9)] * 3) + poll(0, 0, 0, 5) + ack(0, 0, 0, 2) + poll(0, 0, 0, 5),
    # Members: join (generated id, then the same id again: MQ_ERR_EXISTS), polls rotating over
    # two partitions, ack, nack, lease extension, assignment, close (rewinds) and join again.
    "members": create(1, 2, 4) + join(1, 0, 0, 0) + join(1, 1, 0) + pub(1, 7, 3) + pub(1, 7, 3)
    + pub(1, 7, 3) + mpoll(0, 1) + mpoll(0, 1) + mpoll(0, 5) + member(0, 2, 1, p=0)
    + member(0, 3, 0, p=1) + member(0, 4, p=0) + member(0, 5) + member(0, 0) + join(1, 0, 0, 2)
    + mpoll(0, 5) + mpoll(0, 5) + join(1, 1, 2, 2) + join(1, 2, 1, 1) + mpoll(0, 5, cancel=(0, 0, 0)),
    # The broker handle released first while a member lives: views stay readable; the member's
    # calls return MQ_CLOSED, then its release ends the broker's memory.
    "broker_freed_first": create(0, 1, 4) + sub(0, 1) + join(0, 0, 0) + pub(0, 7, 5)
    + pub(0, 7, 5) + poll(0, 1, 0, 5) + mpoll(0, 5) + free_broker() + mpoll(0, 5) + member(0, 5)
    + member(0, 2, 1) + token(0) + member(0, 0),
    # A member's views outlive its topic's deletion; its calls then return MQ_ERR_NO_TOPIC; a
    # new topic of the name is new to it.
    "member_topic_deleted": create(2, 1, 4) + sub(2, 0) + join(2, 0, 1) + pub(2, 7, 4)
    + pub(2, 7, 4) + poll(2, 0, 0, 5) + mpoll(0, 5) + delete(2) + mpoll(0, 5) + member(0, 2, 3)
    + member(0, 5) + create(2, 1, 4) + join(2, 1, 1) + pub(2, 7, 4) + mpoll(1, 5) + member(0, 0),
    # Cancel tokens: a triggered token ends a poll and a publish that would wait (MQ_CANCELLED);
    # with wait 0, or reset, the usual MQ_TIMEOUT / MQ_FULL.
    "cancel_tokens": create(0, 1, 1) + sub(0, 0) + token(0) + token(1) + token(0, 1)
    + token(0, 3) + poll(0, 0, 0, 5, cancel=waits(0)) + poll(0, 0, 0, 5, cancel=(0, 0, 0))
    + pub(0, 7, 2) + pub(0, 7, 2, cancel=waits(0, True)) + pub(0, 7, 2, cancel=(0, 1))
    + join(0, 0, 0) + mpoll(0, 5) + mpoll(0, 5, cancel=waits(0)) + token(0, 2)
    + poll(0, 0, 0, 5, cancel=(0, 0)) + token(1, 1) + token(1, 0),
    # Delayed delivery: an ordered group waits at a message not yet due, a share group skips it.
    "delayed_delivery": create(0, 1, 5) + sub(0, 0) + sub(0, 1, share=4, max_acquired=6)
    + pub(0, 7, 2) + delayed(0, 7, 2, 50) + pub(0, 7, 2) + poll(0, 0, 0, 5) + poll(0, 1, 0, 5)
    + clock(30) + poll(0, 0, 0, 5) + clock(30) + poll(0, 0, 0, 5) + poll(0, 1, 0, 5)
    + nack(0, 0, 0) + poll(0, 0, 0, 5),
    # Share groups: max_acquired, settle in any order, release with a delay, stale tokens,
    # renew, lock expiry, reject, ack / nack / extend on a share group, seek.
    "share_groups": create(1, 1, 5, timeout=100) + sub(1, 0, share=4, max_acquired=3)
    + sub(1, 1) + pub(1, 7, 2) + pub(1, 7, 2) + pub(1, 7, 2) + pub(1, 7, 2) + poll(1, 0, 0, 2)
    + poll(1, 0, 0, 2) + poll(1, 0, 0, 2) + settle(1, 0, 0, 1, 0) + poll(1, 0, 0, 5)
    + settle(1, 0, 0, 0, 0) + settle(1, 0, 0, 0, 3) + poll(1, 0, 0, 5) + settle(1, 0, 0, 0, 0, skew=0)
    + settle(1, 0, 0, 1, 3, delay=50) + poll(1, 0, 0, 5) + clock(60) + poll(1, 0, 0, 5)
    + settle(1, 0, 0, 0, 6) + clock(80) + settle(1, 0, 0, 1, 0) + poll(1, 0, 0, 5)
    + settle(1, 0, 0, 0, 5) + call("extend", 1, 0, 0) + nack(1, 0, 0, 20) + poll(1, 0, 0, 5)
    + clock(25) + poll(1, 0, 0, 5) + ack(1, 0, 0, 1) + settle(1, 1, 0, 0, 0)
    + settle(1, 0, 0, 0, 8) + seek(1, 0, 0, 7) + poll(1, 0, 0, 5) + poll(1, 1, 0, 5),
    # Key-shared: a key waits while an earlier message of it is unsettled; keyless ones pass;
    # the look-ahead past the frontier is 4 * max_acquired.
    "key_shared": create(2, 1, 5) + sub(2, 2, share=6, max_acquired=1) + pub(2, 0, 2)
    + pub(2, 0, 2) + pub(2, 1, 2) + pub(2, 7, 2) + pub(2, 0, 2) + poll(2, 2, 0, 5)
    + settle(2, 2, 0, 0, 3) + poll(2, 2, 0, 5) + settle(2, 2, 0, 0, 0) + poll(2, 2, 0, 5)
    + poll(2, 2, 0, 5) + settle(2, 2, 0, 0, 0) + poll(2, 2, 0, 5) + settle(2, 2, 0, 1, 0)
    + poll(2, 2, 0, 5),
    "bad_inputs": create(4, 1, 1) + create(0, 0, 1) + create(0, 1, 0) + sub(3, 3) + sub(0, 3)
    + poll(0, 0, 0, 0) + call("ack", 0, 0, 4, 3) + pub(3, 7, 2) + pub(0, 7, 40),
}
# A share group behind bounded retention: dropped entries, settled ones not lost, and the
# frontier (committed) past the accepted message behind the drop. It once found the library
# leaving committed on an accepted message.
seeds["share_bounded"] = (
    create(0, 1, 3, bounded=True) + sub(0, 0, share=4, max_acquired=0)
    + pub(0, 7, 2) + pub(0, 7, 2) + pub(0, 7, 2) + poll(0, 0, 0, 5) + settle(0, 0, 0, 1, 0)
    + pub(0, 7, 2) + pub(0, 7, 2) + pub(0, 7, 2) + poll(0, 0, 0, 5)
)
out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")
os.makedirs(out, exist_ok=True)
for name, data in seeds.items():
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)
print(f"wrote {len(seeds)} seeds to {out}")
