/*
 * mq_demo: runs the reference trace, the push step and the reference stress of the
 * specification, prints them, and checks every printed result against the specification.
 * Any difference is reported and the exit status is 1, so the demo doubles as a smoke test.
 */
#define _POSIX_C_SOURCE 200809L
#include <mq.h>

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- output and checking ----------------------------------------------------------------- */

static int g_failures;
static int g_color;

static const char *ansi(const char *code) { return g_color ? code : ""; }
#define BOLD ansi("\033[1m")
#define DIM ansi("\033[2m")
#define GREEN ansi("\033[32m")
#define RED ansi("\033[31m")
#define RESET ansi("\033[0m")

/* A setup call that must succeed; the demo cannot go on without it. */
static void must(mq_status s, const char *what) {
    if (s == MQ_OK) return;
    fprintf(stderr, "mq_demo: %s failed: %s: %s\n", what, mq_status_name(s), mq_last_error());
    exit(1);
}

/* Compares what happened with what the specification says, printing the difference. */
static void expect_str(const char *what, const char *got, const char *want) {
    if (strcmp(got, want) == 0) return;
    ++g_failures;
    printf("     %sMISMATCH%s %s\n       got:      %s\n       expected: %s\n", RED, RESET, what,
           got, want);
}

static void expect_true(int cond, const char *fmt, ...) {
    if (cond) return;
    ++g_failures;
    va_list ap;
    va_start(ap, fmt);
    printf("     %sMISMATCH%s ", RED, RESET);
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
}

/* "MQ_FULL (partition 1 of orders is full)": a status with its detail, for results. Per thread
 * because stress threads report failures concurrently. */
static const char *status_text(mq_status s) {
    static _Thread_local char buf[320];
    snprintf(buf, sizeof buf, "%s (%s)", mq_status_name(s), mq_last_error());
    return buf;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* 1234567 -> "1,234,567" */
static const char *grouped(int64_t v, char *buf, size_t cap) {
    char digits[32];
    int n = snprintf(digits, sizeof digits, "%lld", (long long)(v < 0 ? -v : v));
    size_t o = 0;
    if (v < 0 && o + 1 < cap) buf[o++] = '-';
    for (int i = 0; i < n && o + 2 < cap; ++i) {
        if (i > 0 && (n - i) % 3 == 0) buf[o++] = ',';
        buf[o++] = digits[i];
    }
    buf[o] = '\0';
    return buf;
}

static void describe(mq_broker *b, const char *topic, int32_t partition, char *buf, size_t cap) {
    must(mq_partition_describe(b, topic, partition, buf, cap, NULL), "mq_partition_describe");
}

/* ---- the reference trace ----------------------------------------------------------------- */

/* The trace moves time by hand: "clock +31 s" must be exact, not slept. Atomic because push
 * loops read it from library threads. */
static _Atomic int64_t g_now_ns = 1000000000;
static int64_t manual_clock(void *user) {
    (void)user;
    return atomic_load(&g_now_ns);
}

#define ORDERS "orders"
#define CALL_W 46

static mq_status publish_str(mq_broker *b, const char *topic, const char *key, const char *payload,
                             int64_t wait_ms, int32_t *partition, int64_t *offset) {
    return mq_topic_publish(b, topic, key, key ? strlen(key) : 0, payload, strlen(payload), NULL, 0,
                            wait_ms, NULL, partition, offset);
}

/* "0:o-1, 1:o-2" (the trace's notation for polled messages) */
static void format_messages(const mq_message *m, size_t n, char *buf, size_t cap) {
    size_t o = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < n && o < cap; ++i)
        o +=
            (size_t)snprintf(buf + o, cap - o, "%s%lld:%.*s", i ? ", " : "", (long long)m[i].offset,
                             (int)m[i].payload_len, (const char *)m[i].payload);
}

