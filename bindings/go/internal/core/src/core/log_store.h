// Where a log's messages live: the storage seam under Log.
//
// Log keeps the rules (which offsets are retained, their byte total, timestamps that never go
// back); a store keeps the messages at those offsets and hands out views of them. The in-memory
// store (memory_store.h) is the only one today; a file-backed store plugs in here without
// anything above Log changing. Not thread-safe: the partition's lock guards the log and its store.
#pragma once

#include <cstddef>
#include <cstdint>

#include "mq.h"

namespace mq {

class LogStore {
public:
    virtual ~LogStore() = default;

    // Makes room for n more messages after the retained offsets [start, end). May throw
    // std::bad_alloc (or the store's own error): nothing changes then.
    virtual void reserve(int64_t start, int64_t end, size_t n) = 0;
    // Stores the message at `offset` (the log's end): `bytes` is its record_bytes, `origin` set
    // for a dead letter, `retained` the log's retained bytes before it. May throw: nothing is
    // stored then.
    virtual void put(int64_t offset, const mq_record &r, size_t bytes, const mq_dead_letter *origin,
                     int64_t timestamp, int64_t retained) = 0;
    // Stores records[idx ? idx[k] : k] at offsets first + k for k < n, all stamped `timestamp`,
    // and sets their results[...].offset (results may be null). *stored counts and *retained
    // adds each one's record_bytes as it is stored, so a throw part-way leaves the earlier ones
    // stored and counted.
    virtual void put_run(int64_t first, const mq_record *records, const uint32_t *idx, size_t n,
                         int64_t timestamp, mq_publish_result *results, size_t *stored,
                         int64_t *retained) = 0;

    // A view of the message at `offset`, which was stored and is not released yet. It stays
    // valid until release() passes it.
    virtual void view(mq_message &m, int64_t offset) const noexcept = 0;
    virtual size_t weight(int64_t offset) const noexcept = 0;  // its record_bytes
    virtual int64_t timestamp(int64_t offset) const noexcept = 0;
    // When the message may be handed out (mq_record.delay_ms): INT64_MIN if it was not delayed.
    virtual int64_t due(int64_t offset) const noexcept = 0;
    // The latest deliver-at time of any message stored so far (INT64_MIN if none was delayed):
    // a poll whose clock has passed it hands out without looking at each message's.
    virtual int64_t latest_due() const noexcept = 0;
    // No view reaches below `floor` any more: their storage may be reused.
    virtual void release(int64_t floor) noexcept = 0;
};

}  // namespace mq
