// Fault-injection stress (docs/RELIABILITY.md): publishers with random waits, two groups whose
// consumers fail in every way the contract allows, and checks of what the contract promises:
// - at-least-once: every published message reaches every group;
// - per-key order: a group's acked (group "members") or handled (group "push") sequence of a key
//   never skips ahead, and "members" acks every message exactly once, in order;
// - nothing is delivered that was not published (same key and sequence at that offset).
// Group "members" uses mq_member_* with a short session timeout; its consumers fail handlers
// (nack, sometimes delayed) and "crash" (abandon the member without acking: the session times
// out and another member takes the partitions over). Group "push" uses push subscriptions whose
// handlers fail at random, a thread that closes and reopens them while messages flow, and a
// visitor: a member of the same group that joins, takes messages without acking and leaves, so
// partitions move away from a push loop and back (often before the loop notices).
//
//   mq_stress [--messages N] [--seed S] [--no-crashes] [--no-churn]   default 1,000,000 messages
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "mq.h"

namespace {

constexpr int32_t kPartitions = 4;
constexpr int kPublishers = 3;
constexpr int kKeys = 48;
constexpr int kMemberThreads = 3;
constexpr int kPushSubs = 2;

std::atomic<long> g_violations{0};

void violation(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void violation(const char *fmt, ...) {
    if (g_violations.fetch_add(1) < 20) {
        va_list ap;
        va_start(ap, fmt);
        std::fprintf(stderr, "VIOLATION: ");
        std::vfprintf(stderr, fmt, ap);
        std::fputc('\n', stderr);
        va_end(ap);
    }
}

// Payload "key:seq"; the key is "k<key>".
bool parse(const mq_message &m, int *key, long *seq) {
    char buf[32];
    if (m.payload_len >= sizeof buf) return false;
    std::memcpy(buf, m.payload, m.payload_len);
    buf[m.payload_len] = 0;
    return std::sscanf(buf, "%d:%ld", key, seq) == 2 && *key >= 0 && *key < kKeys;
}

struct Published {
    std::mutex mu;
    std::vector<std::vector<int64_t>> at{kPartitions};  // (key << 32 | seq) by offset
    void record(int32_t p, int64_t off, int key, long seq) {
        std::lock_guard lk(mu);
        auto &v = at[static_cast<size_t>(p)];
        if (v.size() <= static_cast<size_t>(off)) v.resize(static_cast<size_t>(off) + 1, -1);
        v[static_cast<size_t>(off)] = int64_t{key} << 32 | seq;
    }
};

// One group's record of what reached it.
struct GroupLog {
    explicit GroupLog(const char *n) : name(n) {}
    const char *name;
    std::mutex mu;
    std::vector<std::vector<uint16_t>> done{kPartitions};  // acks (members) / successes (push)
    std::vector<long> max_seq = std::vector<long>(kKeys, -1);
    std::vector<std::vector<int64_t>> delivered{kPartitions};  // what was delivered, by offset
    std::atomic<long> deliveries{0}, redeliveries{0}, failures{0};

    // Under mu: a message handed to the group must be the published one.
    void saw(const mq_message &m, int key, long seq) {
        auto &v = delivered[static_cast<size_t>(m.partition)];
        if (v.size() <= static_cast<size_t>(m.offset))
            v.resize(static_cast<size_t>(m.offset) + 1, -1);
        v[static_cast<size_t>(m.offset)] = int64_t{key} << 32 | seq;
        deliveries++;
        if (m.delivery_count > 1) redeliveries++;
    }
    // Under mu: the message is done for the group (acked / handled successfully).
    void completed(const mq_message &m, int key, long seq) {
        if (seq > max_seq[static_cast<size_t>(key)] + 1) {
            violation("%s: key %d jumped from seq %ld to %ld (per-key order)", name, key,
                      max_seq[static_cast<size_t>(key)], seq);
        }
        max_seq[static_cast<size_t>(key)] = std::max(max_seq[static_cast<size_t>(key)], seq);
        auto &v = done[static_cast<size_t>(m.partition)];
        if (v.size() <= static_cast<size_t>(m.offset))
            v.resize(static_cast<size_t>(m.offset) + 1, 0);
        v[static_cast<size_t>(m.offset)]++;
    }
};

struct Stress {
    mq_broker *b = nullptr;
    long messages;
    uint64_t seed;
    bool crashes_on = true, churn_on = true;  // --no-crashes / --no-churn isolate a failure
    Published pub;
    GroupLog members{"members"}, push{"push"};
    std::atomic<bool> publishing_done{false}, stop{false};
    std::atomic<long> published{0}, full_retries{0}, crashes{0}, nacks{0}, reopens{0}, fenced{0},
        visits{0};

    void publisher(int id) {
        std::mt19937_64 rng(seed * 31 + static_cast<uint64_t>(id));
        std::vector<long> next_seq(kKeys, 0);
        const long mine = messages / kPublishers + (id < messages % kPublishers ? 1 : 0);
        static const int64_t kWaits[] = {MQ_NO_WAIT, 1, 5, MQ_WAIT_FOREVER};
        for (long i = 0; i < mine; i++) {
            // Keys are owned by one publisher each, so a key's sequence is its publish order.
            const int key = id + kPublishers * static_cast<int>(rng() % (kKeys / kPublishers));
            const long seq = next_seq[static_cast<size_t>(key)]++;
            char k[8], payload[32];
            const int kl = std::snprintf(k, sizeof k, "k%d", key);
            const int pl = std::snprintf(payload, sizeof payload, "%d:%ld", key, seq);
            for (;;) {
                int32_t p;
                int64_t off;
                const mq_status st = mq_topic_publish(b, "s", k, static_cast<size_t>(kl), payload,
                                                      static_cast<size_t>(pl), NULL, 0,
                                                      kWaits[rng() % 4], nullptr, &p, &off);
                if (st == MQ_OK) {
                    pub.record(p, off, key, seq);
                    published++;
                    break;
                }
                if (st != MQ_FULL) {
                    violation("publish: %s %s", mq_status_name(st), mq_last_error());
                    return;
                }
                full_retries++;
            }
        }
    }

    mq_member *join() {
        mq_member_options o;
        mq_member_options_init(&o, sizeof o);
        o.session_timeout_ms = 150;
        mq_member *m = nullptr;
        const mq_status st = mq_member_join(b, "s", "members", &o, &m);
        if (st != MQ_OK) violation("member join: %s %s", mq_status_name(st), mq_last_error());
        return m;
    }

    void member_consumer(int id, std::vector<mq_member *> &crashed, std::mutex &crashed_mu) {
        std::mt19937_64 rng(seed * 77 + static_cast<uint64_t>(id));
        mq_member *m = join();
        mq_message msgs[16];
        while (m && !stop.load()) {
            size_t n = 0;
            const mq_status st = mq_member_poll(m, msgs, sizeof(mq_message), 16, 20, nullptr, &n);
            if (st == MQ_TIMEOUT) continue;
            if (st == MQ_REBALANCED) {
                size_t count;
                if (mq_member_get_assignment(m, nullptr, nullptr, 0, &count) == MQ_ERR_FENCED)
                    st_fenced(m);
                continue;
            }
            if (st == MQ_ERR_FENCED) {
                st_fenced(m);
                continue;
            }
            if (st != MQ_OK) {
                violation("member poll: %s %s", mq_status_name(st), mq_last_error());
                break;
            }
            // Check every message against what was published, then maybe fail or crash.
            std::vector<std::pair<int, long>> parsed(n);
            {
                std::lock_guard lk(members.mu);
                for (size_t i = 0; i < n; i++) {
                    if (!parse(msgs[i], &parsed[i].first, &parsed[i].second))
                        violation("members: unparsable payload");
                    members.saw(msgs[i], parsed[i].first, parsed[i].second);
                }
            }
            const uint64_t dice = rng() % 1000;
            if (crashes_on && dice < 3) {  // crash: no ack, no close; the session runs out
                crashes++;
                {
                    std::lock_guard lk(crashed_mu);
                    crashed.push_back(m);
                }
                m = join();
                continue;
            }
            size_t upto = n;  // messages whose work succeeded
            if (dice < 60) {
                upto = static_cast<size_t>(rng() % n);
                members.failures++;
            }
            std::lock_guard lk(
                members.mu);  // ack and record as one step: records stay in ack order
            if (upto > 0) {
                const mq_status ack = retried(m, [&] {
                    return mq_member_ack(m, msgs[upto - 1].partition, msgs[upto - 1].offset);
                });
                if (ack == MQ_OK) {
                    for (size_t i = 0; i < upto; i++)
                        members.completed(msgs[i], parsed[i].first, parsed[i].second);
                } else if (ack != MQ_REBALANCED && ack != MQ_ERR_FENCED) {
                    violation("member ack: %s %s", mq_status_name(ack), mq_last_error());
                }
            }
            if (upto < n) {
                nacks++;
                const int64_t delay = rng() % 4 == 0 ? 2 : 0;
                const mq_status nk =
                    retried(m, [&] { return mq_member_nack(m, msgs[0].partition, delay); });
                if (nk != MQ_OK && nk != MQ_REBALANCED && nk != MQ_ERR_FENCED) {
                    violation("member nack: %s %s", mq_status_name(nk), mq_last_error());
                }
            }
        }
        if (m) mq_member_close(m);
    }

    // MQ_REBALANCED did nothing: fetch the new assignment, which hands whatever this member
    // still had in flight out again (on partitions it kept) or leaves it to the new owner.
    // Either way the batch is abandoned, not retried (mq.h, mq_member_get_assignment).
    template <class F>
    static mq_status retried(mq_member *m, F call) {
        const mq_status st = call();
        if (st == MQ_REBALANCED) {
            size_t count;
            if (mq_member_get_assignment(m, nullptr, nullptr, 0, &count) != MQ_OK)
                return MQ_ERR_FENCED;
        }
        return st;
    }

    void st_fenced(mq_member *&m) {
        fenced++;
        mq_member_close(m);
        m = join();
    }

    struct PushUser {
        Stress *s;
        std::mt19937_64 rng;
    };

    static int push_handler(void *user, const mq_message *msg) {
        auto *u = static_cast<PushUser *>(user);
        GroupLog &g = u->s->push;
        int key;
        long seq;
        std::lock_guard lk(g.mu);
        if (!parse(*msg, &key, &seq)) {
            violation("push: unparsable payload");
            return 0;
        }
        g.saw(*msg, key, seq);
        if (u->rng() % 100 < 3) {
            g.failures++;
            if (u->rng() % 4 == 0) mq_handler_set_nack_delay(2);
            return 1;
        }
        g.completed(*msg, key, seq);
        return 0;
    }

    static void push_free(void *user) { delete static_cast<PushUser *>(user); }

    mq_subscription *open_push(uint64_t salt) {
        mq_subscription_options o;
        mq_subscription_options_init(&o, sizeof o);
        o.prefetch = 8;
        mq_subscription *sub = nullptr;
        const mq_status st =
            mq_subscription_open(b, "s", "push", &o, push_handler,
                                 new PushUser{this, std::mt19937_64(seed + salt)}, push_free, &sub);
        if (st != MQ_OK) violation("subscribe: %s %s", mq_status_name(st), mq_last_error());
        return sub;
    }

    bool group_caught_up(const char *group) {
        for (int32_t p = 0; p < kPartitions; p++) {
            mq_group_info gi{};
            mq_partition_info pi{};
            if (mq_group_get_info(b, "s", group, p, &gi, sizeof gi) != MQ_OK) return false;
            if (mq_partition_get_info(b, "s", p, &pi, sizeof pi) != MQ_OK) return false;
            if (gi.committed != pi.end) return false;
        }
        return true;
    }

    int run() {
        mq_broker_new(nullptr, &b);
        mq_topic_config c;
        mq_topic_config_init(&c, sizeof c);
        c.partitions = kPartitions;
        c.capacity = 64;
        c.ack_timeout_ms = 200;
        if (mq_topic_create(b, "s", &c) != MQ_OK) return 2;
        // Both groups exist before the first publish, so each must receive everything.
        mq_group_subscribe(b, "s", "members", nullptr);
        mq_group_subscribe(b, "s", "push", nullptr);

        std::vector<mq_subscription *> subs;
        for (int i = 0; i < kPushSubs; i++) subs.push_back(open_push(static_cast<uint64_t>(i)));
        std::vector<mq_member *> crashed;
        std::mutex crashed_mu;
        std::vector<std::thread> threads;
        for (int i = 0; i < kMemberThreads; i++) {
            threads.emplace_back([&, i] { member_consumer(i, crashed, crashed_mu); });
        }
        std::vector<std::thread> publishers;
        for (int i = 0; i < kPublishers; i++) publishers.emplace_back([this, i] { publisher(i); });
        // Close and reopen push subscriptions while messages flow. The pause only paces the
        // churn; nothing waits on it for correctness.
        std::thread churn([&] {
            std::mt19937_64 rng(seed * 13);
            while (churn_on && !publishing_done.load()) {
                std::this_thread::sleep_for(std::chrono::milliseconds(1 + rng() % 10));
                const size_t i = rng() % subs.size();
                mq_subscription_close(subs[i]);
                subs[i] = open_push(1000 + static_cast<uint64_t>(reopens++));
            }
        });
        // The visitor's messages are never acked: they come back to the push loops when it
        // leaves. What it takes does not count as received.
        std::thread visitor([&] {
            std::vector<mq_message> got(8);
            while (churn_on && !publishing_done.load()) {
                mq_member_options o;
                mq_member_options_init(&o, sizeof o);
                o.member_id = "visitor";
                mq_member *m = nullptr;
                if (mq_member_join(b, "s", "push", &o, &m) != MQ_OK) {
                    violation("visitor join: %s", mq_last_error());
                    return;
                }
                size_t n = 0;
                mq_member_poll(m, got.data(), sizeof(mq_message), got.size(), 1, nullptr, &n);
                mq_member_close(m);
                visits++;
            }
        });
        for (auto &t : publishers) t.join();
        publishing_done = true;
        churn.join();
        visitor.join();
        // Wait, by polling the groups' committed offsets, until both have taken everything.
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
        while (!(group_caught_up("members") && group_caught_up("push")) &&
               std::chrono::steady_clock::now() < deadline) {
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
        stop = true;
        for (auto &t : threads) t.join();
        for (auto *s : subs) mq_subscription_close(s);
        for (auto *m : crashed) mq_member_close(m);
        const int rc = verify();
        mq_broker_free(b);
        return rc;
    }

    int verify() {
        long lost = 0, unpublished = 0, duplicate_acks = 0;
        for (GroupLog *g : {&members, &push}) {
            for (int32_t p = 0; p < kPartitions; p++) {
                const auto &published_at = pub.at[static_cast<size_t>(p)];
                const auto &done = g->done[static_cast<size_t>(p)];
                const auto &delivered = g->delivered[static_cast<size_t>(p)];
                for (size_t off = 0; off < published_at.size(); off++) {
                    if (off >= done.size() || done[off] == 0) lost++;
                    else if (g == &members && done[off] > 1) duplicate_acks++;
                }
                for (size_t off = 0; off < delivered.size(); off++) {
                    if (delivered[off] >= 0 &&
                        (off >= published_at.size() || published_at[off] != delivered[off])) {
                        unpublished++;
                    }
                }
            }
        }
        if (lost) violation("%ld message deliveries lost (a group never completed them)", lost);
        if (unpublished)
            violation("%ld delivered messages do not match what was published", unpublished);
        if (duplicate_acks) violation("%ld messages acked twice by group members", duplicate_acks);
        std::printf(
            "stress: %ld messages published (%ld full retries); checked for 2 groups\n"
            "  members: %ld deliveries, %ld redeliveries, %ld handler failures, %ld nacks, %ld "
            "crashes, "
            "%ld fenced\n"
            "  push:    %ld deliveries, %ld redeliveries, %ld handler failures, %ld subscription "
            "reopens, %ld visits\n"
            "  lost %ld, unpublished %ld, violations %ld\n",
            published.load(), full_retries.load(), members.deliveries.load(),
            members.redeliveries.load(), members.failures.load(), nacks.load(), crashes.load(),
            fenced.load(), push.deliveries.load(), push.redeliveries.load(), push.failures.load(),
            reopens.load(), visits.load(), lost, unpublished, g_violations.load());
        return g_violations.load() == 0 && published.load() == messages ? 0 : 1;
    }
};

}  // namespace

int main(int argc, char **argv) {
    Stress s;
    s.messages = 1'000'000;
    s.seed = 1;
    for (int i = 1; i < argc; i++) {
        if (!std::strcmp(argv[i], "--messages") && i + 1 < argc) {
            s.messages = std::atol(argv[++i]);
        } else if (!std::strcmp(argv[i], "--no-crashes")) {
            s.crashes_on = false;
        } else if (!std::strcmp(argv[i], "--no-churn")) {
            s.churn_on = false;
        } else if (!std::strcmp(argv[i], "--seed") && i + 1 < argc) {
            s.seed = std::strtoull(argv[++i], nullptr, 10);
        } else {
            std::fprintf(stderr,
                         "usage: %s [--messages N] [--seed S] [--no-crashes] [--no-churn]\n",
                         argv[0]);
            return 2;
        }
    }
    const int rc = s.run();
    std::printf("stress: %s\n", rc == 0 ? "OK" : "FAILED");
    return rc;
}
