#include "util/crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace mq {
namespace {

constexpr uint32_t kPoly = 0x82F63B78u;  // the Castagnoli polynomial, reflected

constexpr std::array<uint32_t, 256> make_table() {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = (c >> 1) ^ (kPoly & (0u - (c & 1u)));
        t[i] = c;
    }
    return t;
}
constexpr std::array<uint32_t, 256> kTable = make_table();

uint32_t crc_table(const unsigned char *p, size_t n, uint32_t c) noexcept {
    while (n--) c = kTable[(c ^ *p++) & 0xffu] ^ (c >> 8);
    return c;
}

#if defined(__x86_64__)
[[gnu::target("sse4.2")]] uint32_t crc_sse42(const unsigned char *p, size_t n,
                                             uint32_t c) noexcept {
    uint64_t c64 = c;
    for (; n >= 8; n -= 8, p += 8) {
        uint64_t w;
        std::memcpy(&w, p, sizeof w);
        c64 = _mm_crc32_u64(c64, w);
    }
    c = static_cast<uint32_t>(c64);
    for (; n; n--) c = _mm_crc32_u8(c, *p++);
    return c;
}

bool have_sse42() noexcept {
    static const bool have = __builtin_cpu_supports("sse4.2");
    return have;
}
#endif

}  // namespace

uint32_t crc32c(const void *data, size_t len, uint32_t crc) noexcept {
    const auto *p = static_cast<const unsigned char *>(data);
    const uint32_t c = ~crc;
#if defined(__x86_64__)
    if (have_sse42()) return ~crc_sse42(p, len, c);
#endif
    return ~crc_table(p, len, c);
}

namespace detail {
// The table version alone, for the test that both agree.
uint32_t crc32c_portable(const void *data, size_t len, uint32_t crc) noexcept {
    return ~crc_table(static_cast<const unsigned char *>(data), len, ~crc);
}
}  // namespace detail

}  // namespace mq