/* A poll of partition 1 (no wait: the trace is single-threaded) written as the trace shows it. */
static void poll_row(mq_broker *b, const char *group, size_t max, char *res, size_t cap) {
    mq_message msgs[16];
    size_t n = 0;
    mq_status s =
        mq_group_poll(b, ORDERS, group, 1, msgs, sizeof(mq_message), max, MQ_NO_WAIT, NULL, &n);
    if (s != MQ_OK) {
        snprintf(res, cap, "poll: %s", status_text(s));
        return;
    }
    format_messages(msgs, n, res, cap);
    if (n > 0 && msgs[0].delivery_count > 1) {
        size_t len = strlen(res);
        snprintf(res + len, cap - len, " (lease ran out, rewound to %lld)",
                 (long long)msgs[0].offset);
    }
}

static void ack_into(mq_broker *b, const char *group, int64_t offset, char *res, size_t cap) {
    mq_status s = mq_group_ack(b, ORDERS, group, 1, offset);
    if (s != MQ_OK) {
        size_t len = strlen(res);
        snprintf(res + len, cap - len, "; ack %lld: %s", (long long)offset, status_text(s));
    }
}

/* Prints one trace row with partition 1's state after it, and checks both. */
static void row(mq_broker *b, int n, const char *call, const char *result, const char *want_result,
                const char *want_state) {
    char state[256];
    describe(b, ORDERS, 1, state, sizeof state);
    int result_ok = strcmp(result, want_result) == 0, state_ok = strcmp(state, want_state) == 0;
    printf("  %d  %-*s %s%s%s\n", n, CALL_W, call, result_ok ? GREEN : RED, result, RESET);
    printf("     %s  partition 1 after: %s%s\n", state_ok ? DIM : RED, state, RESET);
    char what[32];
    snprintf(what, sizeof what, "row %d result", n);
    expect_str(what, result, want_result);
    snprintf(what, sizeof what, "row %d partition 1", n);
    expect_str(what, state, want_state);
}

