#include "core/topic_table.h"

#include <cstring>
#include <memory>

namespace mq {
namespace {
std::atomic<int64_t> tables_alive{0};
}

TopicTable::Table::Table(size_t n) : slots(n) {
    tables_alive.fetch_add(1, std::memory_order_relaxed);
}
TopicTable::Table::~Table() { tables_alive.fetch_sub(1, std::memory_order_relaxed); }

int64_t TopicTable::alive_for_testing() noexcept {
    return tables_alive.load(std::memory_order_relaxed);
}

// An address no topic has: a deleted topic's slot, which probes pass over.
Topic *TopicTable::tombstone() noexcept {
    static char mark;
    return reinterpret_cast<Topic *>(&mark);
}

TopicTable::TopicTable(Reclaimer &reclaimer) : reclaimer_(reclaimer) {
    current_.store(new Table(16), std::memory_order_release);
}

TopicTable::~TopicTable() { delete current_.load(std::memory_order_relaxed); }

// Eight bytes at a time (names are short, and this runs on every call that names a topic).
uint64_t TopicTable::hash(std::string_view s) noexcept {
    uint64_t h = 0x9e3779b97f4a7c15ull ^ s.size();
    size_t i = 0;
    for (; i + 8 <= s.size(); i += 8) {
        uint64_t w;
        std::memcpy(&w, s.data() + i, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdull;
        h ^= h >> 32;
    }
    uint64_t tail = 0;
    std::memcpy(&tail, s.data() + i, s.size() - i);
    h = (h ^ tail) * 0xc4ceb9fe1a85ec53ull;
    return h ^ (h >> 29);
}

Topic *TopicTable::find(std::string_view name) const noexcept {
    const Table *t = current_.load(std::memory_order_acquire);
    const size_t mask = t->slots.size() - 1;
    for (size_t i = hash(name) & mask;; i = (i + 1) & mask) {
        Topic *topic = t->slots[i].load(std::memory_order_acquire);
        if (!topic) return nullptr;
        if (topic != tombstone() && topic->name() == name) return topic;
    }
}

// Into the first free slot (a tombstone's too: the caller checked that the name is not there).
void TopicTable::place(Table &t, Topic *topic) noexcept {
    const size_t mask = t.slots.size() - 1;
    size_t i = hash(topic->name()) & mask;
    for (;; i = (i + 1) & mask) {
        Topic *at = t.slots[i].load(std::memory_order_relaxed);
        if (!at || at == tombstone()) break;
    }
    t.slots[i].store(topic, std::memory_order_release);
}

void TopicTable::insert(Topic *topic) {
    Table *t = current_.load(std::memory_order_relaxed);
    if ((used_ + 1) * 2 <= t->slots.size()) {
        // A tombstone on the probe path is reused, so `used_` grows only into an empty slot.
        const size_t mask = t->slots.size() - 1;
        size_t i = hash(topic->name()) & mask;
        while (Topic *at = t->slots[i].load(std::memory_order_relaxed)) {
            if (at == tombstone()) break;
            i = (i + 1) & mask;
        }
        if (!t->slots[i].load(std::memory_order_relaxed)) used_++;
        t->slots[i].store(topic, std::memory_order_release);
        count_++;
        return;
    }
    // Sized so that the live topics fill a quarter: as many inserts again before the next.
    size_t n = 16;
    while (n < (count_ + 1) * 4) n *= 2;
    reclaimer_.reserve(1);
    auto fresh = std::make_unique<Table>(n);
    for (auto &slot : t->slots) {
        Topic *old = slot.load(std::memory_order_relaxed);
        if (old && old != tombstone()) place(*fresh, old);
    }
    place(*fresh, topic);
    current_.store(fresh.release(), std::memory_order_release);
    count_++;
    used_ = count_;
    reclaimer_.retire(t, [](void *p) { delete static_cast<Table *>(p); });
}

void TopicTable::erase(Topic *topic) noexcept {
    Table *t = current_.load(std::memory_order_relaxed);
    const size_t mask = t->slots.size() - 1;
    for (size_t i = hash(topic->name()) & mask;; i = (i + 1) & mask) {
        Topic *at = t->slots[i].load(std::memory_order_relaxed);
        if (!at) return;  // not there (the caller found it: not reached)
        if (at == topic) {
            t->slots[i].store(tombstone(), std::memory_order_release);
            count_--;
            return;
        }
    }
}

}  // namespace mq
