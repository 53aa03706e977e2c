#include "core/group_poll.h"

#include "core/topic.h"

namespace mq {

mq_status dead_letter_and_poll(Partition &p, const Group *g, Caller who, mq_message *out,
                               size_t max, Wait &wait, mq_cancel *cancel, size_t *count,
                               const DeadLetter *due, CopyOut *copy) {
    while (due) {
        mq_status published;
        try {
            published =
                g->dead_letter->publish_dead_letter(due->record(), due->origin(), wait, cancel);
        } catch (...) {  // out of memory: the head stays where it was
            p.finish_dead_letter(g, *due, MQ_ERR_NO_MEMORY);
            throw;
        }
        const mq_status done = p.finish_dead_letter(g, *due, published);
        if (done == MQ_FULL) {  // the wait ended with the dead-letter topic still full
            return fail(MQ_TIMEOUT,
                        "dead-letter topic %s stayed full; offset %lld of partition %d waits at "
                        "the head of group %s",
                        g->dead_letter->name().c_str(),
                        static_cast<long long>(due->origin().offset), p.index(), g->name.c_str());
        }
        if (done == MQ_CANCELLED) return fail_fixed(done, "poll cancelled by its mq_cancel token");
        if (done != MQ_OK) return done;
        due = nullptr;
        const mq_status st = p.poll(g, who, out, max, wait, cancel, count, &due, nullptr, copy);
        if (!due) return st;
    }
    return MQ_OK;  // not reached: the loop returns
}

mq_status settle_share(Partition &p, const Group *g, int64_t offset, uint32_t delivery_count,
                       int32_t action, int64_t delay_ns) {
    const DeadLetter *due = nullptr;
    const mq_status st = p.share_settle(g, offset, delivery_count, action, delay_ns, &due);
    if (st != MQ_OK || !due) return st;
    Wait none = Wait::from_ms(0);
    mq_status published;
    try {
        published =
            g->dead_letter->publish_dead_letter(due->record(), due->origin(), none, nullptr);
    } catch (const std::bad_alloc &) {
        published = MQ_ERR_NO_MEMORY;
    }
    p.finish_dead_letter(g, *due, published);
    return MQ_OK;
}

}  // namespace mq