static void run_trace(mq_broker *b) {
    mq_topic_config cfg;
    mq_topic_config_init(&cfg, sizeof cfg);
    cfg.partitions = 2;
    cfg.capacity = 3;
    cfg.ack_timeout_ms = 30000;
    must(mq_topic_create(b, ORDERS, &cfg), "mq_topic_create(orders)");
    must(mq_group_subscribe(b, ORDERS, "billing", NULL), "subscribe billing");
    must(mq_group_subscribe(b, ORDERS, "email", NULL), "subscribe email");

    int32_t pa = -1, pb = -1;
    must(mq_key_partition("user-a", 6, 2, &pa), "mq_key_partition(user-a)");
    must(mq_key_partition("user-b", 6, 2, &pb), "mq_key_partition(user-b)");

    printf("%sReference trace%s: topic orders, 2 partitions, capacity 3, ack timeout 30 s;\n", BOLD,
           RESET);
    printf(
        "groups billing and email subscribed first; user-a -> partition %d, user-b -> "
        "partition %d.\nRows trace partition 1 (committed/next per group).\n\n",
        pa, pb);
    expect_true(pa == 1 && pb == 0, "user-a/user-b should land on partitions 1/0, got %d/%d", pa,
                pb);
    printf("  #  %-*s %s\n", CALL_W, "call", "result");
    printf("  -  %-*s %s\n", CALL_W, "----", "------");

    char res[512];
    int32_t p[4];
    int64_t o[4];
    mq_status s;

    /* 1: three messages for user-a and one for user-b, each fitting without a wait */
    const char *keys[4] = {"user-a", "user-a", "user-a", "user-b"};
    const char *pays[4] = {"o-1", "o-2", "o-3", "o-4"};
    res[0] = '\0';
    for (int i = 0; i < 4 && !res[0]; ++i)
        if ((s = publish_str(b, ORDERS, keys[i], pays[i], MQ_NO_WAIT, &p[i], &o[i])) != MQ_OK)
            snprintf(res, sizeof res, "publish %s: %s", pays[i], status_text(s));
    if (!res[0] && p[1] == p[0] && p[2] == p[0])
        snprintf(res, sizeof res, "offsets %lld, %lld, %lld on p%d; %lld on p%d", (long long)o[0],
                 (long long)o[1], (long long)o[2], p[0], (long long)o[3], p[3]);
    else if (!res[0])
        snprintf(res, sizeof res, "o-1..o-3 on partitions %d, %d, %d", p[0], p[1], p[2]);
    row(b, 1, "publish o-1, o-2, o-3 (user-a); o-4 (user-b)", res, "offsets 0, 1, 2 on p1; 0 on p0",
        "log 0..2, backlog 3/3; billing 0/0; email 0/0");

    /* 2: the partition is at capacity and the publish may not wait */
    s = publish_str(b, ORDERS, "user-a", "o-5", MQ_NO_WAIT, &p[0], &o[0]);
    if (s == MQ_FULL) snprintf(res, sizeof res, "full");
    else if (s == MQ_OK) snprintf(res, sizeof res, "offset %lld", (long long)o[0]);
    else snprintf(res, sizeof res, "%s", status_text(s));
    row(b, 2, "publish o-5 (user-a), wait 0", res, "full",
        "log 0..2, backlog 3/3; billing 0/0; email 0/0");

    /* 3 */
    poll_row(b, "billing", 2, res, sizeof res);
    ack_into(b, "billing", 0, res, sizeof res);
    row(b, 3, "billing polls max 2, acks 0", res, "0:o-1, 1:o-2",
        "log 0..2, backlog 3/3; billing 1/2; email 0/0");

    /* 4: email's ack frees offset 0, which billing has already acked */
    poll_row(b, "email", 10, res, sizeof res);
    ack_into(b, "email", 2, res, sizeof res);
    row(b, 4, "email polls max 10, acks 2", res, "0:o-1, 1:o-2, 2:o-3",
        "log 1..2, backlog 2/3; billing 1/2; email 3/3");

    /* 5 */
    s = publish_str(b, ORDERS, "user-a", "o-5", MQ_NO_WAIT, &p[0], &o[0]);
    if (s == MQ_OK && p[0] == 1) snprintf(res, sizeof res, "offset %lld", (long long)o[0]);
    else if (s == MQ_OK) snprintf(res, sizeof res, "offset %lld on p%d", (long long)o[0], p[0]);
    else snprintf(res, sizeof res, "%s", status_text(s));
    row(b, 5, "publish o-5 again", res, "offset 3",
        "log 1..3, backlog 3/3; billing 1/2; email 3/3");

    /* 6: billing's lease (30 s) from row 3 runs out */
    atomic_fetch_add(&g_now_ns, (int64_t)31 * 1000000000);
    poll_row(b, "billing", 10, res, sizeof res);
    row(b, 6, "clock +31 s; billing polls max 10", res,
        "1:o-2, 2:o-3, 3:o-5 (lease ran out, rewound to 1)",
        "log 1..3, backlog 3/3; billing 1/4; email 3/3");

    /* 7 */
    s = mq_group_ack(b, ORDERS, "billing", 1, 3);
    snprintf(res, sizeof res, "%s", s == MQ_OK ? "ok" : status_text(s));
    row(b, 7, "billing acks 3", res, "ok", "log 3..3, backlog 1/3; billing 4/4; email 3/3");

    /* 8: never delivered, so rejected with a message naming the in-flight range */
    s = mq_group_ack(b, ORDERS, "billing", 1, 7);
    if (s == MQ_ERR_NOT_IN_FLIGHT) snprintf(res, sizeof res, "rejected: %s", mq_last_error());
    else snprintf(res, sizeof res, "%s", s == MQ_OK ? "ok" : status_text(s));
    row(b, 8, "billing acks 7", res, "rejected: offset 7 is not in flight for billing (nothing is)",
        "log 3..3, backlog 1/3; billing 4/4; email 3/3");
}

/* ---- the push step ----------------------------------------------------------------------- */

typedef struct handler_call {
    char payload[16];
    int64_t offset;
    int ok;
} handler_call;

typedef struct ledger {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int failed_pay2;
    int calls;
    handler_call log[16];
} ledger;

static atomic_int g_ledger_frees;

