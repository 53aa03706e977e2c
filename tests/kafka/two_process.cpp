// Two processes in one consumer group on the Kafka backend (docs/KAFKA.md): they split the
// topic's partitions; one is killed (SIGKILL, mid-stream) and the other takes its partitions
// over from the committed offsets. Checks that every message was acked by the group, that
// nothing was lost, that each process saw every key's messages in order, and that the killed
// process's partitions moved within the bound docs/KAFKA.md gives (session timeout, 2 s here,
// plus a rebalance: at most 8 s; with the 10 s default this fails).
//
//   mq_kafka_two_process [push]                the test (needs MQ_KAFKA_BOOTSTRAP); with push
//                                              the consumers are push subscriptions
//   mq_kafka_two_process consume|push T G F    one consumer process (started by the test)
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "mq.h"

extern char **environ;

namespace {

constexpr int kPartitions = 4;
constexpr int kKeys = 16;
constexpr int kMessages = 4000;  // in all; the kill comes halfway
constexpr int64_t kSessionMs = 2000;
constexpr int64_t kTakeoverBoundMs = 8000;

int64_t now_ms() {  // CLOCK_MONOTONIC: one clock for every process of the machine
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

std::atomic<bool> stop{false};

[[noreturn]] void die(const char *what) {
    std::fprintf(stderr, "two_process: %s (last error: %s)\n", what, mq_last_error());
    std::exit(1);
}

mq_broker *open_broker() {
    const char *bootstrap = std::getenv("MQ_KAFKA_BOOTSTRAP");
    if (!bootstrap || !*bootstrap) die("MQ_KAFKA_BOOTSTRAP is not set (scripts/kafka-server.sh)");
    mq_broker_options o;
    mq_broker_options_init(&o, sizeof o);
    o.kafka_bootstrap = bootstrap;
    mq_broker *b = nullptr;
    if (mq_broker_new(&o, &b) != MQ_OK) die("mq_broker_new");
    return b;
}

mq_member *join(mq_broker *b, const char *topic, const char *group) {
    mq_member_options o;
    mq_member_options_init(&o, sizeof o);
    o.session_timeout_ms = kSessionMs;  // a killed member's partitions move after about this long
    mq_member *m = nullptr;
    if (mq_member_join(b, topic, group, &o, &m) != MQ_OK) die("mq_member_join");
    return m;
}

// A consumer process: every message handled is written "got P O KEY SEQ", every ack that the
// cluster took "acked P O", each line flushed before the next step (so a kill loses nothing
// that happened).
int consume(const char *topic, const char *group, const char *path) {
    signal(SIGTERM, [](int) { stop.store(true); });
    FILE *out = std::fopen(path, "w");
    if (!out) die("cannot write the output file");
    mq_broker *b = open_broker();
    mq_member *m = join(b, topic, group);
    std::fprintf(out, "ready\n");
    std::fflush(out);
    mq_message msgs[32];
    while (!stop.load()) {
        size_t n = 0;
        const mq_status st = mq_member_poll(m, msgs, sizeof msgs[0], 32, 200, nullptr, &n);
        if (st == MQ_REBALANCED) {
            int32_t parts[kPartitions];
            size_t count = 0;
            if (mq_member_get_assignment(m, nullptr, parts, kPartitions, &count) != MQ_OK)
                die("mq_member_get_assignment");
            continue;
        }
        if (st == MQ_TIMEOUT) continue;
        if (st != MQ_OK) die("mq_member_poll");
        for (size_t i = 0; i < n; i++) {
            std::fprintf(
                out, "got %d %lld %.*s %lld\n", msgs[i].partition,
                static_cast<long long>(msgs[i].offset), static_cast<int>(msgs[i].payload_len),
                static_cast<const char *>(msgs[i].payload), static_cast<long long>(now_ms()));
        }
        std::fflush(out);
        const mq_status ack = mq_member_ack(m, msgs[n - 1].partition, msgs[n - 1].offset);
        if (ack == MQ_OK) {
            std::fprintf(out, "acked %d %lld\n", msgs[n - 1].partition,
                         static_cast<long long>(msgs[n - 1].offset));
            std::fflush(out);
        } else if (ack != MQ_REBALANCED && ack != MQ_ERR_FENCED) {
            die("mq_member_ack");
        }
    }
    mq_member_close(m);
    mq_broker_free(b);
    std::fclose(out);
    return 0;
}

// The same consumer as a push subscription (a member of the group, its session timeout set in
// mq_subscription_options): the handler writes what it got; the loop acks when it returns.
int push(const char *topic, const char *group, const char *path) {
    signal(SIGTERM, [](int) { stop.store(true); });
    FILE *out = std::fopen(path, "w");
    if (!out) die("cannot write the output file");
    mq_broker *b = open_broker();
    mq_subscription_options o;
    mq_subscription_options_init(&o, sizeof o);
    o.prefetch = 32;
    o.session_timeout_ms = kSessionMs;
    mq_subscription *sub = nullptr;
    auto handler = [](void *user, const mq_message *m) {
        FILE *f = static_cast<FILE *>(user);
        std::fprintf(f, "got %d %lld %.*s %lld\n", m->partition, static_cast<long long>(m->offset),
                     static_cast<int>(m->payload_len), static_cast<const char *>(m->payload),
                     static_cast<long long>(now_ms()));
        std::fflush(f);
        return 0;
    };
    if (mq_subscription_open(b, topic, group, &o, handler, out, nullptr, &sub) != MQ_OK)
        die("mq_subscription_open");
    std::fprintf(out, "ready\n");
    std::fflush(out);
    while (!stop.load()) pause();  // until SIGTERM; the handler threads do the work
    mq_subscription_close(sub);
    mq_broker_free(b);
    std::fclose(out);
    return 0;
}

pid_t spawn_consumer(const char *self, const char *mode, const std::string &topic,
                     const std::string &group, const std::string &path) {
    std::vector<std::string> args = {self, mode, topic, group, path};
    std::vector<char *> argv;
    for (auto &a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_t pid;
    if (posix_spawn(&pid, self, nullptr, nullptr, argv.data(), environ) != 0) die("posix_spawn");
    return pid;
}

std::vector<std::string> lines_of(const std::string &path) {
    std::ifstream in(path);
    std::vector<std::string> lines;
    for (std::string l; std::getline(in, l);) lines.push_back(l);
    return lines;
}

// Waits (bounded) until pred holds; false if it never did.
template <class F>
bool eventually(F pred, int seconds) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
    while (std::chrono::steady_clock::now() < deadline) {
        if (pred()) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));  // polling files on disk
    }
    return pred();
}

