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

    // Takes back one delivery of each offset in [from, to): a push loop's batch that it gives
    // back before its handler saw it (the rest after a failure, or all it had left when it
    // stopped). A count never drops below that of `to` (at most the count of any offset below
    // it), so the counts still never increase with the offset. May allocate (one split).
    void undeliver(int64_t from, int64_t to) {
        if (from >= to) return;
        size_t i = 0;
        while (i < runs_.size() && runs_[i].end <= from) i++;
        if (i == runs_.size()) return;  // never handed out
        size_t j = i;
        while (j < runs_.size() && runs_[j].end <= to) j++;
        const uint32_t floor = j < runs_.size() ? runs_[j].count : 0;
        const int64_t run_start = i == 0 ? base_ : runs_[i - 1].end;
        if (from > run_start) {  // [run_start, from) keeps its count: a run of its own
            runs_.insert(runs_.begin() + static_cast<std::ptrdiff_t>(i), Run{from, runs_[i].count});
            i++;
            j++;
        }
        if (j < runs_.size() && (j == 0 ? base_ : runs_[j - 1].end) < to) {
            // The run holding `to` starts below it: split so [.., to) can drop alone.
            runs_.insert(runs_.begin() + static_cast<std::ptrdiff_t>(j), Run{to, runs_[j].count});
        }
        for (size_t k = i; k < runs_.size() && runs_[k].end <= to; k++) {
            if (runs_[k].count > floor) runs_[k].count--;
        }
        // Few runs again: equal neighbours merge, and uncounted offsets at the end leave.
        for (size_t k = 1; k < runs_.size();) {
            if (runs_[k - 1].count == runs_[k].count) {
                runs_[k - 1].end = runs_[k].end;
                runs_.erase(runs_.begin() + static_cast<std::ptrdiff_t>(k));
            } else {
                k++;
            }
        }
        while (!runs_.empty() && runs_.back().count == 0) runs_.pop_back();
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