static int ledger_handler(void *user, const mq_message *m) {
    ledger *l = user;
    pthread_mutex_lock(&l->mu);
    int is_pay2 = m->payload_len == 5 && memcmp(m->payload, "pay-2", 5) == 0;
    int ok = !(is_pay2 && !l->failed_pay2);
    if (is_pay2) l->failed_pay2 = 1;
    if (l->calls < 16) {
        handler_call *c = &l->log[l->calls];
        snprintf(c->payload, sizeof c->payload, "%.*s", (int)m->payload_len,
                 (const char *)m->payload);
        c->offset = m->offset;
        c->ok = ok;
    }
    ++l->calls;
    pthread_cond_broadcast(&l->cv);
    pthread_mutex_unlock(&l->mu);
    return ok ? 0 : 1;
}

static void ledger_free(void *user) {
    (void)user;
    atomic_fetch_add(&g_ledger_frees, 1);
}

static double mono_deadline(struct timespec *ts, double seconds) {
    clock_gettime(CLOCK_MONOTONIC, ts);
    double t = (double)ts->tv_sec + (double)ts->tv_nsec / 1e9 + seconds;
    ts->tv_sec = (time_t)t;
    ts->tv_nsec = (long)((t - (double)ts->tv_sec) * 1e9);
    return t;
}

static void run_push(mq_broker *b) {
    printf(
        "\n%sPush%s: topic payments, 1 partition, capacity 10; group ledger's handler fails "
        "the first time it sees pay-2.\n\n",
        BOLD, RESET);
    mq_topic_config cfg;
    mq_topic_config_init(&cfg, sizeof cfg);
    cfg.partitions = 1;
    cfg.capacity = 10;
    must(mq_topic_create(b, "payments", &cfg), "mq_topic_create(payments)");

    ledger l = {.failed_pay2 = 0, .calls = 0};
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&l.mu, NULL);
    pthread_cond_init(&l.cv, &ca);
    pthread_condattr_destroy(&ca);

    mq_subscription *sub = NULL;
    must(mq_subscription_open(b, "payments", "ledger", NULL, ledger_handler, &l, ledger_free, &sub),
         "mq_subscription_open(ledger)");
    const char *pays[3] = {"pay-1", "pay-2", "pay-3"};
    for (int i = 0; i < 3; ++i)
        must(publish_str(b, "payments", NULL, pays[i], MQ_WAIT_FOREVER, NULL, NULL),
             "publish to payments");

    /* Four handler calls are expected (pay-2 twice); then the last ack must land. */
    struct timespec deadline;
    double until = mono_deadline(&deadline, 5.0);
    pthread_mutex_lock(&l.mu);
    while (l.calls < 4 && pthread_cond_timedwait(&l.cv, &l.mu, &deadline) == 0) {
    }
    pthread_mutex_unlock(&l.mu);
    mq_group_info gi = {0};
    for (;;) {
        must(mq_group_get_info(b, "payments", "ledger", 0, &gi, sizeof gi), "mq_group_get_info");
        if (gi.committed == 3 || now_s() > until) break;
        struct timespec pause = {0, 1000000};
        nanosleep(&pause, NULL); /* the interval between looks at observable state */
    }
    must(mq_subscription_close(sub), "mq_subscription_close");

    static const handler_call want[4] = {
        {"pay-1", 0, 1}, {"pay-2", 1, 0}, {"pay-2", 1, 1}, {"pay-3", 2, 1}};
    int shown = l.calls < 16 ? l.calls : 16;
    for (int i = 0; i < shown; ++i) {
        const handler_call *c = &l.log[i];
        int match = i < 4 && strcmp(c->payload, want[i].payload) == 0 &&
                    c->offset == want[i].offset && c->ok == want[i].ok;
        printf("  handler call %d: %s (offset %lld) -> %s%s%s\n", i + 1, c->payload,
               (long long)c->offset, match ? GREEN : RED, c->ok ? "ok, acked" : "failed, nacked",
               RESET);
    }
    expect_true(l.calls == 4,
                "expected 4 handler calls (pay-1, pay-2 failing, pay-2, pay-3), got %d", l.calls);
    for (int i = 0; i < 4 && i < shown; ++i)
        expect_true(strcmp(l.log[i].payload, want[i].payload) == 0 && l.log[i].ok == want[i].ok,
                    "handler call %d: got %s %s, expected %s %s", i + 1, l.log[i].payload,
                    l.log[i].ok ? "ok" : "failed", want[i].payload, want[i].ok ? "ok" : "failed");
    expect_true(atomic_load(&g_ledger_frees) == 1, "user_free called %d times, expected once",
                atomic_load(&g_ledger_frees));

    char state[256];
    describe(b, "payments", 0, state, sizeof state);
    printf("  %safter: %s%s\n", DIM, state, RESET);
    expect_str("push step final state", state,
               "log empty, next offset 3, backlog 0/10; ledger 3/3");
    pthread_cond_destroy(&l.cv);
    pthread_mutex_destroy(&l.mu);
}