bool has_line(const std::string &path, const std::string &line) {
    for (const auto &l : lines_of(path))
        if (l == line) return true;
    return false;
}

int test(const char *self, bool push_mode) {
    const char *mode = push_mode ? "push" : "consume";
    const std::string tag = std::to_string(getpid());
    const std::string topic = "two-process-" + tag, group = "workers-" + tag;
    const std::string fa = "two_process_a." + tag + ".log", fb = "two_process_b." + tag + ".log";
    mq_broker *b = open_broker();
    mq_topic_config c;
    mq_topic_config_init(&c, sizeof c);
    c.partitions = kPartitions;
    if (mq_topic_create(b, topic.c_str(), &c) != MQ_OK) die("mq_topic_create");

    pid_t a = spawn_consumer(self, mode, topic, group, fa);
    if (!eventually([&] { return has_line(fa, "ready"); }, 60)) die("consumer a never joined");
    pid_t bpid = spawn_consumer(self, mode, topic, group, fb);
    if (!eventually([&] { return has_line(fb, "ready"); }, 60)) die("consumer b never joined");

    int64_t end[kPartitions] = {};
    int seq[kKeys] = {};
    auto publish = [&](int count) {
        for (int i = 0; i < count; i++) {
            const int k = i % kKeys;
            char key[16], value[32];
            std::snprintf(key, sizeof key, "key-%d", k);
            std::snprintf(value, sizeof value, "%s %d", key, seq[k]++);
            int32_t p;
            int64_t off;
            if (mq_topic_publish(b, topic.c_str(), key, std::strlen(key), value, std::strlen(value),
                                 nullptr, 0, MQ_WAIT_FOREVER, nullptr, &p, &off) != MQ_OK)
                die("mq_topic_publish");
            end[p] = off + 1;
        }
    };
    publish(kMessages / 2);
    // Kill a mid-stream: once it has handled some of its share, and with messages left.
    if (!eventually([&] { return lines_of(fa).size() > 50; }, 60)) die("consumer a got nothing");
    kill(a, SIGKILL);
    const int64_t killed_at = now_ms();
    waitpid(a, nullptr, 0);
    std::set<int> of_a;  // the partitions a held when it died
    for (const auto &l : lines_of(fa)) {
        int p;
        if (std::sscanf(l.c_str(), "got %d", &p) == 1) of_a.insert(p);
    }
    publish(kMessages / 2);

    // Every partition acked to its end by the group (b takes a's partitions over).
    auto acked_to_end = [&] {
        int64_t acked[kPartitions];
        std::fill(acked, acked + kPartitions, -1);
        for (const auto *f : {&fa, &fb}) {
            for (const auto &l : lines_of(*f)) {
                int p;
                long long o;
                if (std::sscanf(l.c_str(), "acked %d %lld", &p, &o) == 2)
                    acked[p] = std::max<int64_t>(acked[p], o);
            }
        }
        for (int p = 0; p < kPartitions; p++)
            if (end[p] > 0 && acked[p] != end[p] - 1) return false;
        return true;
    };
    // A push loop acks after its handler returns, unseen: it is done once b got every message
    // (the late member below then checks the commits).
    auto b_got_the_ends = [&] {
        std::set<std::pair<int, long long>> got;
        for (const auto &l : lines_of(fb)) {
            int p;
            long long o;
            if (std::sscanf(l.c_str(), "got %d %lld", &p, &o) == 2) got.insert({p, o});
        }
        for (int p = 0; p < kPartitions; p++)
            if (end[p] > 0 && !got.count({p, end[p] - 1})) return false;
        return true;
    };
    const bool done = push_mode ? eventually(b_got_the_ends, 90) : eventually(acked_to_end, 90);
    // The takeover: b's first message of a partition a held, handed out after the kill.
    int64_t takeover_ms = -1;
    for (const auto &l : lines_of(fb)) {
        int p, s;
        long long o, t;
        char key[16];
        if (std::sscanf(l.c_str(), "got %d %lld %15s %d %lld", &p, &o, key, &s, &t) == 5 &&
            of_a.count(p) && t >= killed_at) {
            takeover_ms = t - killed_at;
            break;
        }
    }
    kill(bpid, SIGTERM);
    int status = 0;
    waitpid(bpid, &status, 0);
    if (!done) die("the group did not ack every message within 90 s");
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) die("consumer b failed");
    if (takeover_ms < 0 || takeover_ms > kTakeoverBoundMs) {
        std::fprintf(stderr,
                     "two_process: the killed consumer's partitions moved after %lld ms (-1: "
                     "never); the bound is %lld ms with a %lld ms session timeout\n",
                     static_cast<long long>(takeover_ms), static_cast<long long>(kTakeoverBoundMs),
                     static_cast<long long>(kSessionMs));
        return 1;
    }

    // Nothing lost; each process saw each key in order. A redelivery (an offset this process
    // saw before: its partition came back after a rebalance, from the committed offset) may go
    // back in a key's sequence; a first delivery must come after everything before it.
    std::map<std::string, std::set<int>> seen;
    int redelivered = 0;
    for (const auto *f : {&fa, &fb}) {
        std::map<std::string, int> last;
        std::set<std::pair<int, long long>> offsets;
        for (const auto &l : lines_of(*f)) {
            int p, s;
            long long o;
            char key[16];
            if (std::sscanf(l.c_str(), "got %d %lld %15s %d", &p, &o, key, &s) != 4) continue;
            const bool again = !offsets.insert({p, o}).second;
            if (again) redelivered++;
            auto it = last.find(key);
            if (!again && it != last.end() && s <= it->second) {
                std::fprintf(stderr, "two_process: %s saw %s %d after %d\n", f->c_str(), key, s,
                             it->second);
                return 1;
            }
            last[key] = s;
            seen[key].insert(s);
        }
    }
    for (int k = 0; k < kKeys; k++) {
        const std::string key = "key-" + std::to_string(k);
        if (static_cast<int>(seen[key].size()) != seq[k]) {
            std::fprintf(stderr, "two_process: %s: %zu of %d messages seen\n", key.c_str(),
                         seen[key].size(), seq[k]);
            return 1;
        }
    }
    // The cluster has the commits: a new member of the group finds nothing left.
    mq_member *late = join(b, topic.c_str(), group.c_str());
    mq_message m[1];
    size_t n = 0;
    const mq_status st = mq_member_poll(late, m, sizeof m[0], 1, 1000, nullptr, &n);
    if (st != MQ_TIMEOUT) {
        std::fprintf(stderr, "two_process: a new member got %s (offset %lld): not all committed\n",
                     mq_status_name(st), n ? static_cast<long long>(m[0].offset) : -1LL);
        return 1;
    }
    mq_member_close(late);
    mq_topic_delete(b, topic.c_str());
    mq_broker_free(b);
    std::remove(fa.c_str());
    std::remove(fb.c_str());
    std::printf(
        "two_process (%s): %d messages over %d partitions, consumer a killed mid-stream; all "
        "acked, none lost, per-key order held (%d redelivered after the kill); its partitions "
        "moved after %lld ms (session timeout %lld ms)\n",
        mode, kMessages, kPartitions, redelivered, static_cast<long long>(takeover_ms),
        static_cast<long long>(kSessionMs));
    return 0;
}

}  // namespace

int main(int argc, char **argv) {
    if (argc == 5 && std::strcmp(argv[1], "consume") == 0)
        return consume(argv[2], argv[3], argv[4]);
    if (argc == 5 && std::strcmp(argv[1], "push") == 0) return push(argv[2], argv[3], argv[4]);
    const bool push_mode = argc == 2 && std::strcmp(argv[1], "push") == 0;
    if (argc != 1 && !push_mode) {
        std::fprintf(stderr, "usage: %s [push] | %s consume|push TOPIC GROUP FILE\n", argv[0],
                     argv[0]);
        return 2;
    }
    char self[4096];
    const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) die("cannot find this program's path");
    self[n] = '\0';
    return test(self, push_mode);
}
