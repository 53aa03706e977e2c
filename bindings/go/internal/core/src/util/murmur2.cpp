#include "util/murmur2.h"

#include <cstring>

namespace mq {

// A transcription of org.apache.kafka.common.utils.Utils.murmur2 (seed 0x9747b28c), with
// unsigned arithmetic standing in for Java's wrapping int arithmetic.
int32_t murmur2(const void *data, size_t len) noexcept {
    const auto *bytes = static_cast<const unsigned char *>(data);
    const uint32_t seed = 0x9747b28cu;
    const uint32_t m = 0x5bd1e995u;
    const int r = 24;
    const auto length = static_cast<uint32_t>(len);
    uint32_t h = seed ^ length;
    const uint32_t length4 = length / 4;
    for (uint32_t i = 0; i < length4; i++) {
        const uint32_t i4 = i * 4;
        uint32_t k = static_cast<uint32_t>(bytes[i4 + 0]) |
                     (static_cast<uint32_t>(bytes[i4 + 1]) << 8) |
                     (static_cast<uint32_t>(bytes[i4 + 2]) << 16) |
                     (static_cast<uint32_t>(bytes[i4 + 3]) << 24);
        k *= m;
        k ^= k >> r;
        k *= m;
        h *= m;
        h ^= k;
    }
    const uint32_t tail = length & ~3u;
    switch (length % 4) {
        case 3: h ^= static_cast<uint32_t>(bytes[tail + 2]) << 16; [[fallthrough]];
        case 2: h ^= static_cast<uint32_t>(bytes[tail + 1]) << 8; [[fallthrough]];
        case 1: h ^= static_cast<uint32_t>(bytes[tail]); h *= m;
    }
    h ^= h >> 13;
    h *= m;
    h ^= h >> 15;
    int32_t out;
    std::memcpy(&out, &h, sizeof out);
    return out;
}

}  // namespace mq
