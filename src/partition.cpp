#include "partition.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "cancel.h"
#include "error.h"

namespace mq {
namespace {

// Zero-length keys and payloads point here, so a view's payload is never NULL.
constexpr char kEmpty[1] = {0};

size_t initial_slots(int64_t capacity) {
    size_t n = 16;
    while (n < static_cast<uint64_t>(capacity) && n < 1024) n *= 2;
    return n;
}

size_t record_bytes(const mq_record &r) { return (r.key ? r.key_len : 0) + r.payload_len; }

}  // namespace

Partition::Partition(int32_t index, const TopicSettings &settings, const Clock &clock,
                     const std::atomic<bool> &closed)
    : index_(index), settings_(settings), clock_(clock), closed_(closed),
      slots_(initial_slots(settings.capacity)) {}

mq_status Partition::closed_status() const noexcept {
    return fail(MQ_CLOSED, "the broker is closed");
}

Cursor *Partition::find(const Group *g) noexcept {
    for (Cursor &c : cursors_) {
        if (c.group == g) return &c;
    }
    return nullptr;
}

// ---- publishing and back-pressure --------------------------------------------------------

bool Partition::has_room(size_t bytes) const noexcept {
    if (cursors_.empty()) return true;  // nothing is kept, so nothing can be full
    if (end_ - start_ >= settings_.capacity) return false;
    return settings_.max_bytes == 0 ||
           bytes_ + static_cast<int64_t>(bytes) <= settings_.max_bytes;
}

mq_status Partition::wait_for_room(std::unique_lock<std::mutex> &lk, size_t bytes, Wait wait,
                                   const CancelScope &cancel, bool &waited) {
    for (;;) {
        if (closed_.load(std::memory_order_acquire)) return closed_status();
        if (has_room(bytes)) return MQ_OK;
        if (wait.over()) {
            return fail(MQ_FULL, "partition %d of topic %s is full (backlog %lld/%lld%s)", index_,
                        settings_.topic->c_str(), static_cast<long long>(end_ - start_),
                        static_cast<long long>(settings_.capacity),
                        settings_.max_bytes ? ", or its byte budget is used" : "");
        }
        if (cancel.triggered()) return fail(MQ_CANCELLED, "publish cancelled by its mq_cancel token");
        if (!waited) {
            waited = true;
            producer_waits_++;
        }
        publishers_waiting_++;
        if (wait.kind == Wait::kForever) {
            w_.not_full.wait(lk);
        } else {
            w_.not_full.wait_until(lk, wait.at);
        }
        publishers_waiting_--;
    }
}

void Partition::grow_slots() {
    std::vector<Slot> bigger(slots_.size() * 2);
    const size_t mask = bigger.size() - 1;
    const size_t old_mask = slots_.size() - 1;
    for (int64_t o = start_; o < end_; o++) {
        bigger[static_cast<size_t>(o) & mask] = slots_[static_cast<size_t>(o) & old_mask];
    }
    slots_.swap(bigger);
}

int64_t Partition::append(const mq_record &r, size_t bytes) {
    const int64_t offset = end_;
    if (cursors_.empty()) {  // Rule 8: with no groups a message is trimmed as it is appended
        end_++;
        start_ = end_;
        return offset;
    }
    if (static_cast<size_t>(end_ - start_) == slots_.size()) grow_slots();
    char *data = bytes ? arena_.allocate(bytes, offset, static_cast<size_t>(bytes_)) : const_cast<char *>(kEmpty);
    const size_t key_len = r.key ? r.key_len : 0;
    if (key_len) std::memcpy(data, r.key, key_len);
    if (r.payload_len) std::memcpy(data + key_len, r.payload, r.payload_len);
    slots_[static_cast<size_t>(offset) & (slots_.size() - 1)] =
        Slot{data, r.key ? static_cast<uint32_t>(key_len) : kNoKey,
             static_cast<uint32_t>(r.payload_len), clock_.now()};
    bytes_ += static_cast<int64_t>(bytes);
    end_++;
    max_backlog_ = std::max(max_backlog_, end_ - start_);
    if (pollers_waiting_) w_.not_empty.notify_all();
    return offset;
}

mq_status Partition::publish(const mq_record &r, Wait wait, mq_cancel *cancel, int64_t *offset) {
    CancelScope scope(cancel, w_);
    std::unique_lock lk(w_.mu);
    bool waited = false;
    const size_t bytes = record_bytes(r);
    if (mq_status st = wait_for_room(lk, bytes, wait, scope, waited); st != MQ_OK) return st;
    *offset = append(r, bytes);
    return MQ_OK;
}

mq_status Partition::publish_many(const mq_record *records, const uint32_t *idx, size_t n,
                                  Wait wait, mq_cancel *cancel, mq_publish_result *results,
                                  size_t *published) {
    CancelScope scope(cancel, w_);
    std::unique_lock lk(w_.mu);
    bool waited = false;
    for (size_t i = 0; i < n; i++) {
        const mq_record &r = records[idx[i]];
        const size_t bytes = record_bytes(r);
        if (mq_status st = wait_for_room(lk, bytes, wait, scope, waited); st != MQ_OK) return st;
        const int64_t offset = append(r, bytes);
        if (results) results[idx[i]].offset = offset;
        ++*published;
    }
    return MQ_OK;
}

// ---- consuming -----------------------------------------------------------------------------

void Partition::fill(mq_message &m, int64_t offset, uint32_t count) const noexcept {
    const Slot &s = slots_[static_cast<size_t>(offset) & (slots_.size() - 1)];
    const size_t key_len = s.key_len == kNoKey ? 0 : s.key_len;
    m.partition = index_;
    m.delivery_count = count;
    m.offset = offset;
    m.key = s.key_len == kNoKey ? nullptr : s.data;
    m.key_len = key_len;
    m.payload = s.data + key_len;
    m.payload_len = s.payload_len;
    m.timestamp_ns = s.timestamp_ns;
}

mq_status Partition::poll(const Group *g, mq_message *out, size_t max, Wait wait,
                          mq_cancel *cancel, size_t *count) {
    CancelScope scope(cancel, w_);
    std::unique_lock lk(w_.mu);
    for (;;) {
        if (closed_.load(std::memory_order_acquire)) return closed_status();
        Cursor *c = find(g);  // found anew after every wait: the group may have gone meanwhile
        if (!c) {
            return fail(MQ_ERR_NO_GROUP, "group %s is no longer subscribed to topic %s",
                        g->name.c_str(), settings_.topic->c_str());
        }
        const int64_t now = clock_.now();
        // Rule 7: a lease that ran out rewinds the group so its in-flight messages come again.
        if (c->next > c->committed && now >= c->lease_deadline) c->next = c->committed;
        if (c->next < end_) {
            const int64_t from = c->next;
            const int64_t to = from + std::min<int64_t>(static_cast<int64_t>(max), end_ - from);
            c->counts.reserve();
            size_t i = 0;
            c->counts.deliver(from, to, [&](int64_t o, uint32_t n) { fill(out[i++], o, n); });
            c->next = to;
            c->lease_deadline = now + settings_.ack_timeout_ns;
            *count = i;
            return MQ_OK;
        }
        if (wait.over()) {
            return fail(MQ_TIMEOUT, "nothing to hand out on partition %d of topic %s for group %s",
                        index_, settings_.topic->c_str(), g->name.c_str());
        }
        if (scope.triggered()) return fail(MQ_CANCELLED, "poll cancelled by its mq_cancel token");
        // Wake for the lease too: an already-waiting poll must notice it running out.
        bool has_wake = false;
        auto wake = std::chrono::steady_clock::time_point::max();
        if (c->next > c->committed) {
            has_wake = true;
            wake = std::chrono::steady_clock::now() +
                   std::chrono::nanoseconds(std::max<int64_t>(c->lease_deadline - now, 0));
        }
        if (wait.kind == Wait::kUntil && wait.at < wake) {
            wake = wait.at;
            has_wake = true;
        }
        pollers_waiting_++;
        if (has_wake) {
            w_.not_empty.wait_until(lk, wake);
        } else {
            w_.not_empty.wait(lk);
        }
        pollers_waiting_--;
    }
}

void Partition::trim() noexcept {
    int64_t slowest = end_;
    for (const Cursor &c : cursors_) slowest = std::min(slowest, c.committed);
    if (slowest <= start_) return;
    const size_t mask = slots_.size() - 1;
    for (int64_t o = start_; o < slowest; o++) {
        const Slot &s = slots_[static_cast<size_t>(o) & mask];
        bytes_ -= (s.key_len == kNoKey ? 0 : s.key_len) + s.payload_len;
    }
    start_ = slowest;
    arena_.trim(start_);
    if (publishers_waiting_) w_.not_full.notify_all();
}

mq_status Partition::ack(const Group *g, int64_t offset) {
    std::lock_guard lk(w_.mu);
    if (closed_.load(std::memory_order_acquire)) return closed_status();
    Cursor *c = find(g);
    if (!c) {
        return fail(MQ_ERR_NO_GROUP, "group %s is no longer subscribed to topic %s",
                    g->name.c_str(), settings_.topic->c_str());
    }
    // Rule 5: only an in-flight offset can be acked; a rejected ack changes nothing.
    if (offset < c->committed || offset >= c->next) {
        if (c->next == c->committed) {
            return fail(MQ_ERR_NOT_IN_FLIGHT, "offset %lld is not in flight for %s (nothing is)",
                        static_cast<long long>(offset), g->name.c_str());
        }
        return fail(MQ_ERR_NOT_IN_FLIGHT, "offset %lld is not in flight for %s (in flight: %lld..%lld)",
                    static_cast<long long>(offset), g->name.c_str(),
                    static_cast<long long>(c->committed), static_cast<long long>(c->next - 1));
    }
    c->committed = offset + 1;
    c->counts.ack(c->committed);
    trim();
    return MQ_OK;
}

mq_status Partition::nack(const Group *g) {
    std::lock_guard lk(w_.mu);
    if (closed_.load(std::memory_order_acquire)) return closed_status();
    Cursor *c = find(g);
    if (!c) {
        return fail(MQ_ERR_NO_GROUP, "group %s is no longer subscribed to topic %s",
                    g->name.c_str(), settings_.topic->c_str());
    }
    if (c->next != c->committed) {
        c->next = c->committed;
        if (pollers_waiting_) w_.not_empty.notify_all();
    }
    return MQ_OK;
}

// ---- groups and ownership ------------------------------------------------------------------

void Partition::add_group(const Group *g, mq_start start) {
    std::lock_guard lk(w_.mu);
    const int64_t at = start == MQ_START_EARLIEST ? start_ : end_;
    Cursor c{g, at, at, 0, 0, {}};
    c.counts.reset(at);
    cursors_.push_back(std::move(c));
}

void Partition::remove_group(const Group *g) {
    std::lock_guard lk(w_.mu);
    auto it = std::find_if(cursors_.begin(), cursors_.end(),
                           [g](const Cursor &c) { return c.group == g; });
    if (it == cursors_.end()) return;
    cursors_.erase(it);
    trim();
    // Pollers of the removed group must wake to learn it is gone.
    if (pollers_waiting_) w_.not_empty.notify_all();
}

bool Partition::owned_by_other(const Group *g, uint64_t owner) {
    std::lock_guard lk(w_.mu);
    Cursor *c = find(g);
    return c && c->owner != 0 && c->owner != owner;
}

void Partition::set_owner(const Group *g, uint64_t owner) {
    std::lock_guard lk(w_.mu);
    if (Cursor *c = find(g)) c->owner = owner;
}

void Partition::release_owner(const Group *g, uint64_t owner) {
    std::lock_guard lk(w_.mu);
    Cursor *c = find(g);
    if (c && c->owner == owner) c->owner = 0;
}

// ---- introspection -------------------------------------------------------------------------

void Partition::info(mq_partition_info &out) {
    std::lock_guard lk(w_.mu);
    out.start = start_;
    out.end = end_;
    out.backlog = end_ - start_;
    out.capacity = settings_.capacity;
    out.retained_bytes = bytes_;
    out.max_bytes = settings_.max_bytes;
    out.producer_waits = producer_waits_;
    out.max_backlog = max_backlog_;
}

mq_status Partition::group_info(const Group *g, mq_group_info &out) {
    std::lock_guard lk(w_.mu);
    Cursor *c = find(g);
    if (!c) {
        return fail(MQ_ERR_NO_GROUP, "group %s is no longer subscribed to topic %s",
                    g->name.c_str(), settings_.topic->c_str());
    }
    out.committed = c->committed;
    out.next = c->next;
    out.lag = end_ - c->committed;
    out.in_flight = c->next - c->committed;
    return MQ_OK;
}

void Partition::describe(std::string &out) {
    std::lock_guard lk(w_.mu);
    char buf[128];
    if (end_ > start_) {
        std::snprintf(buf, sizeof buf, "log %lld..%lld, backlog %lld/%lld",
                      static_cast<long long>(start_), static_cast<long long>(end_ - 1),
                      static_cast<long long>(end_ - start_),
                      static_cast<long long>(settings_.capacity));
    } else {
        std::snprintf(buf, sizeof buf, "log empty, next offset %lld, backlog 0/%lld",
                      static_cast<long long>(end_), static_cast<long long>(settings_.capacity));
    }
    out = buf;
    for (const Cursor &c : cursors_) {
        std::snprintf(buf, sizeof buf, " %lld/%lld", static_cast<long long>(c.committed),
                      static_cast<long long>(c.next));
        out += "; ";
        out += c.group->name;
        out += buf;
    }
}

}  // namespace mq
