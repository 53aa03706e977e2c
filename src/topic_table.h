// Topic lookup by name without a lock, so looking a topic up never serialises publishers.
//
// Topics are never removed, so an open-addressing table of atomic pointers suffices: readers
// probe it lock-free; writers (topic create, under the broker's admin lock) insert, and when it
// gets half full publish a table twice the size. Old tables stay alive until the broker goes
// (their sizes are geometric, so together no bigger than the current one).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "topic.h"

namespace mq {

class TopicTable {
public:
    TopicTable();
    Topic *find(std::string_view name) const noexcept;
    void insert(Topic *topic);  // caller holds the admin lock; may throw bad_alloc (no change)

private:
    struct Table {
        explicit Table(size_t n) : slots(n) {}
        std::vector<std::atomic<Topic *>> slots;  // power-of-two size
    };
    static uint64_t hash(std::string_view s) noexcept;
    static void place(Table &t, Topic *topic) noexcept;

    std::atomic<Table *> current_;
    std::vector<std::unique_ptr<Table>> tables_;
    size_t count_ = 0;
};

}  // namespace mq
