// A broker with one topic for one benchmark run, and failing loudly on any unexpected status.
#pragma once

#include "common.h"
#include "mq.h"

namespace suite {

constexpr const char *kTopic = "bench";

inline void must(const char *bench, mq_status s, const char *what) {
    if (s != MQ_OK)
        fail(bench, std::string(what) + ": " + mq_status_name(s) + ": " + mq_last_error());
}

struct Broker {
    mq_broker *b = nullptr;
    Broker(const char *bench, int32_t partitions, int64_t capacity, int64_t spin_ns = 0) {
        mq_broker_options opts;
        mq_broker_options_init(&opts, sizeof opts);
        opts.spin_ns = spin_ns;
        must(bench, mq_broker_new(&opts, &b), "mq_broker_new");
        mq_topic_config cfg;
        mq_topic_config_init(&cfg, sizeof cfg);
        cfg.partitions = partitions;
        cfg.capacity = capacity;
        must(bench, mq_topic_create(b, kTopic, &cfg), "mq_topic_create");
    }
    ~Broker() { mq_broker_free(b); }
    Broker(const Broker &) = delete;
    Broker &operator=(const Broker &) = delete;
};

}  // namespace suite
