// Kafka's default partitioner (Utils.murmur2 and toPositive), so a key lands on the partition
// number Kafka would choose for the same partition count.
#pragma once

#include <cstddef>
#include <cstdint>

namespace mq {

int32_t murmur2(const void *data, size_t len) noexcept;

inline int32_t partition_for_key(const void *key, size_t len, int32_t partitions) noexcept {
    return static_cast<int32_t>((static_cast<uint32_t>(murmur2(key, len)) & 0x7fffffffu) %
                                static_cast<uint32_t>(partitions));
}

}  // namespace mq
