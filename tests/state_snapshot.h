// A text snapshot of everything a broker lets a user observe (topics, their configs and groups,
// every partition's describe line and counters, every group's cursor), so a test can prove a
// call changed nothing by comparing the snapshot taken before and after it. Uses only mq.h, and
// only functions that work after mq_broker_close. The ages in the info structs are left out:
// they move with the clock, not with the broker's state.
#ifndef MQ_TESTS_STATE_SNAPSHOT_H
#define MQ_TESTS_STATE_SNAPSHOT_H

#include <mq.h>

#include <gtest/gtest.h>

#include <cstring>
#include <sstream>
#include <string>
#include <vector>

namespace mq_snapshot {

// Reads an snprintf-style output by asking for its size first, so truncation can never hide a
// difference. `fill(buf, cap, needed)` is one of mq_topic_list, mq_group_list, mq_partition_describe.
template <class Fill>
std::string read_text(const std::string &what, Fill fill) {
    size_t needed = 0;
    int st = fill(nullptr, 0, &needed);
    if (st != MQ_OK) {
        ADD_FAILURE() << "snapshot: " << what << " failed: " << mq_status_name(st) << " "
                      << mq_last_error();
        return "<" + what + " failed>";
    }
    std::string buf(needed + 1, '\0');
    st = fill(buf.data(), buf.size(), &needed);
    if (st != MQ_OK) {
        ADD_FAILURE() << "snapshot: " << what << " failed: " << mq_status_name(st) << " "
                      << mq_last_error();
        return "<" + what + " failed>";
    }
    buf.resize(std::strlen(buf.c_str()));
    return buf;
}

inline std::vector<std::string> split_lines(const std::string &text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
}

inline std::string topic_list(mq_broker *b) {
    return read_text("mq_topic_list", [&](char *buf, size_t cap, size_t *needed) {
        return mq_topic_list(b, buf, cap, needed);
    });
}

inline std::string group_list(mq_broker *b, const std::string &topic) {
    return read_text("mq_group_list " + topic, [&](char *buf, size_t cap, size_t *needed) {
        return mq_group_list(b, topic.c_str(), buf, cap, needed);
    });
}

inline std::string describe(mq_broker *b, const std::string &topic, int32_t p) {
    return read_text("mq_partition_describe " + topic + "/" + std::to_string(p),
                     [&](char *buf, size_t cap, size_t *needed) {
                         return mq_partition_describe(b, topic.c_str(), p, buf, cap, needed);
                     });
}

// One line per fact; a failing introspection call becomes a line of its own (and a test failure).
inline std::string snapshot(mq_broker *b) {
    std::ostringstream out;
    const std::string topics = topic_list(b);
    out << "topics: [" << topics << "]\n";
    for (const std::string &topic : split_lines(topics)) {
        mq_topic_info ti{};
        int st = mq_topic_get_info(b, topic.c_str(), &ti, sizeof ti);
        if (st != MQ_OK) {
            ADD_FAILURE() << "snapshot: mq_topic_get_info " << topic << ": " << mq_status_name(st)
                          << " " << mq_last_error();
            out << "topic " << topic << ": info failed\n";
            continue;
        }
        out << "topic " << topic << ": partitions=" << ti.partitions << " capacity=" << ti.capacity
            << " max_bytes=" << ti.max_bytes << " ack_timeout_ms=" << ti.ack_timeout_ms << "\n";
        const std::string groups = group_list(b, topic);
        out << "  groups: [" << groups << "]\n";
        for (int32_t p = 0; p < ti.partitions; ++p) {
            out << "  p" << p << ": " << describe(b, topic, p) << "\n";
            mq_partition_info pi{};
            st = mq_partition_get_info(b, topic.c_str(), p, &pi, sizeof pi);
            if (st != MQ_OK) {
                ADD_FAILURE() << "snapshot: mq_partition_get_info " << topic << "/" << p << ": "
                              << mq_status_name(st) << " " << mq_last_error();
                out << "    info failed\n";
            } else {
                out << "    start=" << pi.start << " end=" << pi.end << " backlog=" << pi.backlog
                    << " capacity=" << pi.capacity << " retained_bytes=" << pi.retained_bytes
                    << " max_bytes=" << pi.max_bytes << " producer_waits=" << pi.producer_waits
                    << " max_backlog=" << pi.max_backlog << " dropped=" << pi.dropped
                    << " oldest_timestamp_ns=" << pi.oldest_timestamp_ns << "\n";
            }
            for (const std::string &group : split_lines(groups)) {
                mq_group_info gi{};
                st = mq_group_get_info(b, topic.c_str(), group.c_str(), p, &gi, sizeof gi);
                if (st != MQ_OK) {
                    ADD_FAILURE() << "snapshot: mq_group_get_info " << topic << "/" << group << "/"
                                  << p << ": " << mq_status_name(st) << " " << mq_last_error();
                    out << "    " << group << ": info failed\n";
                    continue;
                }
                out << "    " << group << ": committed=" << gi.committed << " next=" << gi.next
                    << " lag=" << gi.lag << " in_flight=" << gi.in_flight << " lost=" << gi.lost
                    << " dead_lettered=" << gi.dead_lettered
                    << " paused_until_ns=" << gi.paused_until_ns << "\n";
            }
        }
    }
    return out.str();
}

}  // namespace mq_snapshot

#endif  // MQ_TESTS_STATE_SNAPSHOT_H
