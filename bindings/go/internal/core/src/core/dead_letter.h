// The copy of a message on its way to a dead-letter topic.
//
// The message is copied out of its partition (whose lock must be released while the dead-letter
// topic is published to, and which may drop the message meanwhile) together with where it came
// from. The origin travels twice: as the mq_dead_letter record of mq.h, and as headers appended
// after the message's own (MQ_HEADER_DEAD_LETTER_*), which every language reads alike.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mq.h"

namespace mq {

class DeadLetter {
public:
    // Copies the view's key, payload and headers and records its origin. The origin's strings
    // must outlive the dead letter's publication (they are the broker's topic and group names).
    // May throw bad_alloc.
    void capture(const mq_message &view, const mq_dead_letter &origin);
    const mq_record &record() const noexcept { return record_; }
    const mq_dead_letter &origin() const noexcept { return origin_; }

private:
    std::string bytes_;               // key, payload, header names and values, origin numbers
    std::vector<mq_header> headers_;  // the message's own, then the origin's
    mq_record record_{};
    mq_dead_letter origin_{};
};

}  // namespace mq
