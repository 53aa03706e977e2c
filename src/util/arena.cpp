#include "util/arena.h"

#include <utility>

namespace mq {

char *Arena::allocate_chunk(size_t n, int64_t offset, size_t retained) {
    Chunk c;
    for (size_t i = 0; i < spare_.size(); i++) {
        if (spare_[i].cap >= n) {
            c = std::move(spare_[i]);
            spare_[i] = std::move(spare_.back());
            spare_.pop_back();
            spare_bytes_ -= c.cap;
            break;
        }
    }
    if (!c.buf) {
        size_t cap = kMinChunk;
        while (cap < kMaxChunk && cap < retained / 4) cap *= 2;
        if (cap < n) cap = n;
        c.buf = std::make_unique<char[]>(cap);
        c.cap = cap;
        chunk_bytes_ += cap;
    }
    c.used = n;
    c.last_offset = offset;
    char *p = c.buf.get();
    try {
        push_live(std::move(c));
    } catch (...) {
        retire(std::move(c));
        throw;
    }
    return p;
}

void Arena::push_live(Chunk &&c) {
    if (count_ == live_.size()) {
        std::vector<Chunk> bigger(live_.empty() ? 4 : live_.size() * 2);
        for (size_t i = 0; i < count_; i++) bigger[i] = std::move(live_at(i));
        live_ = std::move(bigger);
        head_ = 0;
    }
    live_at(count_) = std::move(c);
    count_++;
}

void Arena::trim(int64_t start) noexcept {
    while (count_ > 0 && live_at(0).last_offset < start) {
        if (count_ == 1) {
            // The newest chunk stays live, emptied in place: a log that empties after every
            // message (publish, poll, ack) would otherwise move its one chunk to the spares
            // and back on each message. Nothing below `start` can be read any more.
            Chunk &c = live_at(0);
            c.used = 0;
            c.last_offset = -1;
            return;
        }
        Chunk c = std::move(live_at(0));
        head_ = (head_ + 1) & (live_.size() - 1);
        count_--;
        retire(std::move(c));
    }
}

void Arena::retire(Chunk &&c) noexcept {
    c.used = 0;
    c.last_offset = -1;
    // spare_ only grows while under the byte limit and keeps its capacity, so pushing here can
    // only allocate during warm-up; if even that fails the chunk is simply freed.
    if (spare_bytes_ + c.cap <= kMaxSpareBytes || spare_.empty()) {
        try {
            spare_bytes_ += c.cap;
            spare_.push_back(std::move(c));
            return;
        } catch (...) {
            spare_bytes_ -= c.cap;
        }
    }
    chunk_bytes_ -= c.cap;
}

}  // namespace mq
