/*
 * mq_bench_throughput: messages per second through the C API, for three workloads:
 *   single   1 producer -> 1 group: publish one, poll one, ack one (producer and consumer on
 *            their own threads);
 *   batch64  the same with mq_topic_publish_batch of 64, polls of up to 64, one cumulative ack each;
 *   stress   the reference stress without the pause: 4 producers over 40 keys (each key owned
 *            by one producer), 4 partitions, capacity 64, 2 groups x 2 consumers, polls of 10.
 * Payloads are 64 bytes. Every run verifies what each group received (count, per-key order, a
 * digest of the payloads) and exits 1 on any difference: a fast wrong answer is not a result.
 * Prints the median of --runs runs (default 3) of --messages messages (default 1,000,000).
 */
#define _POSIX_C_SOURCE 200809L
#include <mq.h>

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum {
    PAYLOAD = 64,
    MAX_KEYS = 40,
    MAX_PARTS = 4,
    MAX_PRODUCERS = 4,
    MAX_GROUPS = 2,
    MAX_MEMBERS = 2,
    MAX_POLL = 64
};
#define TOPIC "bench"

typedef struct workload {
    const char *name;
    const char *what;
    int producers;
    int keys; /* multiple of producers; 1 key means "no key" (NULL) */
    int32_t partitions;
    int64_t capacity;
    int groups;
    int members; /* consumers per group, partitions assigned round-robin */
    size_t poll_max;
    size_t publish_batch; /* 0: mq_topic_publish one at a time */
} workload;

static const workload WORKLOADS[] = {
    {"single", "publish 1, poll 1, ack 1; 1 producer -> 1 group", 1, 1, 1, 1024, 1, 1, 1, 0},
    {"batch64", "publish_batch 64, poll 64, 1 ack per batch; 1 producer -> 1 group", 1, 1, 1, 1024,
     1, 1, 64, 64},
    {"stress", "4 producers, 40 keys, 4 partitions, cap 64, 2 groups x 2 consumers, poll 10", 4, 40,
     4, 64, 2, 2, 10, 0},
};

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *fmt, const char *a, const char *b) {
    fprintf(stderr, "mq_bench_throughput: FAILED: ");
    fprintf(stderr, fmt, a, b);
    fprintf(stderr, "\n");
    exit(1);
}

static void must(mq_status s, const char *what) {
    if (s != MQ_OK) {
        fprintf(stderr, "mq_bench_throughput: FAILED: %s: %s: %s\n", what, mq_status_name(s),
                mq_last_error());
        exit(1);
    }
}

/* ---- messages: 64 bytes = key index, per-key sequence, then filler derived from both ------ */

static uint64_t mix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static void make_payload(unsigned char *p, uint32_t key, uint32_t seq) {
    memcpy(p, &key, 4);
    memcpy(p + 4, &seq, 4);
    uint64_t w = ((uint64_t)key << 32) | seq;
    for (int i = 8; i < PAYLOAD; i += 8) {
        w = mix64(w);
        memcpy(p + i, &w, 8);
    }
}

/* A digest term per message; summed, so the total does not depend on cross-partition order. */
static uint64_t payload_hash(const unsigned char *p) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (int i = 0; i < PAYLOAD; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        h = (h ^ w) * 0x100000001b3ull;
    }
    return mix64(h);
}

static void key_name(int k, char out[8]) { snprintf(out, 8, "key-%02d", k); }

/* ---- one run ------------------------------------------------------------------------------ */

typedef struct run {
    const workload *w;
    mq_broker *b;
    int64_t per_producer[MAX_PRODUCERS];
    pthread_mutex_t mu;
    char first_error[480]; /* the cause of a failed run: later failures are its echoes */
} run;

/* Records a thread's failure and closes the broker, which wakes every other thread (they then
 * fail with MQ_CLOSED), so a failed run ends at once instead of stalling on back-pressure. */
static void fail_run(run *r, const char *who, const char *error) {
    pthread_mutex_lock(&r->mu);
    if (!r->first_error[0]) snprintf(r->first_error, sizeof r->first_error, "%s: %s", who, error);
    pthread_mutex_unlock(&r->mu);
    mq_broker_close(r->b);
}

typedef struct producer {
    pthread_t thread;
    run *r;
    int index;
    uint64_t digest;
    char error[320];
} producer;

typedef struct consumer {
    pthread_t thread;
    run *r;
    const char *group;
    int32_t parts[MAX_PARTS];
    size_t nparts;
    int64_t expected[MAX_PARTS];
    int64_t received;
    uint64_t digest;
    uint32_t *next_seq; /* per key, shared by the group: each key has one owner */
    char error[320];
} consumer;