/* ---- the reference stress ---------------------------------------------------------------- */

enum {
    S_PRODUCERS = 4,
    S_PER_PRODUCER = 2500,
    S_KEYS = 40,
    S_PARTITIONS = 4,
    S_CAPACITY = 64,
    S_CONSUMERS = 2,
    S_BATCH = 10
};
#define S_TOPIC "stress"
#define S_TOTAL (S_PRODUCERS * S_PER_PRODUCER)
#define LABEL_W 16

/* Key k is owned by producer k % S_PRODUCERS; the payload is (key index, per-key sequence). */
typedef struct {
    uint32_t key;
    uint32_t seq;
} s_payload;

static mq_broker *g_sb;
static int32_t g_key_partition[S_KEYS];

typedef struct producer {
    pthread_t thread;
    int index;
    char error[400];
} producer;

static void key_name(int k, char out[8]) { snprintf(out, 8, "key-%02d", k); }

static void *producer_main(void *arg) {
    producer *p = arg;
    for (int i = 0; i < S_PER_PRODUCER; ++i) {
        int k = p->index + S_PRODUCERS * (i % (S_KEYS / S_PRODUCERS));
        s_payload pl = {(uint32_t)k, (uint32_t)(i / (S_KEYS / S_PRODUCERS))};
        char key[8];
        key_name(k, key);
        mq_status s = mq_topic_publish(g_sb, S_TOPIC, key, 6, &pl, sizeof pl, NULL, 0,
                                       MQ_WAIT_FOREVER, NULL, NULL, NULL);
        if (s != MQ_OK) {
            snprintf(p->error, sizeof p->error, "publish: %s", status_text(s));
            break;
        }
    }
    return NULL;
}

typedef struct consumer {
    pthread_t thread;
    const char *group;
    int pause; /* email sleeps 0.2 ms after each batch: a slow consumer */
    int32_t parts[S_PARTITIONS];
    size_t nparts;
    int64_t expected[S_PARTITIONS];
    int64_t received;
    uint32_t *next_seq;  /* per key, shared by the group; each key has one owner */
    char violation[160]; /* first order violation seen */
    char error[400];
} consumer;

static void check_message(consumer *c, const mq_message *m) {
    s_payload pl;
    char key[8];
    const char *bad = NULL;
    if (m->payload_len != sizeof pl) {
        bad = "payload size";
    } else {
        memcpy(&pl, m->payload, sizeof pl);
        key_name(pl.key < S_KEYS ? (int)pl.key : 0, key);
        if (pl.key >= S_KEYS || m->key_len != 6 || memcmp(m->key, key, 6) != 0)
            bad = "key does not match payload";
        else if (pl.seq != c->next_seq[pl.key]) {
            if (!c->violation[0])
                snprintf(c->violation, sizeof c->violation,
                         "%s: seq %u after %u (partition %d, offset %lld)", key, pl.seq,
                         c->next_seq[pl.key], m->partition, (long long)m->offset);
        }
        if (!bad) c->next_seq[pl.key] = pl.seq + 1;
    }
    if (bad && !c->violation[0])
        snprintf(c->violation, sizeof c->violation, "%s at partition %d, offset %lld", bad,
                 m->partition, (long long)m->offset);
}

