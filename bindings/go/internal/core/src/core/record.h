// What a record weighs: the bytes that count against max_message_bytes and a topic's byte
// budget (key, payload, and every header's name and value). One definition, used where records
// are checked (the C boundary) and where they are stored (the log).
#pragma once

#include <cstddef>

#include "mq.h"

namespace mq {

// Header bytes of a record (names and values). The caller has checked the pointers.
inline size_t header_bytes(const mq_header *h, size_t n) noexcept {
    size_t bytes = 0;
    for (size_t i = 0; i < n; i++) bytes += h[i].name_len + h[i].value_len;
    return bytes;
}

inline size_t record_bytes(const mq_record &r) noexcept {
    return (r.key ? r.key_len : 0) + r.payload_len + header_bytes(r.headers, r.header_count);
}

}  // namespace mq
