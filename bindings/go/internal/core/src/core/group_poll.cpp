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

}  // namespace mq