static void consume(consumer *c) {
    int64_t remaining[S_PARTITIONS], total = 0;
    for (size_t i = 0; i < c->nparts; ++i) total += remaining[i] = c->expected[i];
    mq_message msgs[S_BATCH];
    double deadline = now_s() + 30.0;
    int idle = 0;
    while (c->received < total) {
        int got = 0;
        for (size_t i = 0; i < c->nparts; ++i) {
            if (remaining[i] == 0) continue;
            size_t n = 0;
            /* Block briefly only when a whole round found nothing, so one quiet partition
             * does not hold up the other. */
            mq_status s =
                mq_group_poll(g_sb, S_TOPIC, c->group, c->parts[i], msgs, sizeof(mq_message),
                              S_BATCH, idle ? 1 : MQ_NO_WAIT, NULL, &n);
            if (s == MQ_TIMEOUT || (s == MQ_OK && n == 0)) continue;
            if (s != MQ_OK) {
                snprintf(c->error, sizeof c->error, "poll: %s", status_text(s));
                return;
            }
            for (size_t j = 0; j < n; ++j) check_message(c, &msgs[j]);
            c->received += (int64_t)n;
            remaining[i] -= (int64_t)n;
            s = mq_group_ack(g_sb, S_TOPIC, c->group, c->parts[i], msgs[n - 1].offset);
            if (s != MQ_OK) {
                snprintf(c->error, sizeof c->error, "ack: %s", status_text(s));
                return;
            }
            if (c->pause) {
                struct timespec pause = {0, 200000};
                nanosleep(&pause, NULL);
            }
            got = 1;
        }
        idle = !got;
        if (now_s() > deadline) {
            snprintf(c->error, sizeof c->error, "%lld of %lld messages after 30 s",
                     (long long)c->received, (long long)total);
            return;
        }
    }
}

static void *consumer_main(void *arg) {
    consumer *c = arg;
    consume(c);
    /* Producers would wait forever for this consumer's acks: closing wakes them. */
    if (c->error[0]) mq_broker_close(g_sb);
    return NULL;
}

