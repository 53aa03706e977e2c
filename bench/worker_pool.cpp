// A worker pool on one partition (docs/BENCHMARKS.md, "Share groups as a worker pool"; SPEC
// rule 16): M messages wait in one queue, N consumers each take one, sleep `work` microseconds
// (the simulated work), and settle it. Three queues, the same workers, in one run:
//   mq       a share group: mq_group_poll of one message, then mq_share_settle(ACCEPT);
//   mq-ack   the same with mq_group_ack_poll (the accept and the next acquisition in one call);
//   mutex    a std::deque under a mutex and a condition variable, with per-item completion (a
//            done flag per item set under the same mutex), the textbook work queue;
//   redis    Redis Streams: XREADGROUP COUNT 1 then XACK, one connection per consumer, against
//            Debian's redis-server, which this program starts on loopback and stops.
// For each: throughput, and the per-message overhead: (wall time x consumers - time spent in
// the work) / messages, i.e. what the queue costs a worker per message, waiting included.
//   mq_bench_worker_pool [--messages M] [--work-us W] [--consumers 1,2,4,8] [--no-redis]
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "mq.h"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
}

void check(mq_status st, const char *what) {
    if (st != MQ_OK) {
        std::fprintf(stderr, "%s: %s: %s\n", what, mq_status_name(st), mq_last_error());
        std::exit(1);
    }
}

// The simulated work: a sleep, timed, so the overhead excludes whatever the sleep really took.
double work(int us) {
    const auto t = Clock::now();
    std::this_thread::sleep_for(std::chrono::microseconds(us));
    return seconds_since(t);
}

struct Result {
    double seconds = 0, work_seconds = 0;
};

// Runs `consumers` threads of body(index, &work_seconds) and times them.
Result run_workers(int consumers, const std::function<void(int, double *)> &body) {
    std::vector<double> worked(consumers, 0.0);
    std::vector<std::thread> ts;
    const auto t = Clock::now();
    for (int i = 0; i < consumers; i++) ts.emplace_back(body, i, &worked[i]);
    for (auto &th : ts) th.join();
    Result r;
    r.seconds = seconds_since(t);
    for (double w : worked) r.work_seconds += w;
    return r;
}

// ---- mq --------------------------------------------------------------------------------------

Result run_mq(long messages, int work_us, int consumers, bool ack_poll) {
    mq_broker *b = nullptr;
    check(mq_broker_new(nullptr, &b), "broker");
    mq_topic_config tc;
    mq_topic_config_init(&tc, sizeof tc);
    tc.partitions = 1;
    tc.capacity = messages;
    check(mq_topic_create(b, "jobs", &tc), "topic");
    mq_group_options go;
    mq_group_options_init(&go, sizeof go);
    go.share = MQ_SHARE_ALL;
    check(mq_group_subscribe(b, "jobs", "workers", &go), "subscribe");
    char payload[16] = "job";
    std::vector<mq_record> recs(256);
    for (auto &r : recs) {
        std::memset(&r, 0, sizeof r);
        r.payload = payload;
        r.payload_len = sizeof payload;
    }
    for (long done = 0; done < messages;) {
        const size_t n = static_cast<size_t>(std::min<long>(256, messages - done));
        check(mq_topic_publish_batch(b, "jobs", recs.data(), sizeof recs[0], n, MQ_NO_WAIT, nullptr,
                                     nullptr, sizeof(mq_publish_result), nullptr),
              "publish");
        done += static_cast<long>(n);
    }
    std::atomic<long> settled{0};
    // Triggered by whoever settles the last message: the others' polls end at once, as the
    // mutex queue's notify_all ends its waits.
    mq_cancel *finished = nullptr;
    check(mq_cancel_new(&finished), "cancel");
    auto count_one = [&] {
        if (settled.fetch_add(1, std::memory_order_relaxed) + 1 == messages)
            mq_cancel_trigger(finished);
    };
    Result r = run_workers(consumers, [&](int, double *worked) {
        mq_message m;
        bool holding = false;
        while (settled.load(std::memory_order_relaxed) < messages) {
            size_t n = 0;
            mq_status st;
            if (ack_poll && holding) {
                // Without a wait, so the accept is counted at once; the blocking poll that
                // follows a timeout ends on the cancel token when the last is settled.
                st = mq_group_ack_poll(b, "jobs", "workers", 0, m.offset, &m, sizeof m, 1,
                                       MQ_NO_WAIT, nullptr, &n);
                count_one();
            } else {
                st = mq_group_poll(b, "jobs", "workers", 0, &m, sizeof m, 1, 1000, finished, &n);
            }
            holding = false;
            if (st == MQ_TIMEOUT || st == MQ_CANCELLED) continue;
            check(st, "poll");
            *worked += work(work_us);
            if (ack_poll) {
                holding = true;
                continue;
            }
            check(mq_share_settle(b, "jobs", "workers", 0, m.offset, m.delivery_count,
                                  MQ_SETTLE_ACCEPT, 0),
                  "settle");
            count_one();
        }
        if (holding) {
            check(mq_group_ack(b, "jobs", "workers", 0, m.offset), "ack");
            count_one();
        }
    });
    mq_group_info gi;
    check(mq_group_get_info(b, "jobs", "workers", 0, &gi, sizeof gi), "info");
    if (gi.committed != messages) {
        std::fprintf(stderr, "mq: %lld of %ld settled\n", static_cast<long long>(gi.committed),
                     messages);
        std::exit(1);
    }
    mq_cancel_free(finished);
    mq_broker_free(b);
    return r;
}

