// How often each in-flight offset of one group on one partition was handed out.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace mq {

// Delivery counts of the offsets a group has been handed and not acked. Offsets are handed out
// in order and a rewind always goes back to `committed`, so the counts never increase with the
// offset: a few (end, count) runs describe them all, whatever the number of messages.
class DeliveryCounts {
public:
    // Makes sure deliver() cannot allocate (call before changing anything else).
    void reserve() { runs_.reserve(runs_.size() + 3); }

    // Records that [from, to) was handed out once more; calls f(offset, count) in order.
    template <class F>
    void deliver(int64_t from, int64_t to, F &&f) {
        int64_t o = from;
        size_t i = 0;
        while (i < runs_.size() && runs_[i].end <= o) i++;
        while (o < to && i < runs_.size()) {
            const int64_t run_start = i == 0 ? base_ : runs_[i - 1].end;
            if (o > run_start) {  // split so that [o, end) is its own run
                runs_.insert(runs_.begin() + static_cast<std::ptrdiff_t>(i),
                             Run{o, runs_[i].count});
                i++;
                continue;
            }
            if (runs_[i].end > to) {
                runs_.insert(runs_.begin() + static_cast<std::ptrdiff_t>(i),
                             Run{to, runs_[i].count});
            }
            const uint32_t count = ++runs_[i].count;
            for (; o < runs_[i].end; o++) f(o, count);
            if (i > 0 && runs_[i - 1].count == count) {  // keep runs few: merge equal neighbours
                runs_[i - 1].end = runs_[i].end;
                runs_.erase(runs_.begin() + static_cast<std::ptrdiff_t>(i));
            } else {
                i++;
            }
        }
        if (o < to) {
            if (!runs_.empty() && runs_.back().count == 1) {
                runs_.back().end = to;
            } else {
                runs_.push_back(Run{to, 1});
            }
            for (; o < to; o++) f(o, 1u);
        }
    }

    // Forgets offsets below `committed`.
    void ack(int64_t committed) noexcept {
        size_t drop = 0;
        while (drop < runs_.size() && runs_[drop].end <= committed) drop++;
        if (drop) runs_.erase(runs_.begin(), runs_.begin() + static_cast<std::ptrdiff_t>(drop));
        base_ = committed;
    }

    // Deliveries so far of offset `committed` (the head): 0 if it was never handed out.
    uint32_t head_count() const noexcept { return runs_.empty() ? 0 : runs_.front().count; }

    // Forgets everything (seek, or a group that starts over at `at`).
    void reset(int64_t at) noexcept {
        runs_.clear();
        base_ = at;
    }

private:
    struct Run {
        int64_t end;     // exclusive
        uint32_t count;  // deliveries of every offset in [previous end, end)
    };
    std::vector<Run> runs_;
    int64_t base_ = 0;  // the group's committed offset: where the first run starts
};

}  // namespace mq
