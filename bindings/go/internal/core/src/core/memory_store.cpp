#include "core/memory_store.h"

#include "core/record.h"

namespace mq {
namespace {

size_t initial_slots(int64_t capacity) {
    size_t n = 16;
    while (n < static_cast<uint64_t>(capacity) && n < 1024) n *= 2;
    return n;
}

}  // namespace

MemoryStore::MemoryStore(int64_t capacity) : slots_(initial_slots(capacity)) {}

void MemoryStore::grow(int64_t start, int64_t end) {
    std::vector<Slot> bigger(slots_.size() * 2);
    const size_t mask = bigger.size() - 1;
    for (int64_t o = start; o < end; o++) bigger[static_cast<size_t>(o) & mask] = slot(o);
    slots_.swap(bigger);
}

void MemoryStore::put_run(int64_t first, const mq_record *records, const uint32_t *idx, size_t n,
                          int64_t timestamp, mq_publish_result *results, size_t *stored,
                          int64_t *retained) {
    if (idx) {
        put_run<true>(first, records, idx, n, timestamp, results, stored, retained);
    } else {
        put_run<false>(first, records, idx, n, timestamp, results, stored, retained);
    }
}

template <bool kIndexed>
void MemoryStore::put_run(int64_t first, const mq_record *records, const uint32_t *idx, size_t n,
                          int64_t timestamp, mq_publish_result *results, size_t *stored,
                          int64_t *retained) {
    const size_t mask = slots_.size() - 1;
    Slot *const slots = slots_.data();
    int64_t offset = first;
    int64_t bytes_total = *retained;
    // Reports what was stored, also when the arena throws part-way.
    struct Commit {
        int64_t &offset, &bytes_total;
        const int64_t first;
        size_t *stored;
        int64_t *retained;
        ~Commit() {
            *stored += static_cast<size_t>(offset - first);
            *retained = bytes_total;
        }
    } commit{offset, bytes_total, first, stored, retained};
    Arena::Run arena(arena_);
    for (size_t k = 0; k < n; k++) {
        const size_t at = kIndexed ? idx[k] : k;
        const mq_record &r = records[at];
        const size_t key_len = r.key ? r.key_len : 0;
        size_t bytes = key_len + r.payload_len;
        uint32_t payload_field = static_cast<uint32_t>(r.payload_len);
        const char *data = kEmptyBytes;
        if (r.header_count | static_cast<uint64_t>(r.delay_ms)) [[unlikely]] {
            const size_t hbytes = header_bytes(r.headers, r.header_count);
            bytes += hbytes;
            const size_t size = extras_message_size(r.header_count, false, bytes, r.delay_ms > 0);
            char *to = arena.take(size, offset, static_cast<size_t>(bytes_total));
            data = write_extras_message(to, r, nullptr, hbytes, timestamp);
            if (r.delay_ms > 0)
                latest_due_ = std::max(latest_due_, deliver_at(timestamp, r.delay_ms));
            payload_field |= kExtras;
        } else if (bytes) {
            char *to = arena.take(bytes, offset, static_cast<size_t>(bytes_total));
            if (key_len) std::memcpy(to, r.key, key_len);
            if (r.payload_len) std::memcpy(to + key_len, r.payload, r.payload_len);
            data = to;
        }
        const uint32_t key_field = static_cast<uint32_t>(key_len) | (r.key ? 0 : kNoKey);
        slots[static_cast<size_t>(offset) & mask] = Slot{data, key_field, payload_field, timestamp};
        if (results) results[at].offset = offset;
        bytes_total += static_cast<int64_t>(bytes);
        offset++;
    }
}

}  // namespace mq
