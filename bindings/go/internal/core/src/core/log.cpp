#include "core/log.h"

#include <cstring>

#include "core/record.h"
#include "core/stored_message.h"

namespace mq {
namespace {

size_t initial_slots(int64_t capacity) {
    size_t n = 16;
    while (n < static_cast<uint64_t>(capacity) && n < 1024) n *= 2;
    return n;
}

}  // namespace

Log::Log(int64_t capacity) : slots_(initial_slots(capacity)) {}

void Log::grow_slots() {
    std::vector<Slot> bigger(slots_.size() * 2);
    const size_t mask = bigger.size() - 1;
    for (int64_t o = start_; o < end_; o++) bigger[static_cast<size_t>(o) & mask] = slot(o);
    slots_.swap(bigger);
}

template <bool kIndexed>
void Log::append_run(const mq_record *records, const uint32_t *idx, size_t n, int64_t now,
                     mq_publish_result *results, size_t *appended) {
    while (static_cast<size_t>(end_ - start_) + n > slots_.size()) grow_slots();
    const size_t mask = slots_.size() - 1;
    Slot *const slots = slots_.data();
    now = stamp(now);
    const int64_t first = end_;
    int64_t offset = first;
    int64_t bytes_total = bytes_;
    // Commits what was appended, also when the arena throws part-way.
    struct Commit {
        Log &log;
        int64_t &offset, &bytes_total;
        const int64_t first;
        size_t *appended;
        ~Commit() {
            log.end_ = offset;
            log.bytes_ = bytes_total;
            *appended += static_cast<size_t>(offset - first);
            log.max_size_ = std::max(log.max_size_, log.end_ - log.start_);
        }
    } commit{*this, offset, bytes_total, first, appended};
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

template void Log::append_run<true>(const mq_record *, const uint32_t *, size_t, int64_t,
                                    mq_publish_result *, size_t *);
template void Log::append_run<false>(const mq_record *, const uint32_t *, size_t, int64_t,
                                     mq_publish_result *, size_t *);

int64_t Log::pass(size_t n) noexcept {
    const int64_t first = end_;
    end_ += static_cast<int64_t>(n);
    start_ = end_;
    return first;
}

int64_t Log::start_to_fit(size_t incoming, int64_t capacity, int64_t max_bytes) const noexcept {
    int64_t s = start_;
    int64_t held = bytes_;
    auto over = [&] {
        if (s == end_) return false;
        if (end_ - s >= capacity) return true;
        return max_bytes && held + static_cast<int64_t>(incoming) > max_bytes;
    };
    while (over()) held -= static_cast<int64_t>(weight(slot(s++)));
    return s;
}

int64_t Log::start_after_age(int64_t now, int64_t max_age) const noexcept {
    int64_t s = start_;
    while (s < end_ && now - slot(s).timestamp_ns >= max_age) s++;
    return s;
}

}  // namespace mq