static void run_stress(void) {
    must(mq_broker_new(NULL, &g_sb), "mq_broker_new");
    mq_topic_config cfg;
    mq_topic_config_init(&cfg, sizeof cfg);
    cfg.partitions = S_PARTITIONS;
    cfg.capacity = S_CAPACITY;
    must(mq_topic_create(g_sb, S_TOPIC, &cfg), "mq_topic_create(stress)");

    int64_t per_partition[S_PARTITIONS] = {0};
    for (int k = 0; k < S_KEYS; ++k) {
        char key[8];
        key_name(k, key);
        must(mq_key_partition(key, 6, S_PARTITIONS, &g_key_partition[k]), "mq_key_partition");
        per_partition[g_key_partition[k]] += S_TOTAL / S_KEYS;
    }

    static const char *groups[2] = {"billing", "email"};
    static uint32_t next_seq[2][S_KEYS];
    consumer cons[2][S_CONSUMERS];
    memset(cons, 0, sizeof cons);
    for (int g = 0; g < 2; ++g) {
        must(mq_group_subscribe(g_sb, S_TOPIC, groups[g], NULL), "mq_group_subscribe");
        for (int m = 0; m < S_CONSUMERS; ++m) {
            consumer *c = &cons[g][m];
            c->group = groups[g];
            c->pause = g == 1;
            c->next_seq = next_seq[g];
            must(mq_assignment_round_robin(S_PARTITIONS, S_CONSUMERS, m, c->parts, S_PARTITIONS,
                                           &c->nparts),
                 "mq_assignment_round_robin");
            for (size_t i = 0; i < c->nparts; ++i) c->expected[i] = per_partition[c->parts[i]];
        }
    }

    char per[32];
    printf(
        "\n%sReference stress%s: %d producers x %s messages over %d keys (each key owned by "
        "one producer);\n%d partitions, capacity %d; groups billing and email of %d consumers "
        "each (round-robin),\nemail pausing 0.2 ms after each batch.\n\n",
        BOLD, RESET, S_PRODUCERS, grouped(S_PER_PRODUCER, per, sizeof per), S_KEYS, S_PARTITIONS,
        S_CAPACITY, S_CONSUMERS);

    producer prods[S_PRODUCERS];
    memset(prods, 0, sizeof prods);
    double t0 = now_s();
    for (int g = 0; g < 2; ++g)
        for (int m = 0; m < S_CONSUMERS; ++m)
            pthread_create(&cons[g][m].thread, NULL, consumer_main, &cons[g][m]);
    for (int i = 0; i < S_PRODUCERS; ++i) {
        prods[i].index = i;
        pthread_create(&prods[i].thread, NULL, producer_main, &prods[i]);
    }
    for (int i = 0; i < S_PRODUCERS; ++i) pthread_join(prods[i].thread, NULL);
    for (int g = 0; g < 2; ++g)
        for (int m = 0; m < S_CONSUMERS; ++m) pthread_join(cons[g][m].thread, NULL);
    double elapsed = now_s() - t0;

    for (int i = 0; i < S_PRODUCERS; ++i)
        expect_true(!prods[i].error[0], "producer %d: %s", i, prods[i].error);
    char num[32];
    for (int g = 0; g < 2; ++g) {
        int64_t got = 0;
        const char *violation = NULL;
        for (int m = 0; m < S_CONSUMERS; ++m) {
            consumer *c = &cons[g][m];
            got += c->received;
            expect_true(!c->error[0], "%s consumer %d: %s", groups[g], m, c->error);
            if (!violation && c->violation[0]) violation = c->violation;
        }
        /* Every key must end at its last sequence number: no message lost at the tail. */
        for (int k = 0; k < S_KEYS && !violation; ++k)
            if (next_seq[g][k] != S_TOTAL / S_KEYS) {
                static char tail[2][96];
                snprintf(tail[g], sizeof tail[g], "key-%02d ended at seq %u of %d", k,
                         next_seq[g][k], S_TOTAL / S_KEYS);
                violation = tail[g];
            }
        int ok = got == S_TOTAL && !violation;
        printf("  %-*s %s%s messages, per-key order %s%s\n", LABEL_W, groups[g], ok ? GREEN : RED,
               grouped(got, num, sizeof num), violation ? violation : "ok", RESET);
        expect_true(got == S_TOTAL, "%s received %lld messages, expected %d", groups[g],
                    (long long)got, S_TOTAL);
        expect_true(!violation, "%s order: %s", groups[g], violation ? violation : "");
    }

    int64_t waits = 0, largest = 0;
    for (int32_t p = 0; p < S_PARTITIONS; ++p) {
        mq_partition_info pi;
        must(mq_partition_get_info(g_sb, S_TOPIC, p, &pi, sizeof pi), "mq_partition_get_info");
        waits += pi.producer_waits;
        if (pi.max_backlog > largest) largest = pi.max_backlog;
    }
    printf("  %-*s %s\n", LABEL_W, "producer waits", grouped(waits, num, sizeof num));
    printf("  %-*s %lld (capacity %d)\n", LABEL_W, "largest backlog", (long long)largest,
           S_CAPACITY);
    printf("  %-*s %.3f s\n", LABEL_W, "elapsed", elapsed);
    printf("  %-*s %s messages/s published (each delivered to both groups)\n", LABEL_W,
           "throughput", grouped((int64_t)((double)S_TOTAL / elapsed), num, sizeof num));
    expect_true(waits > 0, "producers never waited on back-pressure");
    expect_true(largest == S_CAPACITY, "largest backlog %lld, expected exactly %d",
                (long long)largest, S_CAPACITY);
    mq_broker_free(g_sb);
}

int main(void) {
    const char *no_color = getenv("NO_COLOR");
    g_color = isatty(STDOUT_FILENO) && !(no_color && no_color[0]);
    printf("%smq %s%s: the reference scenarios of the specification, checked as they run.\n\n",
           BOLD, mq_version_string(), RESET);

    mq_broker_options opts;
    mq_broker_options_init(&opts, sizeof opts);
    opts.clock = manual_clock;
    mq_broker *b = NULL;
    must(mq_broker_new(&opts, &b), "mq_broker_new");
    run_trace(b);
    run_push(b);
    mq_broker_free(b);

    run_stress();

    printf("\n");
    if (g_failures) {
        printf("%s%d check(s) differ from the specification%s\n", RED, g_failures, RESET);
        fflush(stdout);
        fprintf(stderr, "mq_demo: FAILED: %d check(s) differ from the specification\n", g_failures);
        return 1;
    }
    printf("%sEverything above matches the specification.%s\n", GREEN, RESET);
    return 0;
}