// ---- the mutex work queue --------------------------------------------------------------------

Result run_mutex(long messages, int work_us, int consumers) {
    std::mutex mu;
    std::condition_variable cv;
    std::deque<long> items;
    std::vector<char> completed(static_cast<size_t>(messages), 0);
    long done = 0;
    for (long i = 0; i < messages; i++) items.push_back(i);
    Result r = run_workers(consumers, [&](int, double *worked) {
        for (;;) {
            long item;
            {
                std::unique_lock lk(mu);
                while (items.empty() && done < messages) cv.wait(lk);
                if (items.empty()) return;
                item = items.front();
                items.pop_front();
            }
            *worked += work(work_us);
            std::lock_guard lk(mu);
            completed[static_cast<size_t>(item)] = 1;
            if (++done == messages) cv.notify_all();
        }
    });
    for (char c : completed) {
        if (!c) {
            std::fprintf(stderr, "mutex queue: an item was not completed\n");
            std::exit(1);
        }
    }
    return r;
}

// ---- Redis Streams ---------------------------------------------------------------------------

// One connection speaking RESP: commands out as arrays of bulk strings, replies read whole.
class Redis {
public:
    explicit Redis(int port) {
        for (int attempt = 0; attempt < 200 && fd_ < 0; attempt++) {
            int fd = socket(AF_INET, SOCK_STREAM, 0);
            sockaddr_in a{};
            a.sin_family = AF_INET;
            a.sin_port = htons(static_cast<uint16_t>(port));
            a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
            if (connect(fd, reinterpret_cast<sockaddr *>(&a), sizeof a) == 0) {
                int one = 1;
                setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                fd_ = fd;
            } else {
                close(fd);
                std::this_thread::sleep_for(std::chrono::milliseconds(25));  // server starting
            }
        }
        if (fd_ < 0) {
            std::fprintf(stderr, "redis: cannot connect to port %d\n", port);
            std::exit(1);
        }
    }
    ~Redis() { close(fd_); }
    void send(const std::vector<std::string> &args) {
        std::string out;
        char head[32];
        std::snprintf(head, sizeof head, "*%zu\r\n", args.size());
        out.append(head);
        for (const auto &a : args) {
            std::snprintf(head, sizeof head, "$%zu\r\n", a.size());
            out.append(head).append(a).append("\r\n");
        }
        for (size_t off = 0; off < out.size();) {
            ssize_t n = write(fd_, out.data() + off, out.size() - off);
            if (n <= 0) fail("write");
            off += static_cast<size_t>(n);
        }
    }
    // Reads one reply; appends its bulk strings (depth first) to `strings`. False: a null reply.
    bool reply(std::vector<std::string> *strings) {
        const std::string line = read_line();
        switch (line[0]) {
            case '+':
            case ':': return true;
            case '-': std::fprintf(stderr, "redis: %s\n", line.c_str()); std::exit(1);
            case '$': {
                const long n = std::atol(line.c_str() + 1);
                if (n < 0) return false;
                std::string s = read_exact(static_cast<size_t>(n) + 2);
                s.resize(static_cast<size_t>(n));
                if (strings) strings->push_back(std::move(s));
                return true;
            }
            case '*': {
                const long n = std::atol(line.c_str() + 1);
                if (n < 0) return false;
                for (long i = 0; i < n; i++) reply(strings);
                return true;
            }
        }
        fail("unexpected reply");
        return false;
    }
    std::vector<std::string> call(const std::vector<std::string> &args) {
        send(args);
        std::vector<std::string> s;
        reply(&s);
        return s;
    }

private:
    [[noreturn]] static void fail(const char *what) {
        std::fprintf(stderr, "redis: %s failed\n", what);
        std::exit(1);
    }
    char next() {
        if (pos_ == len_) {
            ssize_t n = read(fd_, buf_, sizeof buf_);
            if (n <= 0) fail("read");
            pos_ = 0;
            len_ = static_cast<size_t>(n);
        }
        return buf_[pos_++];
    }
    std::string read_line() {
        std::string s;
        for (char c; (c = next()) != '\n';) {
            if (c != '\r') s += c;
        }
        return s;
    }
    std::string read_exact(size_t n) {
        std::string s;
        s.reserve(n);
        while (s.size() < n) s += next();
        return s;
    }
    int fd_ = -1;
    char buf_[65536];
    size_t pos_ = 0, len_ = 0;
};

