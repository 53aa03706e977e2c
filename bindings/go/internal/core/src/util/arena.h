// Byte storage for one partition's keys and payloads.
//
// Messages are trimmed oldest-first, so bytes are bump-allocated in chunks and a chunk is
// recycled once every message in it is trimmed. Chunks never move, which is what keeps message
// views valid until they are acked; recycling keeps steady-state publishing allocation-free.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace mq {

class Arena {
public:
    Arena() = default;
    Arena(const Arena &) = delete;
    Arena &operator=(const Arena &) = delete;

    // Makes room for n > 0 bytes of the message at `offset` and returns where to write them.
    // `retained` (the partition's retained bytes) sizes new chunks: about a quarter of it, so a
    // busy partition needs few chunks and an idle one holds little. May throw std::bad_alloc,
    // in which case nothing changed.
    char *allocate(size_t n, int64_t offset, size_t retained) {
        if (count_ > 0) {  // the common case, inline: bump the newest chunk
            Chunk &cur = live_at(count_ - 1);
            if (cur.cap - cur.used >= n) {
                char *p = cur.buf.get() + cur.used;
                cur.used += n;
                cur.last_offset = offset;
                return p;
            }
        }
        return allocate_chunk(n, offset, retained);
    }

    // Allocations for a run of messages at increasing offsets (a batch): bumped in a local copy
    // of the newest chunk's free space and written back once, so each message costs a compare
    // and an add. Nothing else may use the arena while a Run is open.
    class Run {
    public:
        explicit Run(Arena &a) noexcept : a_(a) { open(); }
        ~Run() { close(); }
        Run(const Run &) = delete;
        Run &operator=(const Run &) = delete;

        // Like Arena::allocate; may throw std::bad_alloc, with the run's earlier bytes kept.
        char *take(size_t n, int64_t offset, size_t retained) {
            if (static_cast<size_t>(lim_ - p_) >= n) {
                char *r = p_;
                p_ += n;
                last_ = offset;
                return r;
            }
            close();
            char *r = a_.allocate_chunk(n, offset, retained);
            open();
            return r;
        }

    private:
        void open() noexcept {
            last_ = -1;
            if (a_.count_ == 0) {
                base_ = p_ = lim_ = nullptr;
                return;
            }
            Chunk &c = a_.live_at(a_.count_ - 1);
            base_ = c.buf.get();
            p_ = base_ + c.used;
            lim_ = base_ + c.cap;
        }
        void close() noexcept {
            if (last_ < 0) return;
            Chunk &c = a_.live_at(a_.count_ - 1);
            c.used = static_cast<size_t>(p_ - base_);
            c.last_offset = last_;
            last_ = -1;
        }

        Arena &a_;
        char *base_, *p_, *lim_;
        int64_t last_;
    };

    // Releases every chunk whose messages all have offsets below `start`.
    void trim(int64_t start) noexcept;

    size_t chunk_bytes() const noexcept { return chunk_bytes_; }

private:
    struct Chunk {
        std::unique_ptr<char[]> buf;
        size_t cap = 0;
        size_t used = 0;
        int64_t last_offset = -1;  // the highest offset with bytes in this chunk
    };

    Chunk &live_at(size_t i) noexcept { return live_[(head_ + i) & (live_.size() - 1)]; }
    char *allocate_chunk(size_t n, int64_t offset, size_t retained);  // a new or spare chunk
    void push_live(Chunk &&c);  // may throw; nothing changes then
    void retire(Chunk &&c) noexcept;

    std::vector<Chunk> live_;  // a ring (power-of-two size) of chunks in offset order
    size_t head_ = 0;
    size_t count_ = 0;
    std::vector<Chunk> spare_;  // emptied chunks kept for reuse
    size_t spare_bytes_ = 0;
    size_t chunk_bytes_ = 0;  // bytes held in live and spare chunks

    static constexpr size_t kMinChunk = size_t{4} << 10;
    static constexpr size_t kMaxChunk = size_t{1} << 20;
    static constexpr size_t kMaxSpareBytes = size_t{8} << 20;
};

}  // namespace mq
