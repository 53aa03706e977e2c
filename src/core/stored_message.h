// How one message lies in its partition's arena, and how a view of it is read back.
//
// A plain message (no headers, not a dead letter, not delayed) is its key bytes followed by its
// payload bytes, nothing else: the common case pays nothing for the rare fields. A message with
// headers, a dead-letter origin or a delay starts with an Extras block, 8-aligned because views
// point into it:
//
//   Extras | deliver-at (int64_t ns, if delayed) | mq_dead_letter (if a dead letter) |
//   mq_header[header_count] | key | payload | every header's name and value bytes
//
// The mq_header array is what a view's `headers` points at; its name and value pointers point
// at the bytes after the payload. Arena chunks never move, so these pointers stay good for as
// long as the message's bytes do.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "mq.h"

namespace mq {

struct Extras {
    uint64_t header_count;
    uint32_t header_bytes;  // names and values: part of the message's weight (record_bytes)
    uint16_t dead_letter;   // 1: an mq_dead_letter follows
    uint16_t delayed;       // 1: the deliver-at time follows first (mq_record.delay_ms > 0)
};
static_assert(sizeof(Extras) % alignof(mq_header) == 0 && alignof(Extras) >= alignof(mq_header));
static_assert(sizeof(mq_dead_letter) % alignof(mq_header) == 0);

// Zero-length keys, payloads and header fields point here, so a view's pointers are never NULL
// (the key's is, when the message has no key).
inline constexpr char kEmptyBytes[1] = {0};

// The arena bytes a message with extras needs, alignment slack included. `bytes` is its
// record_bytes (key, payload, header names and values).
inline size_t extras_message_size(size_t header_count, bool dead_letter, size_t bytes,
                                  bool delayed = false) noexcept {
    return alignof(Extras) - 1 + sizeof(Extras) + (delayed ? sizeof(int64_t) : 0) +
           (dead_letter ? sizeof(mq_dead_letter) : 0) + header_count * sizeof(mq_header) + bytes;
}

// When a message published at `timestamp` with mq_record.delay_ms may be handed out (saturating:
// a delay of 2^40 ms on a clock near its end must not wrap into the past).
inline int64_t deliver_at(int64_t timestamp, int64_t delay_ms) noexcept {
    const int64_t delay_ns = delay_ms * 1000000;  // at most 2^40 ms: fits
    return timestamp > INT64_MAX - delay_ns ? INT64_MAX : timestamp + delay_ns;
}

// Writes a message with extras into `at` (extras_message_size bytes) and returns where it starts
// (the aligned Extras). `header_bytes` is header_bytes(r.headers, r.header_count).
// `timestamp` is the message's, for a delayed one's deliver-at time.
inline char *write_extras_message(char *at, const mq_record &r, const mq_dead_letter *origin,
                                  size_t header_bytes, int64_t timestamp = 0) noexcept {
    const auto addr = reinterpret_cast<uintptr_t>(at);
    char *start = at + (alignof(Extras) - addr % alignof(Extras)) % alignof(Extras);
    const bool delayed = r.delay_ms > 0;
    const Extras ex{r.header_count, static_cast<uint32_t>(header_bytes),
                    static_cast<uint16_t>(origin ? 1 : 0), static_cast<uint16_t>(delayed ? 1 : 0)};
    std::memcpy(start, &ex, sizeof ex);
    char *p = start + sizeof ex;
    if (delayed) {
        const int64_t due = deliver_at(timestamp, r.delay_ms);
        std::memcpy(p, &due, sizeof due);
        p += sizeof due;
    }
    if (origin) {
        std::memcpy(p, origin, sizeof *origin);
        p += sizeof *origin;
    }
    auto *headers = reinterpret_cast<mq_header *>(p);
    p += r.header_count * sizeof(mq_header);
    const size_t key_len = r.key ? r.key_len : 0;
    if (key_len) std::memcpy(p, r.key, key_len);
    p += key_len;
    if (r.payload_len) std::memcpy(p, r.payload, r.payload_len);
    p += r.payload_len;
    for (size_t i = 0; i < r.header_count; i++) {
        const mq_header &h = r.headers[i];
        mq_header stored{kEmptyBytes, h.name_len, kEmptyBytes, h.value_len};
        if (h.name_len) {
            std::memcpy(p, h.name, h.name_len);
            stored.name = p;
            p += h.name_len;
        }
        if (h.value_len) {
            std::memcpy(p, h.value, h.value_len);
            stored.value = p;
            p += h.value_len;
        }
        headers[i] = stored;
    }
    return start;
}

// What a view of a message with extras needs from them.
struct ExtrasView {
    const mq_dead_letter *dead_letter;
    const mq_header *headers;  // NULL when there are none
    size_t header_count;
    const char *key;  // where key and payload start
    uint32_t header_bytes;
    int64_t deliver_at;  // INT64_MIN when not delayed
};

inline ExtrasView read_extras(const char *data) noexcept {
    Extras ex;
    std::memcpy(&ex, data, sizeof ex);
    const char *p = data + sizeof ex;
    int64_t due = INT64_MIN;
    if (ex.delayed) {
        std::memcpy(&due, p, sizeof due);
        p += sizeof due;
    }
    const mq_dead_letter *dl = nullptr;
    if (ex.dead_letter) {
        dl = reinterpret_cast<const mq_dead_letter *>(p);
        p += sizeof(mq_dead_letter);
    }
    const auto *headers = ex.header_count ? reinterpret_cast<const mq_header *>(p) : nullptr;
    p += ex.header_count * sizeof(mq_header);
    return {dl, headers, static_cast<size_t>(ex.header_count), p, ex.header_bytes, due};
}

}  // namespace mq