struct RedisServer {
    pid_t pid = -1;
    int port = 0;
    bool start(const char *path) {
        port = 20000 + static_cast<int>(getpid() % 20000);
        pid = fork();
        if (pid == 0) {
            const std::string p = std::to_string(port);
            execlp(path, path, "--port", p.c_str(), "--bind", "127.0.0.1", "--save", "",
                   "--appendonly", "no", "--daemonize", "no", "--loglevel", "warning",
                   static_cast<char *>(nullptr));
            _exit(127);
        }
        return pid > 0;
    }
    ~RedisServer() {
        if (pid > 0) {
            kill(pid, SIGTERM);
            waitpid(pid, nullptr, 0);
        }
    }
};

Result run_redis(int port, long messages, int work_us, int consumers) {
    Redis admin(port);
    admin.call({"DEL", "jobs"});
    for (long done = 0; done < messages;) {  // pipelined: the fill is not what is measured
        const long n = std::min<long>(512, messages - done);
        for (long i = 0; i < n; i++) admin.send({"XADD", "jobs", "*", "job", "x"});
        for (long i = 0; i < n; i++) admin.reply(nullptr);
        done += n;
    }
    admin.call({"XGROUP", "CREATE", "jobs", "workers", "0"});
    std::atomic<long> settled{0};
    Result r = run_workers(consumers, [&](int index, double *worked) {
        Redis c(port);
        char me[16];  // not "c" + std::to_string: gcc 12's -Wrestrict misfires on it at -O3
        std::snprintf(me, sizeof me, "c%d", index);
        while (settled.load(std::memory_order_relaxed) < messages) {
            auto got = c.call({"XREADGROUP", "GROUP", "workers", me, "COUNT", "1", "BLOCK", "1",
                               "STREAMS", "jobs", ">"});
            if (got.size() < 2) continue;   // timed out: nothing left for this consumer
            const std::string id = got[1];  // [stream, id, field, value]
            *worked += work(work_us);
            c.call({"XACK", "jobs", "workers", id});
            settled.fetch_add(1, std::memory_order_relaxed);
        }
    });
    auto pending = admin.call({"XPENDING", "jobs", "workers"});
    if (!pending.empty()) {  // ids of unacknowledged messages: there must be none
        std::fprintf(stderr, "redis: messages left pending\n");
        std::exit(1);
    }
    return r;
}