static void set_error(char *buf, size_t cap, const char *what, mq_status s) {
    snprintf(buf, cap, "%s: %s: %s", what, mq_status_name(s), mq_last_error());
}

/* Message i of producer p: its key cycles over the producer's own keys, so every key's
 * sequence numbers come from one thread in order. */
static void message_of(const workload *w, int p, int64_t i, uint32_t *key, uint32_t *seq) {
    int own = w->keys / w->producers;
    *key = (uint32_t)(p + w->producers * (int)(i % own));
    *seq = (uint32_t)(i / own);
}

static void produce(producer *pr) {
    const workload *w = pr->r->w;
    int64_t count = pr->r->per_producer[pr->index];
    unsigned char buf[MAX_POLL][PAYLOAD];
    char keys[MAX_POLL][8];
    mq_record recs[MAX_POLL];
    size_t batch = w->publish_batch ? w->publish_batch : 1;
    for (int64_t i = 0; i < count;) {
        size_t n = 0;
        for (; n < batch && i < count; ++n, ++i) {
            uint32_t key, seq;
            message_of(w, pr->index, i, &key, &seq);
            make_payload(buf[n], key, seq);
            pr->digest += payload_hash(buf[n]);
            key_name((int)key, keys[n]);
            recs[n] = (mq_record){.key = w->keys > 1 ? keys[n] : NULL,
                                  .key_len = w->keys > 1 ? 6 : 0,
                                  .payload = buf[n],
                                  .payload_len = PAYLOAD};
        }
        mq_status s;
        if (w->publish_batch) {
            size_t published = 0;
            s = mq_topic_publish_batch(pr->r->b, TOPIC, recs, sizeof(mq_record), n, MQ_WAIT_FOREVER,
                                       NULL, NULL, sizeof(mq_publish_result), &published);
            if (s == MQ_OK && published != n) {
                snprintf(pr->error, sizeof pr->error, "publish_batch: %zu of %zu published",
                         published, n);
                return;
            }
        } else {
            s = mq_topic_publish(pr->r->b, TOPIC, recs[0].key, recs[0].key_len, recs[0].payload,
                                 PAYLOAD, NULL, 0, MQ_WAIT_FOREVER, NULL, NULL, NULL);
        }
        if (s != MQ_OK) {
            set_error(pr->error, sizeof pr->error, w->publish_batch ? "publish_batch" : "publish",
                      s);
            return;
        }
    }
}

static void *producer_main(void *arg) {
    producer *pr = arg;
    produce(pr);
    if (pr->error[0]) fail_run(pr->r, "producer", pr->error);
    return NULL;
}

static int check_message(consumer *c, const mq_message *m) {
    uint32_t key, seq;
    char name[8];
    if (m->payload_len != PAYLOAD) {
        snprintf(c->error, sizeof c->error, "partition %d offset %lld: payload of %zu bytes",
                 m->partition, (long long)m->offset, m->payload_len);
        return 0;
    }
    memcpy(&key, m->payload, 4);
    memcpy(&seq, (const unsigned char *)m->payload + 4, 4);
    key_name((int)key, name);
    int keyed = c->r->w->keys > 1;
    if (key >= (uint32_t)c->r->w->keys ||
        (keyed ? m->key_len != 6 || memcmp(m->key, name, 6) != 0 : m->key != NULL)) {
        snprintf(c->error, sizeof c->error, "partition %d offset %lld: key does not match payload",
                 m->partition, (long long)m->offset);
        return 0;
    }
    if (seq != c->next_seq[key]) {
        snprintf(c->error, sizeof c->error,
                 "order: key %u got seq %u, expected %u (partition %d offset %lld)", key, seq,
                 c->next_seq[key], m->partition, (long long)m->offset);
        return 0;
    }
    c->next_seq[key] = seq + 1;
    c->digest += payload_hash(m->payload);
    return 1;
}

