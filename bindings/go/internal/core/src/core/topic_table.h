// Topic lookup by name without a lock, so looking a topic up never serialises publishers.
//
// An open-addressing table of atomic pointers: readers probe it lock-free; writers (topic
// create and delete, under the broker's admin lock) insert, and erase by leaving a tombstone.
// When live topics and tombstones fill half of it, a fresh table (sized for the live topics) is
// published and the old one retired to the reclaimer: a reader inside a call may still be
// probing it.
#pragma once

#include <atomic>
#include <cstdint>
#include <string_view>
#include <vector>

#include "util/reclaim.h"
#include "core/topic.h"

namespace mq {

class TopicTable {
public:
    explicit TopicTable(Reclaimer &reclaimer);
    ~TopicTable();
    Topic *find(std::string_view name) const noexcept;
    // Both with the admin lock held. insert may throw bad_alloc (then nothing changed); erase
    // cannot fail.
    void insert(Topic *topic);
    void erase(Topic *topic) noexcept;

    // Tables published and not yet freed, this one included (for tests).
    static int64_t alive_for_testing() noexcept;

private:
    struct Table {
        explicit Table(size_t n);
        ~Table();
        std::vector<std::atomic<Topic *>> slots;  // power-of-two size
    };
    static Topic *tombstone() noexcept;
    static uint64_t hash(std::string_view s) noexcept;
    static void place(Table &t, Topic *topic) noexcept;

    Reclaimer &reclaimer_;
    std::atomic<Table *> current_;
    size_t count_ = 0;  // live topics
    size_t used_ = 0;   // live topics and tombstones
};

}  // namespace mq
