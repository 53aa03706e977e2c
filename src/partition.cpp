// The log of a partition: append, back-pressure, retention (until acked, bounded, max age)
// and trimming.
#include "partition.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "cancel.h"
#include "error.h"
#include "record.h"
#include "stored_message.h"

namespace mq {
namespace {

size_t initial_slots(int64_t capacity) {
    size_t n = 16;
    while (n < static_cast<uint64_t>(capacity) && n < 1024) n *= 2;
    return n;
}

}  // namespace

Partition::Partition(int32_t index, const TopicSettings &settings, const Clock &clock,
                     const std::atomic<bool> &closed)
    : index_(index),
      settings_(settings),
      clock_(clock),
      closed_(closed),
      slots_(initial_slots(settings.capacity)) {}

mq_status Partition::closed_status() const noexcept {
    return fail_fixed(MQ_CLOSED, "the broker is closed");
}

mq_status Partition::no_group(Deferred &err, const Group *g) const noexcept {
    return err.fail(MQ_ERR_NO_GROUP, "group %s is no longer subscribed to topic %s", g->name.c_str(),
                settings_.topic->c_str());
}

Cursor *Partition::find(const Group *g) noexcept {
    for (Cursor &c : cursors_) {
        if (c.group == g) return &c;
    }
    return nullptr;
}

Cursor *Partition::find_owned(const Group *g, Caller who, Deferred &err, mq_status *st) noexcept {
    Cursor *c = find(g);
    if (!c) {
        *st = no_group(err, g);
        return nullptr;
    }
    if (!who.owner) return c;
    if (c->owner != who.owner) {
        *st = err.fail(MQ_ERR_FENCED,
                   "partition %d of topic %s is not assigned to this consumer of group %s any "
                   "more (the group rebalanced); fetch the new assignment",
                   index_, settings_.topic->c_str(), g->name.c_str());
        return nullptr;
    }
    if (c->owner_generation > who.seen_generation) {  // it moved away and back meanwhile
        *st = err.fail(MQ_REBALANCED,
                   "group %s rebalanced to generation %lld; fetch the new assignment with "
                   "mq_member_get_assignment",
                   g->name.c_str(), static_cast<long long>(c->owner_generation));
        return nullptr;
    }
    return c;
}

// One publisher per freed slot is enough when only the message count limits them; a byte
// budget may let any of them (or none) fit, so then all of them look.
int64_t Partition::publishers_to_wake(int64_t freed) const noexcept {
    if (!publishers_waiting_ || freed <= 0) return 0;
    if (settings_.max_bytes || freed >= publishers_waiting_) return INT64_MAX;
    return freed;
}

bool Partition::announce() noexcept {
    changes_.store(changes_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
    if (!w_.watchers.empty()) w_.signal_watchers();
    return pollers_waiting_ > 0;
}

void Partition::send(const Wakeup &w) noexcept {
    if (w.consumers) w_.not_empty.notify_all();
    if (w.publishers == INT64_MAX) {
        w_.not_full.notify_all();
    } else {
        for (int64_t i = 0; i < w.publishers; i++) w_.not_full.notify_one();
    }
}

std::chrono::steady_clock::time_point Partition::real_time_of(int64_t clock_ns,
                                                              int64_t now) const noexcept {
    return std::chrono::steady_clock::now() +
           std::chrono::nanoseconds(std::max<int64_t>(clock_ns - now, 0));
}

void Partition::spin_for_change(std::unique_lock<Mutex> &lk, const Wait &wait) noexcept {
    if (settings_.spin_ns <= 0) return;
    const uint64_t seen = changes_.load(std::memory_order_acquire);
    lk.unlock();
    spin_until_changed(changes_, seen, wait.spin_until_ns(steady_now_ns(), settings_.spin_ns),
                       [&] { return closed_.load(std::memory_order_relaxed); });
    lk.lock();
}

// ---- back-pressure -------------------------------------------------------------------------

bool Partition::has_room(size_t bytes) const noexcept {
    if (cursors_.empty() || settings_.bounded) return true;  // nothing kept, or oldest dropped
    if (end_ - start_ >= settings_.capacity) return false;
    return settings_.max_bytes == 0 || bytes_ + static_cast<int64_t>(bytes) <= settings_.max_bytes;
}

mq_status Partition::wait_for_room(std::unique_lock<Mutex> &lk, size_t bytes, Wait wait,
                                   const CancelScope &cancel, bool &waited) {
    for (;;) {
        if (closed_.load(std::memory_order_acquire)) return closed_status();
        int64_t now = 0;
        if (settings_.max_age_ns) expire(now = clock_.now());
        if (has_room(bytes)) return MQ_OK;
        if (wait.over()) {
            return fail_fixed(MQ_FULL,
                              "the partition stayed full for the whole wait (its backlog at "
                              "capacity, or its byte budget used)");
        }
        if (cancel.triggered())
            return fail_fixed(MQ_CANCELLED, "publish cancelled by its mq_cancel token");
        if (!waited) {
            waited = true;
            producer_waits_++;
        }
        // The oldest message ageing out makes room too, so wait no longer than that.
        bool timed = wait.kind == Wait::kUntil;
        auto wake = wait.at;
        if (settings_.max_age_ns && start_ < end_) {
            auto expiry = real_time_of(slot(start_).timestamp_ns + settings_.max_age_ns, now);
            if (!timed || expiry < wake) wake = expiry;
            timed = true;
        }
        publishers_waiting_++;
        if (timed) {
            w_.not_full.wait_until(lk, wake);
        } else {
            w_.not_full.wait(lk);
        }
        publishers_waiting_--;
    }
}

// ---- append --------------------------------------------------------------------------------

void Partition::grow_slots() {
    std::vector<Slot> bigger(slots_.size() * 2);
    const size_t mask = bigger.size() - 1;
    for (int64_t o = start_; o < end_; o++) bigger[static_cast<size_t>(o) & mask] = slot(o);
    slots_.swap(bigger);
}

int64_t Partition::append(const mq_record &r, size_t bytes, const mq_dead_letter *origin,
                          int64_t now) {
    const int64_t offset = end_;
    if (cursors_.empty()) {  // Rule 8: with no groups a message is trimmed as it is appended
        end_++;
        start_ = end_;
        return offset;
    }
    if (settings_.bounded) make_room(bytes);
    if (static_cast<size_t>(end_ - start_) == slots_.size()) grow_slots();
    const size_t key_len = r.key ? r.key_len : 0;
    uint32_t key_field = static_cast<uint32_t>(key_len) | (r.key ? 0 : kNoKey);
    uint32_t payload_field = static_cast<uint32_t>(r.payload_len);
    const char *data = kEmptyBytes;
    if (r.header_count || origin) {
        const size_t size = extras_message_size(r.header_count, origin != nullptr, bytes);
        char *at = arena_.allocate(size, offset, static_cast<size_t>(bytes_));
        data = write_extras_message(at, r, origin, bytes - key_len - r.payload_len);
        payload_field |= kExtras;
    } else if (bytes) {
        char *at = arena_.allocate(bytes, offset, static_cast<size_t>(bytes_));
        if (key_len) std::memcpy(at, r.key, key_len);
        if (r.payload_len) std::memcpy(at + key_len, r.payload, r.payload_len);
        data = at;
    }
    now = stamp(now);
    slot(offset) = Slot{data, key_field, payload_field, now};
    bytes_ += static_cast<int64_t>(bytes);
    end_++;
    max_backlog_ = std::max(max_backlog_, end_ - start_);
    return offset;
}

mq_status Partition::publish(const mq_record &r, Wait wait, mq_cancel *cancel, int64_t *offset,
                             const mq_dead_letter *origin) {
    CancelScope scope(cancel, w_);
    int64_t now = clock_.now();
    bool wake;
    {
        std::unique_lock lk(w_.mu);
        bool waited = false;
        const size_t bytes = record_bytes(r);
        if (mq_status st = wait_for_room(lk, bytes, wait, scope, waited); st != MQ_OK) return st;
        if (waited) now = clock_.now();
        *offset = append(r, bytes, origin, now);
        wake = announce();
    }
    send({wake, 0});
    return MQ_OK;
}

// How many of records [i, n) fit without waiting, when only the message count limits them
// (the common case, taken a run at a time); 0 sends each record through wait_for_room.
size_t Partition::room_for_run(size_t want) const noexcept {
    if (settings_.bounded || settings_.max_bytes || settings_.max_age_ns) return 0;
    if (cursors_.empty()) return want;
    const int64_t room = settings_.capacity - (end_ - start_);
    return room <= 0 ? 0 : std::min(want, static_cast<size_t>(room));
}

// Appends records that room_for_run said fit. Each record is committed as it is written, so
// if the arena cannot grow (bad_alloc) the records before it stay published and counted.
// kIndexed: record k is records[idx[k]] (results likewise), else records[k].
template <bool kIndexed>
void Partition::append_run(const mq_record *records, const uint32_t *idx, size_t n, int64_t now,
                           mq_publish_result *results, size_t *published) {
    if (cursors_.empty()) {  // Rule 8: trimmed as appended
        for (size_t k = 0; k < n; k++) {
            if (results) results[kIndexed ? idx[k] : k].offset = end_ + static_cast<int64_t>(k);
        }
        end_ += static_cast<int64_t>(n);
        start_ = end_;
        *published += n;
        return;
    }
    while (static_cast<size_t>(end_ - start_) + n > slots_.size()) grow_slots();
    const size_t mask = slots_.size() - 1;
    Slot *const slots = slots_.data();
    now = stamp(now);
    const int64_t first = end_;
    int64_t offset = first;
    int64_t bytes_total = bytes_;
    // Commits what was appended, also when the arena throws part-way.
    struct Commit {
        Partition &p;
        int64_t &offset, &bytes_total;
        const int64_t first;
        size_t *published;
        ~Commit() {
            p.end_ = offset;
            p.bytes_ = bytes_total;
            *published += static_cast<size_t>(offset - first);
            p.max_backlog_ = std::max(p.max_backlog_, p.end_ - p.start_);
        }
    } commit{*this, offset, bytes_total, first, published};
    Arena::Run arena(arena_);
    for (size_t k = 0; k < n; k++) {
        const size_t at = kIndexed ? idx[k] : k;
        const mq_record &r = records[at];
        const size_t key_len = r.key ? r.key_len : 0;
        size_t bytes = key_len + r.payload_len;
        uint32_t payload_field = static_cast<uint32_t>(r.payload_len);
        const char *data = kEmptyBytes;
        if (r.header_count) [[unlikely]] {
            const size_t hbytes = header_bytes(r.headers, r.header_count);
            bytes += hbytes;
            const size_t size = extras_message_size(r.header_count, false, bytes);
            char *to = arena.take(size, offset, static_cast<size_t>(bytes_total));
            data = write_extras_message(to, r, nullptr, hbytes);
            payload_field |= kExtras;
        } else if (bytes) {
            char *to = arena.take(bytes, offset, static_cast<size_t>(bytes_total));
            if (key_len) std::memcpy(to, r.key, key_len);
            if (r.payload_len) std::memcpy(to + key_len, r.payload, r.payload_len);
            data = to;
        }
        const uint32_t key_field = static_cast<uint32_t>(key_len) | (r.key ? 0 : kNoKey);
        slots[static_cast<size_t>(offset) & mask] = Slot{data, key_field, payload_field, now};
        if (results) results[at].offset = offset;
        bytes_total += static_cast<int64_t>(bytes);
        offset++;
    }
}

mq_status Partition::publish_many(const mq_record *records, const uint32_t *idx, size_t n,
                                  Wait wait, mq_cancel *cancel, mq_publish_result *results,
                                  size_t *published) {
    CancelScope scope(cancel, w_);
    int64_t now = clock_.now();  // one timestamp for the records appended together
    std::unique_lock lk(w_.mu);
    bool waited = false;
    size_t unannounced = 0;  // appended since consumers were last woken
    mq_status st = MQ_OK;
    for (size_t i = 0; i < n;) {
        if (const size_t run = room_for_run(n - i); run > 0) {
            // With idx, records and results are indexed by idx's values; without, by position.
            if (idx) {
                append_run<true>(records, idx + i, run, now, results, published);
            } else {
                append_run<false>(records + i, nullptr, run, now, results ? results + i : nullptr,
                                  published);
            }
            i += run;
            unannounced += run;
            continue;
        }
        const mq_record &r = records[idx ? idx[i] : i];
        const size_t bytes = record_bytes(r);
        if (!has_room(bytes) || settings_.max_age_ns) {
            if (unannounced) {  // consumers may make the room this batch is about to wait for
                wake_consumers();
                unannounced = 0;
            }
            st = wait_for_room(lk, bytes, wait, scope, waited);
            if (st != MQ_OK) break;
            if (waited) now = clock_.now();
        }
        const int64_t offset = append(r, bytes, nullptr, now);
        unannounced++;
        if (results) results[idx ? idx[i] : i].offset = offset;
        ++*published;
        ++i;
    }
    const bool wake = unannounced && announce();
    lk.unlock();
    send({wake, 0});
    return st;
}

size_t Partition::slot_bytes(const Slot &s) noexcept {
    size_t bytes = (s.key_len & kLenMask) + (s.payload_len & kLenMask);
    if (s.payload_len & kExtras) bytes += read_extras(s.data).header_bytes;
    return bytes;
}

// ---- retention and trim --------------------------------------------------------------------

void Partition::make_room(size_t bytes) noexcept {
    int64_t s = start_;
    int64_t held = bytes_;
    auto over = [&] {
        if (s == end_) return false;
        if (end_ - s >= settings_.capacity) return true;
        return settings_.max_bytes && held + static_cast<int64_t>(bytes) > settings_.max_bytes;
    };
    while (over()) held -= static_cast<int64_t>(slot_bytes(slot(s++)));
    if (s > start_) drop_head(s);
}

void Partition::expire(int64_t now) noexcept {
    int64_t s = start_;
    while (s < end_ && now - slot(s).timestamp_ns >= settings_.max_age_ns) s++;
    if (s > start_) drop_head(s);
}

// Moves start_ past messages that not every group acked; the groups behind skip forward and
// learn how many they lost. Their views of the dropped messages stay valid (view_floor) until
// their next poll or ack.
void Partition::drop_head(int64_t new_start) noexcept {
    for (int64_t o = start_; o < new_start; o++)
        bytes_ -= static_cast<int64_t>(slot_bytes(slot(o)));
    dropped_ += new_start - start_;
    for (Cursor &c : cursors_) {
        if (c.committed >= new_start) continue;
        const int64_t lost = new_start - c.committed;
        c.lost += lost;
        c.lost_unreported += lost;
        c.committed = new_start;
        c.next = std::max(c.next, new_start);
        c.counts.ack(new_start);
    }
    const int64_t freed = new_start - start_;
    start_ = new_start;
    release_bytes();
    wake_publishers(freed);
}

int64_t Partition::trim_quiet() noexcept {
    int64_t slowest = end_;
    for (const Cursor &c : cursors_) slowest = std::min(slowest, c.committed);
    int64_t freed = 0;
    if (slowest > start_) {
        for (int64_t o = start_; o < slowest; o++)
            bytes_ -= static_cast<int64_t>(slot_bytes(slot(o)));
        freed = slowest - start_;
        start_ = slowest;
    }
    release_bytes();
    return freed;
}

void Partition::release_bytes() noexcept {
    int64_t floor = start_;
    for (const Cursor &c : cursors_) {
        floor = std::min(floor, c.view_floor);
        for (const auto &f : c.fenced_floors) floor = std::min(floor, f.second);
    }
    arena_.trim(floor);
}

}  // namespace mq