static void consume(consumer *c) {
    const workload *w = c->r->w;
    int64_t remaining[MAX_PARTS], total = 0;
    for (size_t i = 0; i < c->nparts; ++i) total += remaining[i] = c->expected[i];
    mq_message msgs[MAX_POLL];
    double last_progress = now_s();
    int idle = 0;
    while (c->received < total) {
        int got = 0;
        for (size_t i = 0; i < c->nparts; ++i) {
            if (remaining[i] == 0) continue;
            /* One partition: block in the library. Several: block briefly only after a round
             * that found nothing, so a quiet partition does not hold up a busy one. */
            int64_t wait = c->nparts == 1 ? 100 : idle ? 1 : MQ_NO_WAIT;
            size_t n = 0;
            mq_status s = mq_group_poll(c->r->b, TOPIC, c->group, c->parts[i], msgs,
                                        sizeof(mq_message), w->poll_max, wait, NULL, &n);
            if (s == MQ_TIMEOUT || (s == MQ_OK && n == 0)) continue;
            if (s != MQ_OK) {
                set_error(c->error, sizeof c->error, "poll", s);
                return;
            }
            for (size_t j = 0; j < n; ++j)
                if (!check_message(c, &msgs[j])) return;
            c->received += (int64_t)n;
            remaining[i] -= (int64_t)n;
            if (remaining[i] < 0) {
                snprintf(c->error, sizeof c->error, "partition %d: more messages than published",
                         c->parts[i]);
                return;
            }
            s = mq_group_ack(c->r->b, TOPIC, c->group, c->parts[i], msgs[n - 1].offset);
            if (s != MQ_OK) {
                set_error(c->error, sizeof c->error, "ack", s);
                return;
            }
            got = 1;
        }
        idle = !got;
        if (got) {
            last_progress = now_s();
        } else if (now_s() - last_progress > 10.0) {
            snprintf(c->error, sizeof c->error, "stalled: %lld of %lld messages, none for 10 s",
                     (long long)c->received, (long long)total);
            return;
        }
    }
}

static void *consumer_main(void *arg) {
    consumer *c = arg;
    consume(c);
    if (c->error[0]) fail_run(c->r, c->group, c->error);
    return NULL;
}

