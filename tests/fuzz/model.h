// An independent model of SPEC.md for one broker with a manual clock, written from the contract
// (SPEC.md and the comments of mq.h), not from the library: the fuzz target runs every call
// against both and compares. Only the single-threaded, wait-0 behaviour is modelled.
//
// Where the contract leaves a choice open the model states what it assumes:
// - a keyless publish takes the topic's next round-robin slot once it has passed validation
//   (also when it then fails with MQ_FULL);
// - when one call has several faults, any of their statuses is accepted (the order of checks
//   is not part of the contract);
// - the maximum age is enforced by every call that touches a partition (and none on a closed
//   broker). The model expires every partition whenever the clock moves: the same outcome, since
//   the library's first call on a partition after that enforces it before anything else (the
//   fuzz target reads every partition just before it closes the broker);
// - members: the n-th mq_member_poll of a member (counting the calls that pass their checks)
//   starts at its owned partition n mod count ("each call starts at the next one"); a member's
//   close rewinds what its group had in flight to `committed` (rule 10's rewind for the new
//   owner) and counts a generation, as its join does (on a closed broker too: mq.h says
//   members close "as usual" there).
// - delayed delivery (rule 15): a message's deliver-at time is its publish timestamp + delay_ms;
//   the fuzz target publishes delayed records with mq_topic_publish_batch, one record a call, so
//   a single-record batch behaves as mq_topic_publish (same faults, the round-robin slot taken
//   once it passes validation, a negative or over-2^40 delay a validation fault).
// Share groups (rule 16):
// - per message of committed..next-1 (committed: the oldest unsettled offset; next: the first
//   offset no poll has looked at) the model keeps a state: available (with a not-before time:
//   its deliver-at time while not due, or a release's delay), acquired (with a lock deadline of
//   poll time + ack timeout; it runs out when the clock reaches it) or settled. A poll acquires
//   up to min(max, max_acquired - acquired) messages: first the available entries in offset
//   order, then offsets no poll looked at (each looked at becomes an entry, a not-yet-due one
//   is skipped); `next` moves past every offset it looks at, and the look at new offsets stops
//   once it has taken its limit;
// - key-shared: keys compare by murmur2 hash (mq.h); every unsettled keyed message (acquired,
//   available or not yet due) holds the later ones of its key. "A poll looks at most
//   4 * max_acquired messages past the oldest unsettled one for free keys" is read as: the look
//   at new offsets stops at a held message at committed + 4 * max_acquired or later (a free one
//   there is still taken); mq_group_info.available of a key-shared group is only checked
//   together with `delayed` (whether a held message counts as available is not said);
// - a message whose lock ran out is no longer acquired: a settle, an ack, a nack (its delay
//   too) or an extension finds it available; mq_group_ack accepts an acquired message
//   (MQ_ERR_NOT_IN_FLIGHT otherwise); mq_group_extend_lease with nothing acquired is
//   MQ_ERR_NOT_IN_FLIGHT as for an ordered group with nothing in flight;
// - bounded retention / max age: the entries below the new start go; `lost` counts the
//   dropped messages the group had not settled (accepted or rejected ones were acked: mq.h's
//   `lost` is "dropped before this group acked them"); a seek clears every entry (rejected
//   stays counted, the unreported loss is kept);
// - a settle that moves the frontier ends the group's views below it, as an ack does, and
//   (as an ack) the views of dropped messages; mq_group_info of a share group: paused_until_ns
//   0 (a nack delays messages, it pauses no group), next_age_ns the message at `next`; of an
//   ordered group the share fields read 0 and oldest_unsettled_age_ns -1;
// - the fuzz target gives share groups no dead-letter topic and no max_deliveries (dead
//   letters are left out of the fuzzer altogether), so a reject drops the message (rejected++).
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <initializer_list>
#include <map>
#include <string>
#include <vector>

#include "mq.h"