std::vector<int> parse_list(const char *s) {
    std::vector<int> v;
    for (const char *p = s; *p;) {
        v.push_back(std::atoi(p));
        p = std::strchr(p, ',');
        if (!p) break;
        p++;
    }
    return v;
}

}  // namespace

int main(int argc, char **argv) {
    long messages = 20000;
    int work_us = 50;
    std::vector<int> consumers = {1, 2, 4, 8};
    bool redis = true;
    const char *redis_path = "redis-server";
    for (int i = 1; i < argc; i++) {
        const std::string a = argv[i];
        const bool more = i + 1 < argc;
        if (a == "--messages" && more) messages = std::atol(argv[++i]);
        else if (a == "--work-us" && more) work_us = std::atoi(argv[++i]);
        else if (a == "--consumers" && more) consumers = parse_list(argv[++i]);
        else if (a == "--no-redis") redis = false;
        else if (a == "--redis-server" && more) redis_path = argv[++i];
        else {
            std::fprintf(stderr,
                         "usage: %s [--messages M] [--work-us W] [--consumers 1,2,4,8] "
                         "[--no-redis] [--redis-server PATH]\n",
                         argv[0]);
            return 2;
        }
    }
    RedisServer server;
    if (redis && !server.start(redis_path)) redis = false;
    std::printf("worker pool on one partition: %ld messages, %d us of sleeping work each\n",
                messages, work_us);
    std::printf("%-8s %9s %12s %14s %16s\n", "queue", "consumers", "msgs/s", "scaling vs 1",
                "overhead us/msg");
    struct Row {
        const char *name;
        std::function<Result(int)> run;
        double base = 0;
        std::vector<double> overhead = {};
    };
    std::vector<Row> rows = {
        {"mq", [&](int n) { return run_mq(messages, work_us, n, false); }},
        {"mq-ack", [&](int n) { return run_mq(messages, work_us, n, true); }},
        {"mutex", [&](int n) { return run_mutex(messages, work_us, n); }},
    };
    if (redis) {
        rows.push_back(
            {"redis", [&](int n) { return run_redis(server.port, messages / 4, work_us, n); }});
    }
    for (Row &row : rows) {
        for (int n : consumers) {
            const long m = std::strcmp(row.name, "redis") == 0 ? messages / 4 : messages;
            const Result r = row.run(n);
            const double rate = static_cast<double>(m) / r.seconds;
            if (row.base == 0) row.base = rate;
            const double overhead_us = (r.seconds * n - r.work_seconds) / m * 1e6;
            row.overhead.push_back(overhead_us);
            std::printf("%-8s %9d %12.0f %13.2fx %16.2f\n", row.name, n, rate, rate / row.base,
                        overhead_us);
            std::fflush(stdout);
        }
    }
    // The ratios the goals name, per consumer count: mq's overhead over the mutex queue's
    // (goal <= 2) and Redis's over mq's (goal >= 10).
    std::printf("\n%9s %22s %22s %20s\n", "consumers", "mq / mutex overhead",
                "mq-ack / mutex overhead", "redis / mq overhead");
    for (size_t i = 0; i < consumers.size(); i++) {
        const double mq = rows[0].overhead[i], mq_ack = rows[1].overhead[i],
                     mutex = rows[2].overhead[i];
        std::printf("%9d %22.2f %22.2f", consumers[i], mq / mutex, mq_ack / mutex);
        if (redis) std::printf(" %20.2f", rows[3].overhead[i] / mq);
        std::printf("\n");
    }
    return 0;
}
