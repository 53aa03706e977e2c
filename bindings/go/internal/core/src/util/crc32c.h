// CRC-32C (Castagnoli), the checksum every record of a durable log carries (as Kafka's record
// batches, ext4 and iSCSI do): the SSE4.2 instruction where the CPU has it, a table otherwise.
#pragma once

#include <cstddef>
#include <cstdint>

namespace mq {

// The CRC-32C of data, continuing from `crc` (the value a previous call returned; 0 to start),
// so a record can be checksummed in pieces: crc32c(b, nb, crc32c(a, na)) == crc32c(ab, na + nb).
uint32_t crc32c(const void *data, size_t len, uint32_t crc = 0) noexcept;

}  // namespace mq