namespace fuzzmodel {

// Kafka's Utils.murmur2, written from its published algorithm.
inline int32_t kafka_murmur2(const std::string &key) {
    const uint32_t m = 0x5bd1e995u;
    const size_t len = key.size();
    uint32_t h = 0x9747b28cu ^ static_cast<uint32_t>(len);
    const auto byte = [&](size_t i) { return static_cast<uint32_t>(static_cast<uint8_t>(key[i])); };
    const size_t whole = len / 4;
    for (size_t i = 0; i < whole; i++) {
        uint32_t k =
            byte(4 * i) | byte(4 * i + 1) << 8 | byte(4 * i + 2) << 16 | byte(4 * i + 3) << 24;
        k *= m;
        k ^= k >> 24;
        k *= m;
        h *= m;
        h ^= k;
    }
    const size_t tail = len & ~size_t{3};
    switch (len % 4) {
        case 3: h ^= byte(tail + 2) << 16; [[fallthrough]];
        case 2: h ^= byte(tail + 1) << 8; [[fallthrough]];
        case 1: h ^= byte(tail); h *= m;
    }
    h ^= h >> 13;
    h *= m;
    h ^= h >> 15;
    return static_cast<int32_t>(h);
}

inline bool legal_name(const std::string &s) {
    if (s.empty() || s.size() > 249) return false;
    for (char c : s) {
        const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                        (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
        if (!ok) return false;
    }
    return true;
}

struct Header {
    std::string name, value;
};

struct Msg {
    bool has_key;
    std::string key;
    std::string payload;
    int64_t ts;
    std::vector<Header> headers;  // publish order
    int64_t delay_ns = 0;         // rule 15: handed out from ts + delay_ns on
    int64_t due() const { return ts + delay_ns; }
    size_t bytes() const {
        size_t n = (has_key ? key.size() : 0) + payload.size();
        for (const Header &h : headers) n += h.name.size() + h.value.size();
        return n;
    }
};

struct Cursor {
    int64_t committed = 0;
    int64_t next = 0;
    int64_t lease_deadline = 0;
    int64_t not_before = 0;
    int64_t lost = 0;                        // dropped before this group acked them
    int64_t lost_unreported = 0;             // not yet told in a message's `lost`
    std::map<int64_t, uint32_t> deliveries;  // offset -> times handed out, for unacked offsets
    // Share groups (rule 16): 0 for an ordered group, else MQ_SHARE_ALL or MQ_SHARE_KEY.
    int32_t share = 0;
    int64_t max_acquired = 0;
    int64_t rejected = 0;
    enum State { kAvailable, kAcquired, kSettled };
    struct Entry {
        State state = kAvailable;
        int64_t deadline = 0;  // available: not before; acquired: the lock runs out at it
        uint32_t count = 0;    // acquisitions
    };
    std::map<int64_t, Entry> entries;  // exactly committed..next-1

    // Locks that ran out make their messages available again.
    void expire(int64_t now) {
        for (auto &[o, e] : entries)
            if (e.state == kAcquired && e.deadline <= now) e = {kAvailable, 0, e.count};
    }
    int64_t acquired() const {
        int64_t n = 0;
        for (const auto &[o, e] : entries) n += e.state == kAcquired;
        return n;
    }
    // Settled entries at the front leave: committed is the oldest unsettled offset.
    void advance() {
        while (!entries.empty() && entries.begin()->second.state == kSettled)
            entries.erase(entries.begin());
        committed = entries.empty() ? next : entries.begin()->first;
    }
};

struct Part {
    int64_t start = 0;
    int64_t end = 0;
    std::deque<Msg> log;  // offsets start..end-1
    std::map<std::string, Cursor> cursors;
    int64_t max_backlog = 0;
    int64_t dropped = 0;

    const Msg &at(int64_t off) const { return log[static_cast<size_t>(off - start)]; }
    int64_t bytes() const {
        int64_t n = 0;
        for (const Msg &m : log) n += static_cast<int64_t>(m.bytes());
        return n;
    }
};

struct Topic {
    std::string name;
    int32_t partitions;
    int64_t capacity;
    int64_t max_bytes;
    int64_t ack_timeout_ns;
    bool bounded;        // MQ_RETAIN_BOUNDED
    int64_t max_age_ns;  // 0 = no limit
    std::vector<Part> parts;
    std::vector<std::string> groups;  // subscription order
    uint64_t round_robin = 0;
    uint64_t id = 0;                            // tells a topic from a later one of its name
    std::map<std::string, int64_t> generation;  // per group, counted by member joins and closes

    bool has_group(const std::string &g) const {
        for (const auto &x : groups)
            if (x == g) return true;
        return false;
    }
};

// A few statuses, without allocating (the target makes several per call).
class Statuses {
public:
    Statuses() = default;
    Statuses(std::initializer_list<mq_status> l) {
        for (mq_status s : l) push_back(s);
    }
    void push_back(mq_status s) {
        if (n_ < kMax) s_[n_++] = s;
    }
    bool empty() const { return n_ == 0; }
    mq_status operator[](size_t i) const { return s_[i]; }
    mq_status *begin() { return s_; }
    mq_status *end() { return s_ + n_; }
    const mq_status *begin() const { return s_; }
    const mq_status *end() const { return s_ + n_; }

private:
    static constexpr size_t kMax = 8;  // more than any call's faults
    mq_status s_[kMax]{};
    size_t n_ = 0;
};

// A predicted outcome: the statuses the contract allows (more than one when a call has several
// faults).
struct Expect {
    Statuses ok_statuses;
    bool allows(mq_status s) const {
        for (mq_status x : ok_statuses)
            if (x == s) return true;
        return false;
    }
};

class Broker {
public:
    explicit Broker(size_t max_message_bytes) : max_message_bytes_(max_message_bytes) {}

    int64_t now = 1'000'000'000;
    bool closed = false;
    std::vector<Topic> topics;  // creation order
    uint64_t next_topic_id = 1;

    Topic *find(const std::string &name) {
        for (auto &t : topics)
            if (t.name == name) return &t;
        return nullptr;
    }

    // Lookup faults of (topic, group, partition), in no particular order.
    void lookup_faults(const std::string &topic, const std::string *group, const int32_t *partition,
                       Statuses &faults) {
        Topic *t = find(topic);
        if (!t) {
            faults.push_back(legal_name(topic) ? MQ_ERR_NO_TOPIC : MQ_ERR_INVALID);
            return;
        }
        if (group && !t->has_group(*group))
            faults.push_back(legal_name(*group) ? MQ_ERR_NO_GROUP : MQ_ERR_INVALID);
        if (partition && (*partition < 0 || *partition >= t->partitions))
            faults.push_back(MQ_ERR_PARTITION);
    }

    // Rule 8 and the model paragraph: start is the slowest committed, or end with no groups.
    static void trim(Topic &t, Part &p) {
        int64_t s = p.end;
        for (const auto &g : t.groups) s = std::min(s, p.cursors.at(g).committed);
        while (p.start < s) {
            p.log.pop_front();
            p.start++;
        }
    }

    // Bounded retention and max age: the oldest messages go whatever the cursors; the groups
    // behind skip forward and count the loss. Views of dropped messages stay readable until the
    // group's next poll, ack or seek on the partition (the fuzz target checks them).
    static void drop_head(Part &p, int64_t new_start) {
        if (new_start <= p.start) return;
        p.dropped += new_start - p.start;
        for (auto &[name, c] : p.cursors) {
            if (c.committed >= new_start) continue;
            if (c.share) {
                int64_t lost = 0;
                for (int64_t o = c.committed; o < new_start; o++) {
                    auto it = c.entries.find(o);
                    if (it == c.entries.end() || it->second.state != Cursor::kSettled) lost++;
                }
                c.lost += lost;
                c.lost_unreported += lost;
                c.entries.erase(c.entries.begin(), c.entries.lower_bound(new_start));
                c.next = std::max(c.next, new_start);
                c.advance();
                c.committed = std::max(c.committed, new_start);
                continue;
            }
            c.lost += new_start - c.committed;
            c.lost_unreported += new_start - c.committed;
            c.committed = new_start;
            c.next = std::max(c.next, new_start);
            c.deliveries.erase(c.deliveries.begin(), c.deliveries.lower_bound(new_start));
        }
        while (p.start < new_start) {
            p.log.pop_front();
            p.start++;
        }
    }

    void expire_all() {
        if (closed) return;  // a closed broker changes no state
        for (Topic &t : topics) {
            if (!t.max_age_ns) continue;
            for (Part &p : t.parts) {
                int64_t s = p.start;
                while (s < p.end && now - p.at(s).ts >= t.max_age_ns) s++;
                drop_head(p, s);
            }
        }
    }

    mq_status create(const std::string &name, int32_t partitions, int64_t capacity,
                     int64_t max_bytes, int64_t ack_timeout_ms, int32_t retention,
                     int64_t max_age_ms, Expect &e) {
        Statuses f;
        if (!legal_name(name)) f.push_back(MQ_ERR_INVALID);
        if (partitions < 1 || partitions > 65536 || capacity < 1 || capacity > (int64_t{1} << 40) ||
            max_bytes < 0 || ack_timeout_ms < 1 || max_age_ms < 0 ||
            (retention != MQ_RETAIN_UNTIL_ACKED && retention != MQ_RETAIN_BOUNDED)) {
            f.push_back(MQ_ERR_INVALID);
        }
        if (legal_name(name) && find(name)) f.push_back(MQ_ERR_EXISTS);
        if (closed) f = {MQ_CLOSED};
        if (!f.empty()) return e.ok_statuses = f, f[0];
        Topic t{name,
                partitions,
                capacity,
                max_bytes,
                ack_timeout_ms * 1'000'000,
                retention == MQ_RETAIN_BOUNDED,
                max_age_ms * 1'000'000,
                {},
                {},
                0};
        t.parts.resize(static_cast<size_t>(partitions));
        t.id = next_topic_id++;
        topics.push_back(std::move(t));
        e.ok_statuses = {MQ_OK};
        return MQ_OK;
    }

    // mq_topic_delete: the name is free at once, and a topic created under it later is new.
    void delete_topic(const std::string &name, Expect &e) {
        Statuses f;
        lookup_faults(name, nullptr, nullptr, f);
        if (closed) f = {MQ_CLOSED};
        if (!f.empty()) return void(e.ok_statuses = f);
        std::erase_if(topics, [&](const Topic &t) { return t.name == name; });
        e.ok_statuses = {MQ_OK};
    }

    void subscribe(const std::string &topic, const std::string &group, int32_t start, Expect &e,
                   int32_t share = MQ_SHARE_NONE, int64_t max_acquired = 0) {
        Statuses f;
        if (share < MQ_SHARE_NONE || share > MQ_SHARE_KEY || max_acquired > 1'000'000 ||
            (share == MQ_SHARE_NONE && max_acquired != 0))
            f.push_back(MQ_ERR_INVALID);
        lookup_faults(topic, nullptr, nullptr, f);
        if (!legal_name(group)) f.push_back(MQ_ERR_INVALID);
        if (start != MQ_START_LATEST && start != MQ_START_EARLIEST) f.push_back(MQ_ERR_INVALID);
        Topic *t = find(topic);
        if (t && t->has_group(group)) f.push_back(MQ_ERR_EXISTS);
        if (closed) f = {MQ_CLOSED};
        if (!f.empty()) return void(e.ok_statuses = f);
        t->groups.push_back(group);
        for (Part &p : t->parts) {
            Cursor c;
            c.committed = c.next = start == MQ_START_EARLIEST ? p.start : p.end;
            c.share = share;
            c.max_acquired = max_acquired ? max_acquired : 2000;
            p.cursors[group] = c;
        }
        e.ok_statuses = {MQ_OK};
    }

    void unsubscribe(const std::string &topic, const std::string &group, Expect &e) {
        Statuses f;
        lookup_faults(topic, &group, nullptr, f);
        if (closed) f = {MQ_CLOSED};
        if (!f.empty()) return void(e.ok_statuses = f);
        Topic &t = *find(topic);
        std::erase(t.groups, group);
        for (Part &p : t.parts) {
            p.cursors.erase(group);
            trim(t, p);
        }
        e.ok_statuses = {MQ_OK};
    }

    // Returns the partition the message goes to (or -1 when it fails before routing).
    // bad_pointers: a header array or a header's name or value NULL with a nonzero length.
    int32_t publish(const std::string &topic, const Msg &m, Expect &e, int64_t *offset,
                    bool bad_pointers = false) {
        Statuses f;
        lookup_faults(topic, nullptr, nullptr, f);
        if (bad_pointers || m.delay_ns < 0 || m.delay_ns > (int64_t{1} << 40) * 1'000'000)
            f.push_back(MQ_ERR_INVALID);
        if (m.bytes() > max_message_bytes_) f.push_back(MQ_ERR_TOO_LARGE);
        Topic *t = find(topic);
        if (t && t->max_bytes && static_cast<int64_t>(m.bytes()) > t->max_bytes)
            f.push_back(MQ_ERR_TOO_LARGE);
        if (closed) f = {MQ_CLOSED};
        if (!f.empty()) return e.ok_statuses = f, -1;
        const int32_t p =
            m.has_key
                ? static_cast<int32_t>((kafka_murmur2(m.key) & 0x7fffffff) % t->partitions)
                : static_cast<int32_t>(t->round_robin++ % static_cast<uint64_t>(t->partitions));
        Part &part = t->parts[static_cast<size_t>(p)];
        const bool kept = !t->groups.empty();
        if (kept && t->bounded) {  // drop the oldest until the new message fits
            int64_t s = part.start;
            int64_t held = part.bytes();
            while (s < part.end &&
                   (part.end - s >= t->capacity ||
                    (t->max_bytes && held + static_cast<int64_t>(m.bytes()) > t->max_bytes))) {
                held -= static_cast<int64_t>(part.at(s).bytes());
                s++;
            }
            drop_head(part, s);
        }
        if (kept &&
            (part.end - part.start >= t->capacity ||
             (t->max_bytes && part.bytes() + static_cast<int64_t>(m.bytes()) > t->max_bytes))) {
            e.ok_statuses = {MQ_FULL};  // rule 3 with wait 0
            return p;
        }
        Msg stored = m;
        stored.ts = now;
        *offset = part.end;
        part.log.push_back(stored);
        part.end++;
        trim(*t, part);
        if (kept) part.max_backlog = std::max(part.max_backlog, part.end - part.start);
        e.ok_statuses = {MQ_OK};
        return p;
    }

    // Rule 4 and 7 with wait 0. Fills `out` with the offsets handed out and their counts, and
    // *lost with the loss the first of them reports.
    void poll(const std::string &topic, const std::string &group, int32_t partition, size_t max,
              Expect &e, std::vector<std::pair<int64_t, uint32_t>> &out, int64_t *lost) {
        Statuses f;
        lookup_faults(topic, &group, &partition, f);
        if (max == 0) f.push_back(MQ_ERR_INVALID);
        if (closed) f = {MQ_CLOSED};
        if (!f.empty()) return void(e.ok_statuses = f);
        Topic &t = *find(topic);
        Part &p = t.parts[static_cast<size_t>(partition)];
        Cursor &c = p.cursors.at(group);
        const bool handed =
            c.share ? share_hand_out(t, p, c, max, out, lost) : hand_out(t, p, c, max, out, lost);
        e.ok_statuses = {handed ? MQ_OK : MQ_TIMEOUT};
    }

    // One partition's look of a poll: true if it handed something out.
    bool hand_out(const Topic &t, const Part &p, Cursor &c, size_t max,
                  std::vector<std::pair<int64_t, uint32_t>> &out, int64_t *lost) {
        if (c.next > c.committed && now >= c.lease_deadline) c.next = c.committed;
        if (c.not_before > now || c.next >= p.end) return false;
        // Rule 15: in offset order, up to the first message not yet due.
        int64_t n = 0;
        while (n < static_cast<int64_t>(max) && c.next + n < p.end && p.at(c.next + n).due() <= now)
            n++;
        if (n == 0) return false;
        for (int64_t o = c.next; o < c.next + n; o++) out.emplace_back(o, ++c.deliveries[o]);
        c.next += n;
        *lost = c.lost_unreported;
        c.lost_unreported = 0;
        c.not_before = 0;
        c.lease_deadline = now + t.ack_timeout_ns;
        return true;
    }

    static uint32_t key_hash(const Msg &m) { return static_cast<uint32_t>(kafka_murmur2(m.key)); }

    // Rule 16: a share group's poll of one partition.
    bool share_hand_out(const Topic &t, const Part &p, Cursor &c, size_t max,
                        std::vector<std::pair<int64_t, uint32_t>> &out, int64_t *lost) {
        c.expire(now);
        const int64_t limit =
            std::min<int64_t>(static_cast<int64_t>(max), c.max_acquired - c.acquired());
        int64_t taken = 0;
        const bool by_key = c.share == MQ_SHARE_KEY;
        std::vector<uint32_t> blocked;
        const auto is_held = [&](uint32_t k) {
            for (uint32_t x : blocked)
                if (x == k) return true;
            return false;
        };
        auto take = [&](int64_t o, Cursor::Entry &e) {
            e.count++;
            e.state = Cursor::kAcquired;
            e.deadline = now + t.ack_timeout_ns;
            out.emplace_back(o, e.count);
            taken++;
        };
        if (limit > 0) {
            for (auto &[o, e] : c.entries) {  // available ones first, in offset order
                if (!by_key && taken == limit) break;
                if (e.state == Cursor::kSettled) continue;
                const Msg &m = p.at(o);
                const bool held = by_key && m.has_key && is_held(key_hash(m));
                if (by_key && m.has_key) blocked.push_back(key_hash(m));
                if (e.state != Cursor::kAvailable || e.deadline > now || held || taken == limit)
                    continue;
                take(o, e);
            }
            while (taken < limit && c.next < p.end) {  // then offsets no poll looked at
                const int64_t o = c.next;
                const Msg &m = p.at(o);
                const bool keyed = by_key && m.has_key;
                const bool held = keyed && is_held(key_hash(m));
                if (held && o - c.committed >= 4 * c.max_acquired) break;
                Cursor::Entry &e = c.entries[o];
                e.deadline = m.due() > now ? m.due() : 0;
                c.next++;
                if (keyed) blocked.push_back(key_hash(m));
                if (m.due() > now || held) continue;
                take(o, e);
            }
        }
        if (taken == 0) return false;
        *lost = c.lost_unreported;
        c.lost_unreported = 0;
        return true;
    }

    // mq_share_settle.
    void settle(const std::string &topic, const std::string &group, int32_t partition,
                int64_t offset, uint32_t count, int32_t action, int64_t delay_ms, Expect &e) {
        Statuses f;
        lookup_faults(topic, &group, &partition, f);
        if (action < MQ_SETTLE_ACCEPT || action > MQ_SETTLE_RENEW || delay_ms < 0 ||
            delay_ms > (int64_t{1} << 40) || (delay_ms != 0 && action != MQ_SETTLE_RELEASE))
            f.push_back(MQ_ERR_INVALID);
        if (Topic *t = find(topic);
            t && t->has_group(group) && !t->parts[0].cursors.at(group).share)
            f.push_back(MQ_ERR_INVALID);  // not a share group
        if (closed) f = {MQ_CLOSED};
        if (!f.empty()) return void(e.ok_statuses = f);
        Topic &t = *find(topic);
        Part &p = t.parts[static_cast<size_t>(partition)];
        Cursor &c = p.cursors.at(group);
        c.expire(now);
        auto it = c.entries.find(offset);
        if (it == c.entries.end() || it->second.state != Cursor::kAcquired ||
            it->second.count != count)
            return void(e.ok_statuses = {MQ_ERR_NOT_IN_FLIGHT});
        Cursor::Entry &en = it->second;
        switch (action) {
            case MQ_SETTLE_RELEASE:
                en = {Cursor::kAvailable, delay_ms > 0 ? now + delay_ms * 1'000'000 : 0, en.count};
                break;
            case MQ_SETTLE_RENEW: en.deadline = now + t.ack_timeout_ns; break;
            default:
                if (action == MQ_SETTLE_REJECT) c.rejected++;
                en.state = Cursor::kSettled;
                c.advance();
                trim(t, p);
        }
        e.ok_statuses = {MQ_OK};
    }

    Topic *find_id(uint64_t id) {
        for (auto &t : topics)
            if (t.id == id) return &t;
        return nullptr;
    }

    // mq_member_join (one member per group at a time, so the member owns every partition):
    // subscribes the group at the end of the log if needed and counts a generation.
    // id_taken: the group has a live member of that id; bad_id: an illegal member id.
    void member_join(const std::string &topic, const std::string &group, bool bad_id, bool id_taken,
                     Expect &e) {
        Statuses f;
        lookup_faults(topic, nullptr, nullptr, f);
        if (!legal_name(group) || bad_id) f.push_back(MQ_ERR_INVALID);
        if (id_taken) f.push_back(MQ_ERR_EXISTS);
        if (closed) f = {MQ_CLOSED};
        if (!f.empty()) return void(e.ok_statuses = f);
        Topic &t = *find(topic);
        if (!t.has_group(group)) {
            Expect ignored;
            subscribe(topic, group, MQ_START_LATEST, ignored);
        }
        t.generation[group]++;
        e.ok_statuses = {MQ_OK};
    }

    // The faults every member call but close shares: the broker closed, its topic deleted.
    // Returns the member's topic when there are none.
    Topic *member_faults(uint64_t topic_id, Statuses &f) {
        Topic *t = find_id(topic_id);
        if (closed) f = {MQ_CLOSED};
        else if (!t) f = {MQ_ERR_NO_TOPIC};
        return f.empty() ? t : nullptr;
    }

    // mq_member_close: its partitions go back to the group, what it had in flight rewound;
    // also on a closed broker (mq_broker_close: members close "as usual").
    void member_close(uint64_t topic_id, const std::string &group) {
        Topic *t = find_id(topic_id);
        if (!t) return;
        for (Part &p : t->parts) {
            Cursor &c = p.cursors.at(group);
            c.next = c.committed;
        }
        t->generation[group]++;
    }

    // mq_member_poll with wait 0: returns the partition it handed out from, or -1.
    int32_t member_poll(uint64_t topic_id, const std::string &group, uint32_t &rotate, size_t max,
                        Expect &e, std::vector<std::pair<int64_t, uint32_t>> &out, int64_t *lost) {
        Statuses f;
        Topic *t = member_faults(topic_id, f);
        if (t && max == 0) f.push_back(MQ_ERR_INVALID);
        if (!f.empty()) return e.ok_statuses = f, -1;
        const uint32_t first = rotate++;
        const auto k = static_cast<uint32_t>(t->partitions);
        for (uint32_t i = 0; i < k; i++) {
            const auto p = static_cast<int32_t>((first + i) % k);
            Part &part = t->parts[static_cast<size_t>(p)];
            if (hand_out(*t, part, part.cursors.at(group), max, out, lost)) {
                e.ok_statuses = {MQ_OK};
                return p;
            }
        }
        e.ok_statuses = {MQ_TIMEOUT};
        return -1;
    }

    void ack(const std::string &topic, const std::string &group, int32_t partition, int64_t offset,
             Expect &e) {
        Statuses f;
        lookup_faults(topic, &group, &partition, f);
        if (closed) f = {MQ_CLOSED};
        if (!f.empty()) return void(e.ok_statuses = f);
        Topic &t = *find(topic);
        Part &p = t.parts[static_cast<size_t>(partition)];
        Cursor &c = p.cursors.at(group);
        if (c.share) {  // accepts one acquired message
            c.expire(now);
            auto it = c.entries.find(offset);
            if (it == c.entries.end() || it->second.state != Cursor::kAcquired)
                return void(e.ok_statuses = {MQ_ERR_NOT_IN_FLIGHT});
            it->second.state = Cursor::kSettled;
            c.advance();
            trim(t, p);
            return void(e.ok_statuses = {MQ_OK});
        }
        if (offset < c.committed || offset >= c.next)
            return void(e.ok_statuses = {MQ_ERR_NOT_IN_FLIGHT});
        c.committed = offset + 1;
        c.deliveries.erase(c.deliveries.begin(), c.deliveries.lower_bound(c.committed));
        trim(t, p);
        e.ok_statuses = {MQ_OK};
    }

    void nack(const std::string &topic, const std::string &group, int32_t partition,
              int64_t delay_ms, Expect &e) {
        Statuses f;
        lookup_faults(topic, &group, &partition, f);
        if (delay_ms < 0) f.push_back(MQ_ERR_INVALID);
        if (closed) f = {MQ_CLOSED};
        if (!f.empty()) return void(e.ok_statuses = f);
        Cursor &c = find(topic)->parts[static_cast<size_t>(partition)].cursors.at(group);
        if (c.share) {  // releases every acquired message
            c.expire(now);
            for (auto &[o, en] : c.entries) {
                if (en.state != Cursor::kAcquired) continue;
                en = {Cursor::kAvailable, delay_ms > 0 ? now + delay_ms * 1'000'000 : 0, en.count};
            }
            return void(e.ok_statuses = {MQ_OK});
        }
        if (c.next != c.committed) {
            c.next = c.committed;
            if (delay_ms > 0) c.not_before = now + delay_ms * 1'000'000;
        }
        e.ok_statuses = {MQ_OK};
    }

    void extend(const std::string &topic, const std::string &group, int32_t partition, Expect &e) {
        Statuses f;
        lookup_faults(topic, &group, &partition, f);
        if (closed) f = {MQ_CLOSED};
        if (!f.empty()) return void(e.ok_statuses = f);
        Topic &t = *find(topic);
        Cursor &c = t.parts[static_cast<size_t>(partition)].cursors.at(group);
        if (c.share) {  // renews every lock
            c.expire(now);
            if (!c.acquired()) return void(e.ok_statuses = {MQ_ERR_NOT_IN_FLIGHT});
            for (auto &[o, en] : c.entries)
                if (en.state == Cursor::kAcquired) en.deadline = now + t.ack_timeout_ns;
            return void(e.ok_statuses = {MQ_OK});
        }
        if (c.next == c.committed) return void(e.ok_statuses = {MQ_ERR_NOT_IN_FLIGHT});
        c.lease_deadline = now + t.ack_timeout_ns;
        e.ok_statuses = {MQ_OK};
    }

    void seek(const std::string &topic, const std::string &group, int32_t partition, int64_t offset,
              Expect &e) {
        Statuses f;
        lookup_faults(topic, &group, &partition, f);
        if (closed) f = {MQ_CLOSED};
        if (!f.empty()) return void(e.ok_statuses = f);
        Topic &t = *find(topic);
        Part &p = t.parts[static_cast<size_t>(partition)];
        if (offset == MQ_OFFSET_END) offset = p.end;
        if (offset == MQ_OFFSET_EARLIEST) offset = p.start;
        if (offset < p.start || offset > p.end) {
            e.ok_statuses = {MQ_ERR_OUT_OF_RANGE};
            if (offset < 0) e.ok_statuses.push_back(MQ_ERR_INVALID);
            return;
        }
        Cursor &c = p.cursors.at(group);
        c.committed = c.next = offset;
        c.not_before = 0;
        c.deliveries.clear();
        c.entries.clear();
        trim(t, p);
        e.ok_statuses = {MQ_OK};
    }

private:
    size_t max_message_bytes_;
};

}  // namespace fuzzmodel