/* Runs the workload once with `messages` messages; returns the elapsed seconds. */
static double run_once(const workload *w, int64_t messages) {
    run r = {.w = w};
    pthread_mutex_init(&r.mu, NULL);
    for (int p = 0; p < w->producers; ++p)
        r.per_producer[p] = messages / w->producers + (p < messages % w->producers);

    must(mq_broker_new(NULL, &r.b), "mq_broker_new");
    mq_topic_config cfg;
    mq_topic_config_init(&cfg, sizeof cfg);
    cfg.partitions = w->partitions;
    cfg.capacity = w->capacity;
    must(mq_topic_create(r.b, TOPIC, &cfg), "mq_topic_create");

    /* How many messages each partition will get, from the keys' partitions. */
    int64_t per_key[MAX_KEYS] = {0}, per_part[MAX_PARTS] = {0};
    int own = w->keys / w->producers;
    for (int p = 0; p < w->producers; ++p)
        for (int j = 0; j < own; ++j)
            per_key[p + w->producers * j] = r.per_producer[p] / own + (j < r.per_producer[p] % own);
    for (int k = 0; k < w->keys; ++k) {
        int32_t part = 0;
        char name[8];
        key_name(k, name);
        if (w->keys > 1) must(mq_key_partition(name, 6, w->partitions, &part), "partition");
        per_part[part] += per_key[k];
    }

    static const char *group_names[MAX_GROUPS] = {"billing", "email"};
    uint32_t next_seq[MAX_GROUPS][MAX_KEYS];
    memset(next_seq, 0, sizeof next_seq);
    consumer cons[MAX_GROUPS][MAX_MEMBERS];
    producer prods[MAX_PRODUCERS];
    memset(cons, 0, sizeof cons);
    memset(prods, 0, sizeof prods);
    for (int g = 0; g < w->groups; ++g) {
        must(mq_group_subscribe(r.b, TOPIC, group_names[g], NULL), "mq_group_subscribe");
        for (int m = 0; m < w->members; ++m) {
            consumer *c = &cons[g][m];
            c->r = &r;
            c->group = group_names[g];
            c->next_seq = next_seq[g];
            must(mq_assignment_round_robin(w->partitions, w->members, m, c->parts, MAX_PARTS,
                                           &c->nparts),
                 "mq_assignment_round_robin");
            for (size_t i = 0; i < c->nparts; ++i) c->expected[i] = per_part[c->parts[i]];
        }
    }

    double t0 = now_s();
    for (int g = 0; g < w->groups; ++g)
        for (int m = 0; m < w->members; ++m)
            pthread_create(&cons[g][m].thread, NULL, consumer_main, &cons[g][m]);
    for (int p = 0; p < w->producers; ++p) {
        prods[p].r = &r;
        prods[p].index = p;
        pthread_create(&prods[p].thread, NULL, producer_main, &prods[p]);
    }
    for (int p = 0; p < w->producers; ++p) pthread_join(prods[p].thread, NULL);
    for (int g = 0; g < w->groups; ++g)
        for (int m = 0; m < w->members; ++m) pthread_join(cons[g][m].thread, NULL);
    double elapsed = now_s() - t0;

    if (r.first_error[0]) die("%s: %s", w->name, r.first_error);
    uint64_t sent = 0;
    for (int p = 0; p < w->producers; ++p) sent += prods[p].digest;
    for (int g = 0; g < w->groups; ++g) {
        int64_t got = 0;
        uint64_t digest = 0;
        for (int m = 0; m < w->members; ++m) {
            got += cons[g][m].received;
            digest += cons[g][m].digest;
        }
        char detail[128];
        if (got != messages) {
            snprintf(detail, sizeof detail, "%s received %lld of %lld", group_names[g],
                     (long long)got, (long long)messages);
            die("%s: %s", w->name, detail);
        }
        if (digest != sent)
            die("%s: %s: payload digest differs from what was published", w->name, group_names[g]);
        for (int k = 0; k < w->keys; ++k)
            if (next_seq[g][k] != (uint32_t)per_key[k]) {
                snprintf(detail, sizeof detail, "%s: key %d ended at seq %u of %lld",
                         group_names[g], k, next_seq[g][k], (long long)per_key[k]);
                die("%s: %s", w->name, detail);
            }
    }
    mq_broker_free(r.b);
    pthread_mutex_destroy(&r.mu);
    return elapsed;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* 1234567 -> "1,234,567" */
static const char *grouped(int64_t v, char *buf) {
    char digits[32];
    int n = snprintf(digits, sizeof digits, "%lld", (long long)v), o = 0;
    for (int i = 0; i < n; ++i) {
        if (i > 0 && (n - i) % 3 == 0) buf[o++] = ',';
        buf[o++] = digits[i];
    }
    buf[o] = '\0';
    return buf;
}

static int64_t parse_count(const char *flag, const char *arg, int64_t min) {
    char *end = NULL;
    long long v = arg ? strtoll(arg, &end, 10) : 0;
    if (!arg || *end || v < min) {
        fprintf(stderr, "mq_bench_throughput: %s needs an integer >= %lld\n", flag, (long long)min);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv) {
    int64_t runs = 3, messages = 1000000;
    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--runs") == 0) {
            runs = parse_count("--runs", i + 1 < argc ? argv[++i] : NULL, 1);
        } else if (strcmp(argv[i], "--messages") == 0) {
            messages = parse_count("--messages", i + 1 < argc ? argv[++i] : NULL, 1);
        } else {
            fprintf(stderr,
                    "usage: %s [--runs N] [--messages N]\n"
                    "  N messages per workload (default 1000000), median of N runs "
                    "(default 3)\n",
                    argv[0]);
            return strcmp(argv[i], "--help") == 0 ? 0 : 2;
        }
    }
    if (messages > UINT32_MAX) messages = UINT32_MAX; /* the payload's sequence is 32-bit */

    printf("mq %s throughput: %d-byte payloads, %s messages per workload, median of %lld run%s\n\n",
           mq_version_string(), PAYLOAD, grouped(messages, (char[32]){0}), (long long)runs,
           runs == 1 ? "" : "s");
    printf("| workload | what | messages | median time | msg/s |\n");
    printf("|---|---|---:|---:|---:|\n");
    for (size_t i = 0; i < sizeof WORKLOADS / sizeof WORKLOADS[0]; ++i) {
        const workload *w = &WORKLOADS[i];
        double *t = calloc((size_t)runs, sizeof *t);
        if (!t) return 1;
        for (int64_t r = 0; r < runs; ++r) t[r] = run_once(w, messages);
        qsort(t, (size_t)runs, sizeof *t, cmp_double);
        double median = runs % 2 ? t[runs / 2] : (t[runs / 2 - 1] + t[runs / 2]) / 2;
        char a[32], b[32];
        printf("| %s | %s | %s | %.3f s | %s |\n", w->name, w->what, grouped(messages, a), median,
               grouped((int64_t)((double)messages / median), b));
        fflush(stdout);
        free(t);
    }
    printf(
        "\nmsg/s counts messages published; in stress each is delivered to both groups.\n"
        "Every run verified: per-group count, per-key order, payload digest.\n");
    return 0;
}
