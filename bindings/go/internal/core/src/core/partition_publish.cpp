// Publishing to a partition: rule 2 (append), rule 3 (back-pressure), rule 8 (nothing kept
// without groups) and bounded retention (drop the oldest instead of waiting).
// Model-checked: tests/model/wake.pml (Publisher = publish, BatchPublisher = publish_many; names
// mapped in tests/model/README.md).
#include <algorithm>

#include "core/partition.h"
#include "core/record.h"

namespace mq {

bool Partition::has_room(size_t bytes) const noexcept {
    if (cursors_.empty() || settings_.bounded) return true;  // nothing kept, or oldest dropped
    if (log_.size() >= settings_.capacity) return false;
    return settings_.max_bytes == 0 ||
           log_.bytes() + static_cast<int64_t>(bytes) <= settings_.max_bytes;
}

// A publisher waiting for room also wakes when the oldest message ages out.
Pending Partition::room_for(size_t bytes, int64_t now) const noexcept {
    if (has_room(bytes)) return Pending::finished(MQ_OK);
    Pending p;
    if (settings_.max_age_ns && !log_.empty())
        p.change_in_ns = log_.timestamp(log_.start()) + settings_.max_age_ns - now;
    return p;
}

int64_t Partition::append(const mq_record &r, size_t bytes, const mq_dead_letter *origin,
                          int64_t now) {
    if (cursors_.empty()) return log_.pass(1);  // Rule 8: trimmed as it is appended
    if (settings_.bounded) {
        const int64_t s = log_.start_to_fit(bytes, settings_.capacity, settings_.max_bytes);
        if (s > log_.start()) drop_head(s);
    }
    return log_.append(r, bytes, origin, now);
}

mq_status Partition::publish(const mq_record &r, Wait wait, mq_cancel *cancel, int64_t *offset,
                             const mq_dead_letter *origin) {
    CancelScope scope(cancel, waiting_.waitable());
    int64_t now = clock_.now();
    const size_t bytes = record_bytes(r);
    bool wake;
    {
        Lock lk = enter(now);
        bool waited = false;
        const mq_status st = waiting_.wait(lk, Waiting::kPublisher, wait, scope, waited, [&] {
            if (waited) {  // the lock was released: the clock moved, messages may have aged
                now = clock_.now();
                enforce_max_age(now);
            }
            return room_for(bytes, now);
        });
        if (st != MQ_OK) return st;
        *offset = append(r, bytes, origin, now);
        wake = waiting_.announce();
    }
    waiting_.send({wake, 0});
    return MQ_OK;
}

// How many of the next `want` records fit without waiting when only the message count limits
// them (the common case, taken a run at a time); 0 sends each record through the room check.
size_t Partition::room_for_run(size_t want) const noexcept {
    if (settings_.bounded || settings_.max_bytes) return 0;
    if (cursors_.empty()) return want;
    const int64_t room = settings_.capacity - log_.size();
    return room <= 0 ? 0 : std::min(want, static_cast<size_t>(room));
}

mq_status Partition::publish_many(const mq_record *records, const uint32_t *idx, size_t n,
                                  Wait wait, mq_cancel *cancel, mq_publish_result *results,
                                  size_t *published) {
    CancelScope scope(cancel, waiting_.waitable());
    int64_t now = clock_.now();  // one timestamp for the records appended together
    Lock lk = enter(now);
    bool waited = false;
    size_t unannounced = 0;  // appended since consumers were last woken
    mq_status st = MQ_OK;
    for (size_t i = 0; i < n;) {
        if (const size_t run = room_for_run(n - i); run > 0) {
            if (cursors_.empty()) {  // Rule 8: trimmed as appended
                const int64_t first = log_.pass(run);
                for (size_t k = 0; k < run && results; k++)
                    results[idx ? idx[i + k] : i + k].offset = first + static_cast<int64_t>(k);
                *published += run;
            } else if (idx) {  // records and results indexed by idx's values
                log_.append_run<true>(records, idx + i, run, now, results, published);
            } else {
                log_.append_run<false>(records + i, nullptr, run, now,
                                       results ? results + i : nullptr, published);
            }
            i += run;
            unannounced += run;
            continue;
        }
        const mq_record &r = records[idx ? idx[i] : i];
        const size_t bytes = record_bytes(r);
        if (!has_room(bytes)) {
            if (unannounced) {  // consumers may make the room this batch is about to wait for
                wake_consumers();
                unannounced = 0;
            }
            bool blocked = false;  // in this wait: the clock is read anew after blocking
            st = waiting_.wait(lk, Waiting::kPublisher, wait, scope, waited, [&] {
                if (blocked) {
                    now = clock_.now();
                    enforce_max_age(now);
                }
                blocked = true;
                return room_for(bytes, now);
            });
            if (st != MQ_OK) break;
        }
        const int64_t offset = append(r, bytes, nullptr, now);
        unannounced++;
        if (results) results[idx ? idx[i] : i].offset = offset;
        ++*published;
        ++i;
    }
    const bool wake = unannounced && waiting_.announce();
    lk.unlock();
    waiting_.send({wake, 0});
    return st;
}

}  // namespace mq
