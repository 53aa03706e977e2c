#include "topic_table.h"

#include <cstring>

namespace mq {

TopicTable::TopicTable() {
    tables_.push_back(std::make_unique<Table>(16));
    current_.store(tables_.back().get(), std::memory_order_release);
}

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
        if (topic->name() == name) return topic;
    }
}

void TopicTable::place(Table &t, Topic *topic) noexcept {
    const size_t mask = t.slots.size() - 1;
    size_t i = hash(topic->name()) & mask;
    while (t.slots[i].load(std::memory_order_relaxed)) i = (i + 1) & mask;
    t.slots[i].store(topic, std::memory_order_release);
}

void TopicTable::insert(Topic *topic) {
    Table *t = current_.load(std::memory_order_relaxed);
    if ((count_ + 1) * 2 > t->slots.size()) {
        tables_.reserve(tables_.size() + 1);
        auto bigger = std::make_unique<Table>(t->slots.size() * 2);
        for (auto &slot : t->slots) {
            if (Topic *old = slot.load(std::memory_order_relaxed)) place(*bigger, old);
        }
        place(*bigger, topic);
        current_.store(bigger.get(), std::memory_order_release);
        tables_.push_back(std::move(bigger));
    } else {
        place(*t, topic);
    }
    count_++;
}

}  // namespace mq
