#include "core/log.h"

namespace mq {

Log::Log(int64_t capacity) : memory_(capacity) {}

Log::Log(std::unique_ptr<LogStore> store) : memory_(1), other_(std::move(store)) {}

template <bool kIndexed>
void Log::append_run(const mq_record *records, const uint32_t *idx, size_t n, int64_t now,
                     mq_publish_result *results, size_t *appended) {
    size_t stored = 0;
    int64_t retained = bytes_;
    // Commits what was stored, also when the store throws part-way.
    struct Commit {
        Log &log;
        size_t &stored;
        int64_t &retained;
        size_t *appended;
        ~Commit() {
            log.end_ += static_cast<int64_t>(stored);
            log.bytes_ = retained;
            *appended += stored;
            log.max_size_ = std::max(log.max_size_, log.end_ - log.start_);
        }
    } commit{*this, stored, retained, appended};
    on_store([&](auto &s) {
        s.reserve(start_, end_, n);
        s.put_run(end_, records, kIndexed ? idx : nullptr, n, stamp(now), results, &stored,
                  &retained);
    });
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
    on_store([&](auto &store) {
        while (over()) held -= static_cast<int64_t>(store.weight(s++));
    });
    return s;
}

int64_t Log::start_after_age(int64_t now, int64_t max_age) const noexcept {
    int64_t s = start_;
    on_store([&](auto &store) {
        while (s < end_ && now - store.timestamp(s) >= max_age) s++;
    });
    return s;
}

}  // namespace mq
