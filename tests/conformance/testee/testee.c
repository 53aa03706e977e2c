/* The reference testee: executes the runner's requests (tests/conformance/FORMAT.md, "The
 * testee protocol") through the public C API, one reply line per request. It checks nothing:
 * it reports what the library did, and the runner compares. */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mq.h"
#include "protocol.h"

/* ---- the world of one scenario ------------------------------------------------------------ */

static _Atomic int64_t now_ns = 1000000000; /* the manual clock */
static int64_t manual_clock(void *user) {
    (void)user;
    return atomic_load(&now_ns);
}
static mq_broker *broker;

/* The Kafka backend (docs/KAFKA.md): with MQ_CONFORMANCE_BACKEND=kafka the broker is opened on
 * the cluster at MQ_KAFKA_BOOTSTRAP, without the manual clock (Kafka's time is the cluster's),
 * and the topics the scenario created are deleted at its end so the next one starts clean. */
static const char *kafka_bootstrap(void) {
    const char *backend = getenv("MQ_CONFORMANCE_BACKEND");
    if (!backend || strcmp(backend, "kafka") != 0) return NULL;
    const char *b = getenv("MQ_KAFKA_BOOTSTRAP");
    return b && *b ? b : "MQ_KAFKA_BOOTSTRAP-is-not-set";
}
static char *kafka_topics[64];
static size_t kafka_topic_count;

static void kafka_cleanup(void) {
    if (!kafka_topic_count) return;
    mq_broker_options o;
    mq_broker_options_init(&o, sizeof o);
    o.kafka_bootstrap = kafka_bootstrap();
    mq_broker *b = NULL;
    if (mq_broker_new(&o, &b) == MQ_OK) {
        for (size_t i = 0; i < kafka_topic_count; i++) mq_topic_delete(b, kafka_topics[i]);
        mq_broker_free(b);
    }
    for (size_t i = 0; i < kafka_topic_count; i++) free(kafka_topics[i]);
    kafka_topic_count = 0;
}

typedef struct use { /* one fail=/extend= entry: used up by one handler call */
    const char *payload;
    size_t len;
    int left;
} use;

typedef struct push {
    mq_subscription *sub;
    int open;
    atomic_int frees;
    pthread_mutex_t mu; /* guards the uses and the calls */
    use *fails, *extends;
    size_t fail_count, extend_count;
    int has_delay;
    int64_t delay_ms;
    request req; /* keeps the fail=/extend= bytes */
    FILE *calls; /* the calls so far, as reply fields */
    char *calls_buf;
    size_t calls_len;
} push;

typedef struct member {
    mq_member *m;
    int open;
    pthread_mutex_t mu;
    FILE *rebalances; /* " rebalance=GEN:ID" per on_rebalance call */
    char *rebalances_buf;
    size_t rebalances_len;
} member;

typedef struct background {
    request req;
    mq_cancel *cancel;
    pthread_t thread;
    int threaded; /* async=: a thread to join; start=: an *_async call, no thread */
    atomic_int done;
    char *reply;
    size_t reply_len;
    /* start=: what the pending call writes into, alive until its reply is written */
    mq_record *recs;
    mq_header *headers;
    size_t n;
    mq_publish_result *results;
    mq_message *msgs;
    size_t max, count, published;
    int32_t partition;
    int64_t offset;
} background;

/* Named objects. Background threads look members up, so the table has a lock. */
enum kind { PUSH, MEMBER, BACKGROUND, PUBLISHER, CURSOR };

/* A publisher or cursor (ABI 1.7), closed by its close request or by end. */
typedef struct opened {
    mq_publisher *p;
    mq_cursor *c;
    int open;
} opened;
typedef struct named {
    char *name;
    enum kind kind;
    void *obj;
} named;
static named names[256];
static size_t name_count;
static pthread_mutex_t names_mu = PTHREAD_MUTEX_INITIALIZER;

static void *find(request *r, const char *field_name, enum kind kind) {
    const char *name = req_str(r, field_name);
    void *obj = NULL;
    pthread_mutex_lock(&names_mu);
    for (size_t i = 0; name && i < name_count; ++i)
        if (names[i].kind == kind && strcmp(names[i].name, name) == 0) obj = names[i].obj;
    pthread_mutex_unlock(&names_mu);
    return obj;
}

static int add(request *r, const char *field_name, enum kind kind, void *obj) {
    pthread_mutex_lock(&names_mu);
    int ok = name_count < sizeof names / sizeof names[0];
    if (ok) names[name_count++] = (named){strdup(req_str(r, field_name)), kind, obj};
    pthread_mutex_unlock(&names_mu);
    return ok;
}

/* ---- replies -------------------------------------------------------------------------------- */

static void status(FILE *out, mq_status st) {
    fputs(mq_status_name(st), out);
    if (st != MQ_OK) {
        const char *e = mq_last_error(); /* same thread, right after the call */
        put_bytes(out, "error", e, strlen(e));
    }
}

static void testee_error(FILE *out, const char *what) {
    fputs("testee_error", out);
    put_bytes(out, "detail", what, strlen(what));
}

static void put_message(FILE *out, const mq_message *m) {
    fprintf(out, " message=%" PRId32 ":%" PRId64, m->partition, m->offset);
    if (m->payload) put_bytes(out, "payload", m->payload, m->payload_len);
    if (m->key) put_bytes(out, "key", m->key, m->key_len);
    fprintf(out, " delivery_count=%" PRIu32 " timestamp_ns=%" PRId64 " lost=%" PRId64,
            m->delivery_count, m->timestamp_ns, m->lost);
    for (size_t i = 0; i < m->header_count; ++i) {
        put_bytes(out, "header", m->headers[i].name, m->headers[i].name_len);
        fputc(':', out);
        put_enc(out, m->headers[i].value, m->headers[i].value_len);
    }
    const mq_dead_letter *d = m->dead_letter;
    if (d) {
        put_bytes(out, "dead_letter", d->topic, strlen(d->topic));
        fputc(':', out);
        put_enc(out, d->group, strlen(d->group));
        fprintf(out, ":%" PRId32 ":%" PRId64 ":%" PRIu32, d->partition, d->offset,
                d->delivery_count);
    }
}

/* ---- scripted handlers and assignors ------------------------------------------------------- */

static int take(use *uses, size_t count, const mq_message *m) {
    for (size_t i = 0; i < count; ++i)
        if (uses[i].left && uses[i].len == m->payload_len &&
            memcmp(uses[i].payload, m->payload, m->payload_len) == 0) {
            uses[i].left--;
            return 1;
        }
    return 0;
}

static int scripted_handler(void *user, const mq_message *m) {
    push *p = user;
    pthread_mutex_lock(&p->mu);
    int fails = take(p->fails, p->fail_count, m);
    const char *extended = NULL, *delayed = NULL;
    if (take(p->extends, p->extend_count, m)) extended = mq_status_name(mq_handler_extend_lease());
    if (fails && p->has_delay) delayed = mq_status_name(mq_handler_set_nack_delay(p->delay_ms));
    put_message(p->calls, m);
    fprintf(p->calls, " outcome=%s", fails ? "fail" : "ok");
    if (extended) fprintf(p->calls, " extend_lease=%s", extended);
    if (delayed) fprintf(p->calls, " nack_delay=%s", delayed);
    pthread_mutex_unlock(&p->mu);
    return fails;
}

static void count_free(void *user) { atomic_fetch_add(&((push *)user)->frees, 1); }

static void record_rebalance(void *user, mq_member *handle, int64_t generation) {
    member *mb = user;
    const char *id = mq_member_id(handle);
    pthread_mutex_lock(&mb->mu);
    fprintf(mb->rebalances, " rebalance=%" PRId64 ":", generation);
    put_enc(mb->rebalances, id, strlen(id));
    pthread_mutex_unlock(&mb->mu);
}

static void all_to_last(void *u, int32_t partitions, const char *const *ids, int32_t count,
                        int32_t *owner) {
    (void)u, (void)ids;
    for (int32_t p = 0; p < partitions; ++p) owner[p] = count - 1;
}

static void by_id(void *u, int32_t partitions, const char *const *ids, int32_t count,
                  int32_t *owner) {
    (void)u;
    int32_t order[1024];
    if (count > 1024) count = 1024;
    for (int32_t i = 0; i < count; ++i) /* insertion sort of the indices by id */
        for (int32_t j = (order[i] = i); j > 0 && strcmp(ids[order[j - 1]], ids[order[j]]) > 0;
             --j) {
            int32_t t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    for (int32_t p = 0; p < partitions; ++p) owner[p] = order[p % count];
}

static void none(void *u, int32_t partitions, const char *const *ids, int32_t count,
                 int32_t *owner) {
    (void)u, (void)ids;
    for (int32_t p = 0; p < partitions; ++p) owner[p] = count; /* out of range: unowned */
}

/* ---- verbs ----------------------------------------------------------------------------------- */

#define S(name) req_str(r, name)
#define REFUSE(why)             \
    do {                        \
        testee_error(out, why); \
        return;                 \
    } while (0)
#define I(name, dflt) req_int(r, name, dflt)
#define HAS(name) (req_field(r, name) != NULL)

/* The payload=/key=/header= runs of a request as records (headers point into `headers`). */
static size_t records(request *r, mq_record **recs, mq_header **headers) {
    size_t n = 0, h = 0;
    for (size_t i = 0; i < r->count; ++i) {
        n += strcmp(r->fields[i].name, "payload") == 0;
        h += strcmp(r->fields[i].name, "header") == 0;
    }
    *recs = calloc(n ? n : 1, sizeof **recs);
    *headers = calloc(h ? h : 1, sizeof **headers);
    mq_record *rec = *recs - 1;
    mq_header *hdr = *headers;
    for (size_t i = 0; i < r->count; ++i) {
        field *f = &r->fields[i];
        if (strcmp(f->name, "payload") == 0) {
            ++rec;
            rec->payload = field_bytes(f, &rec->payload_len);
        } else if (strcmp(f->name, "key") == 0) {
            rec->key = field_bytes(f, &rec->key_len);
        } else if (strcmp(f->name, "header") == 0) {
            field_pair(f, (const char **)&hdr->name, &hdr->name_len, (const char **)&hdr->value,
                       &hdr->value_len);
            if (!rec->headers) rec->headers = hdr;
            ++rec->header_count;
            ++hdr;
        } else if (strcmp(f->name, "delay_ms") == 0) {
            rec->delay_ms = strtoll(f->value, NULL, 10);
        }
    }
    return n;
}

/* mq_topic_publish_batch, or mq_publisher_publish_batch through h. */
static mq_status publish_records(request *r, opened *h, const mq_record *recs, size_t n,
                                 mq_cancel *cancel, mq_publish_result *res, size_t *published) {
    if (h)
        return mq_publisher_publish_batch(h->p, recs, sizeof *recs, n, I("wait", 0), cancel, res,
                                          sizeof *res, published);
    return mq_topic_publish_batch(broker, S("topic"), recs, sizeof *recs, n, I("wait", 0), cancel,
                                  res, sizeof *res, published);
}

static void publish(request *r, FILE *out, mq_cancel *cancel, int batch) {
    opened *h = NULL;
    if (HAS("publisher") && !(h = find(r, "publisher", PUBLISHER))) REFUSE("no such publisher");
    mq_record *recs;
    mq_header *headers;
    size_t n = records(r, &recs, &headers);
    if (!batch && recs[0].delay_ms) {
        /* A delayed single message is a batch of one: mq_topic_publish has no delay. */
        mq_publish_result res = {-1, -1};
        mq_status st = publish_records(r, h, recs, 1, cancel, &res, NULL);
        status(out, st);
        if (st == MQ_OK)
            fprintf(out, " partition=%" PRId32 " offset=%" PRId64, res.partition, res.offset);
    } else if (!batch) {
        int32_t partition = -1;
        int64_t offset = -1;
        const mq_record *x = &recs[0];
        mq_status st = h ? mq_publisher_publish(h->p, x->key, x->key_len, x->payload,
                                                x->payload_len, x->headers, x->header_count,
                                                I("wait", 0), cancel, &partition, &offset)
                         : mq_topic_publish(broker, S("topic"), x->key, x->key_len, x->payload,
                                            x->payload_len, x->headers, x->header_count,
                                            I("wait", 0), cancel, &partition, &offset);
        status(out, st);
        if (st == MQ_OK) fprintf(out, " partition=%" PRId32 " offset=%" PRId64, partition, offset);
    } else {
        mq_publish_result *res = calloc(n ? n : 1, sizeof *res);
        for (size_t i = 0; i < n; ++i) res[i] = (mq_publish_result){INT32_MIN, INT64_MIN};
        size_t published = SIZE_MAX;
        mq_status st = publish_records(r, h, recs, n, cancel, res, &published);
        status(out, st);
        if (published != SIZE_MAX) fprintf(out, " published=%zu", published);
        int written = 1; /* the library writes every result or none */
        for (size_t i = 0; i < n; ++i) written &= res[i].partition != INT32_MIN;
        for (size_t i = 0; written && i < n; ++i)
            fprintf(out, " result=%" PRId32 ":%" PRId64, res[i].partition, res[i].offset);
        free(res);
    }
    free(recs);
    free(headers);
}

static void poll_messages(request *r, FILE *out, mq_cancel *cancel, member *mb) {
    size_t max = (size_t)I("max", 10), count = SIZE_MAX;
    mq_message *msgs = calloc(max ? max : 1, sizeof *msgs);
    int ack = strstr(r->verb, "ack_poll") != NULL; /* ack_poll, member_ack_poll */
    opened *h = NULL;
    if (HAS("cursor") && !(h = find(r, "cursor", CURSOR))) {
        free(msgs);
        REFUSE("no such cursor");
    }
    mq_status st;
    if (h && ack)
        st = mq_cursor_ack_poll(h->c, I("offset", 0), msgs, sizeof *msgs, max, I("wait", 0), cancel,
                                &count);
    else if (h) st = mq_cursor_poll(h->c, msgs, sizeof *msgs, max, I("wait", 0), cancel, &count);
    else if (mb && ack)
        st = mq_member_ack_poll(mb->m, (int32_t)I("partition", 0), I("offset", 0), msgs,
                                sizeof *msgs, max, I("wait", 0), cancel, &count);
    else if (mb) st = mq_member_poll(mb->m, msgs, sizeof *msgs, max, I("wait", 0), cancel, &count);
    else if (ack)
        st = mq_group_ack_poll(broker, S("topic"), S("group"), (int32_t)I("partition", 0),
                               I("offset", 0), msgs, sizeof *msgs, max, I("wait", 0), cancel,
                               &count);
    else
        st = mq_group_poll(broker, S("topic"), S("group"), (int32_t)I("partition", 0), msgs,
                           sizeof *msgs, max, I("wait", 0), cancel, &count);
    status(out, st);
    fprintf(out, " count=%zu", count);
    for (size_t i = 0; i < count && i < max; ++i) put_message(out, &msgs[i]);
    free(msgs);
}

/* topic_list, group_list and partition_describe fill a buffer snprintf-style: ask the size,
 * then fetch. A text that breaks that contract is the testee's error to report. */
static mq_status text_call(request *r, char *buf, size_t cap, size_t *needed) {
    if (strcmp(r->verb, "topic_list") == 0) return mq_topic_list(broker, buf, cap, needed);
    if (strcmp(r->verb, "group_list") == 0)
        return mq_group_list(broker, S("topic"), buf, cap, needed);
    return mq_partition_describe(broker, S("topic"), (int32_t)I("partition", 0), buf, cap, needed);
}

static void text(request *r, FILE *out) {
    size_t needed = 0, again = 0;
    mq_status st = text_call(r, NULL, 0, &needed);
    char *buf = malloc(needed ? needed : 1);
    if (st == MQ_OK && needed) st = text_call(r, buf, needed, &again);
    if (st != MQ_OK) {
        status(out, st);
    } else if (!needed || again != needed || buf[needed - 1] || strlen(buf) != needed - 1) {
        testee_error(out, "the text does not fill the size the library asked for");
    } else if (strcmp(r->verb, "partition_describe") == 0) {
        status(out, st);
        put_bytes(out, "text", buf, needed - 1);
    } else {
        status(out, st);
        for (char *name = buf, *nl; (nl = strchr(name, '\n')); name = nl + 1)
            put_bytes(out, "name", name, (size_t)(nl - name));
    }
    free(buf);
}

static void subscription_open(request *r, FILE *out) {
    push *p = calloc(1, sizeof *p);
    pthread_mutex_init(&p->mu, NULL);
    p->calls = open_memstream(&p->calls_buf, &p->calls_len);
    request_parse(&p->req, strdup(r->text)); /* the uses point into this copy */
    p->fails = calloc(p->req.count, sizeof *p->fails);
    p->extends = calloc(p->req.count, sizeof *p->extends);
    for (size_t i = 0; i < p->req.count; ++i) {
        field *f = &p->req.fields[i];
        int fail = strcmp(f->name, "fail") == 0, extend = strcmp(f->name, "extend") == 0;
        use *u = fail ? &p->fails[p->fail_count++] : extend ? &p->extends[p->extend_count++] : NULL;
        if (u) u->payload = field_bytes(f, &u->len), u->left = 1;
    }
    p->has_delay = HAS("nack_delay_ms");
    p->delay_ms = I("nack_delay_ms", 0);
    mq_subscription_options o;
    mq_subscription_options_init(&o, sizeof o);
    o.prefetch = (int32_t)I("prefetch", o.prefetch);
    int32_t parts[256];
    field *list = req_field(r, "partitions");
    if (list) {
        o.partitions = parts;
        for (char *s = list->value; *s && o.partition_count < 256; s += *s == ',')
            parts[o.partition_count++] = (int32_t)strtol(s, &s, 10);
    }
    add(r, "subscription", PUSH, p);
    mq_status st = mq_subscription_open(broker, S("topic"), S("group"), &o, &scripted_handler, p,
                                        &count_free, &p->sub);
    status(out, st);
    fprintf(out, " frees=%d", atomic_load(&p->frees));
    p->open = st == MQ_OK;
}

static void member_join(request *r, FILE *out) {
    member *mb = calloc(1, sizeof *mb);
    pthread_mutex_init(&mb->mu, NULL);
    mb->rebalances = open_memstream(&mb->rebalances_buf, &mb->rebalances_len);
    mq_member_options o;
    mq_member_options_init(&o, sizeof o);
    o.member_id = S("id");
    o.session_timeout_ms = I("session_timeout_ms", o.session_timeout_ms);
    const char *a = HAS("assignor") ? S("assignor") : "round_robin";
    o.assignor = strcmp(a, "all_to_last") == 0 ? all_to_last
                 : strcmp(a, "by_id") == 0     ? by_id
                 : strcmp(a, "none") == 0      ? none
                                               : NULL;
    o.on_rebalance = &record_rebalance;
    o.on_rebalance_user = mb;
    add(r, "member", MEMBER, mb);
    mq_status st = mq_member_join(broker, S("topic"), S("group"), &o, &mb->m);
    status(out, st);
    if (st == MQ_OK) put_bytes(out, "id", mq_member_id(mb->m), strlen(mq_member_id(mb->m)));
    mb->open = st == MQ_OK;
}

/* Prints what a memstream recorded, behind "MQ_OK". */
static void recorded(FILE *out, pthread_mutex_t *mu, FILE *stream, char **buf, size_t *len) {
    pthread_mutex_lock(mu);
    fflush(stream);
    fprintf(out, "MQ_OK%.*s", (int)*len, *buf);
    pthread_mutex_unlock(mu);
}

static void end(FILE *out) {
    if (broker) mq_broker_close(broker); /* wakes the background calls still waiting */
    int good = 1;
    for (size_t i = 0; i < name_count; ++i) {
        if (names[i].kind == BACKGROUND) {
            background *bg = names[i].obj;
            /* An *_async call has completed: mq_broker_close returned after its done. */
            if (bg->threaded) pthread_join(bg->thread, NULL);
            if (!atomic_load(&bg->done)) good = 0;
            mq_cancel_free(bg->cancel);
            bg->cancel = NULL;
        } else if (names[i].kind == PUSH && ((push *)names[i].obj)->open) {
            good &= mq_subscription_close(((push *)names[i].obj)->sub) == MQ_OK;
            ((push *)names[i].obj)->open = 0;
        }
    }
    for (size_t i = 0; i < name_count; ++i)
        if (names[i].kind == MEMBER && ((member *)names[i].obj)->open) {
            good &= mq_member_close(((member *)names[i].obj)->m) == MQ_OK;
            ((member *)names[i].obj)->open = 0;
        }
    mq_broker_free(broker);
    broker = NULL;
    /* After the broker: a handle outlives it (mq.h, "handles"). */
    for (size_t i = 0; i < name_count; ++i) {
        opened *h = names[i].kind == PUBLISHER || names[i].kind == CURSOR ? names[i].obj : NULL;
        if (h && h->open) {
            mq_cursor_close(h->c);
            mq_publisher_close(h->p);
            h->open = 0;
        }
    }
    kafka_cleanup();
    if (good) fputs("MQ_OK", out);
    else testee_error(out, "closing what the scenario left open failed");
}

static void run(request *r, FILE *out, mq_cancel *cancel) {
    const char *v = r->verb;
    push *p = NULL;
    member *mb = NULL;
    background *bg = NULL;
    if (strncmp(v, "member_", 7) == 0 && strcmp(v, "member_join") != 0) {
        if (!(mb = find(r, "member", MEMBER))) REFUSE("no such member");
    } else if (strcmp(v, "subscription_close") == 0 || strcmp(v, "calls") == 0 ||
               strcmp(v, "frees") == 0) {
        if (!(p = find(r, "subscription", PUSH))) REFUSE("no such subscription");
    } else if (strcmp(v, "rebalances") == 0) {
        if (!(mb = find(r, "member", MEMBER))) REFUSE("no such member");
    } else if (strcmp(v, "await") == 0 || strcmp(v, "cancel") == 0) {
        if (!(bg = find(r, "call", BACKGROUND))) REFUSE("no such call");
    }
    if (strcmp(v, "hello") == 0) {
        fputs(I("protocol", 0) == 1 ? "MQ_OK protocol=1" : "testee_error detail=protocol%201", out);
    } else if (strcmp(v, "broker_new") == 0) {
        mq_broker_options o;
        mq_broker_options_init(&o, sizeof o);
        o.clock = &manual_clock;
        if ((o.kafka_bootstrap = kafka_bootstrap())) o.clock = NULL;
        o.max_message_bytes = (size_t)I("max_message_bytes", (int64_t)o.max_message_bytes);
        status(out, mq_broker_new(&o, &broker));
    } else if (strcmp(v, "clock") == 0) {
        if (kafka_bootstrap()) {
            testee_error(out, "no manual clock on the Kafka backend");
        } else {
            atomic_fetch_add(&now_ns, I("advance_ns", 0));
            fputs("MQ_OK", out);
        }
    } else if (strcmp(v, "topic_create") == 0) {
        mq_topic_config c;
        mq_topic_config_init(&c, sizeof c);
        c.partitions = (int32_t)I("partitions", c.partitions);
        c.capacity = I("capacity", c.capacity);
        c.max_bytes = I("max_bytes", c.max_bytes);
        c.ack_timeout_ms = I("ack_timeout_ms", c.ack_timeout_ms);
        c.max_age_ms = I("max_age_ms", c.max_age_ms);
        if (HAS("retention"))
            c.retention =
                strcmp(S("retention"), "bounded") == 0 ? MQ_RETAIN_BOUNDED : MQ_RETAIN_UNTIL_ACKED;
        const mq_status st = mq_topic_create(broker, S("topic"), &c);
        if (st == MQ_OK && kafka_bootstrap() && kafka_topic_count < 64)
            kafka_topics[kafka_topic_count++] = strdup(S("topic"));
        status(out, st);
    } else if (strcmp(v, "subscribe") == 0) {
        mq_group_options o;
        mq_group_options_init(&o, sizeof o);
        if (HAS("start"))
            o.start = strcmp(S("start"), "earliest") == 0 ? MQ_START_EARLIEST : MQ_START_LATEST;
        o.max_deliveries = (uint32_t)I("max_deliveries", 0);
        o.dead_letter_topic = S("dead_letter_topic");
        if (HAS("share"))
            o.share = strcmp(S("share"), "all") == 0   ? MQ_SHARE_ALL
                      : strcmp(S("share"), "key") == 0 ? MQ_SHARE_KEY
                                                       : MQ_SHARE_NONE;
        o.max_acquired = (uint32_t)I("max_acquired", 0);
        status(out, mq_group_subscribe(broker, S("topic"), S("group"), &o));
    } else if (strcmp(v, "unsubscribe") == 0) {
        status(out, mq_group_unsubscribe(broker, S("topic"), S("group")));
    } else if (strcmp(v, "topic_delete") == 0) {
        status(out, mq_topic_delete(broker, S("topic")));
    } else if (strcmp(v, "broker_close") == 0) {
        status(out, mq_broker_close(broker));
    } else if (strcmp(v, "publish") == 0 || strcmp(v, "publish_batch") == 0) {
        publish(r, out, cancel, v[7] == '_');
    } else if (strcmp(v, "poll") == 0 || strcmp(v, "member_poll") == 0 ||
               strcmp(v, "ack_poll") == 0 || strcmp(v, "member_ack_poll") == 0) {
        poll_messages(r, out, cancel, mb);
    } else if (strcmp(v, "ack") == 0 && HAS("cursor")) {
        opened *h = find(r, "cursor", CURSOR);
        if (!h) REFUSE("no such cursor");
        status(out, mq_cursor_ack(h->c, I("offset", 0)));
    } else if (strcmp(v, "ack") == 0) {
        status(out, mq_group_ack(broker, S("topic"), S("group"), (int32_t)I("partition", 0),
                                 I("offset", 0)));
    } else if (strcmp(v, "publisher_open") == 0 || strcmp(v, "cursor_open") == 0) {
        opened *h = calloc(1, sizeof *h);
        const int cursor = v[0] == 'c';
        add(r, cursor ? "cursor" : "publisher", cursor ? CURSOR : PUBLISHER, h);
        mq_status st = cursor ? mq_cursor_open(broker, S("topic"), S("group"),
                                               (int32_t)I("partition", 0), &h->c)
                              : mq_publisher_open(broker, S("topic"), &h->p);
        status(out, st);
        h->open = st == MQ_OK;
    } else if (strcmp(v, "publisher_close") == 0 || strcmp(v, "cursor_close") == 0) {
        const int cursor = v[0] == 'c';
        opened *h = find(r, cursor ? "cursor" : "publisher", cursor ? CURSOR : PUBLISHER);
        if (!h || !h->open) REFUSE("no such open handle");
        if (cursor) mq_cursor_close(h->c);
        else mq_publisher_close(h->p);
        h->open = 0;
        fputs("MQ_OK", out);
    } else if (strcmp(v, "nack") == 0) {
        status(out, mq_group_nack(broker, S("topic"), S("group"), (int32_t)I("partition", 0),
                                  I("delay_ms", 0)));
    } else if (strcmp(v, "extend_lease") == 0) {
        status(out,
               mq_group_extend_lease(broker, S("topic"), S("group"), (int32_t)I("partition", 0)));
    } else if (strcmp(v, "settle") == 0) {
        const char *a = S("action");
        int32_t action = strcmp(a, "accept") == 0    ? MQ_SETTLE_ACCEPT
                         : strcmp(a, "release") == 0 ? MQ_SETTLE_RELEASE
                         : strcmp(a, "reject") == 0  ? MQ_SETTLE_REJECT
                                                     : MQ_SETTLE_RENEW;
        status(out, mq_share_settle(broker, S("topic"), S("group"), (int32_t)I("partition", 0),
                                    I("offset", 0), (uint32_t)I("delivery_count", 0), action,
                                    I("delay_ms", 0)));
    } else if (strcmp(v, "seek") == 0) {
        const char *to = S("offset");
        int64_t offset = strcmp(to, "earliest") == 0 ? MQ_OFFSET_EARLIEST
                         : strcmp(to, "end") == 0    ? MQ_OFFSET_END
                                                     : strtoll(to, NULL, 10);
        status(out,
               mq_group_seek(broker, S("topic"), S("group"), (int32_t)I("partition", 0), offset));
    } else if (strcmp(v, "topic_list") == 0 || strcmp(v, "group_list") == 0 ||
               strcmp(v, "partition_describe") == 0) {
        text(r, out);
    } else if (strcmp(v, "topic_get_info") == 0) {
        mq_topic_info t;
        mq_status st = mq_topic_get_info(broker, S("topic"), &t, sizeof t);
        status(out, st);
        if (st == MQ_OK)
            fprintf(out,
                    " partitions=%" PRId32 " capacity=%" PRId64 " max_bytes=%" PRId64
                    " ack_timeout_ms=%" PRId64 " retention=%s max_age_ms=%" PRId64,
                    t.partitions, t.capacity, t.max_bytes, t.ack_timeout_ms,
                    t.retention == MQ_RETAIN_BOUNDED ? "bounded" : "until_acked", t.max_age_ms);
    } else if (strcmp(v, "partition_get_info") == 0) {
        mq_partition_info i;
        mq_status st =
            mq_partition_get_info(broker, S("topic"), (int32_t)I("partition", 0), &i, sizeof i);
        status(out, st);
        if (st == MQ_OK)
            fprintf(out,
                    " start=%" PRId64 " end=%" PRId64 " backlog=%" PRId64 " capacity=%" PRId64
                    " retained_bytes=%" PRId64 " max_bytes=%" PRId64 " producer_waits=%" PRId64
                    " max_backlog=%" PRId64 " dropped=%" PRId64 " oldest_timestamp_ns=%" PRId64
                    " oldest_age_ns=%" PRId64,
                    i.start, i.end, i.backlog, i.capacity, i.retained_bytes, i.max_bytes,
                    i.producer_waits, i.max_backlog, i.dropped, i.oldest_timestamp_ns,
                    i.oldest_age_ns);
    } else if (strcmp(v, "group_get_info") == 0) {
        mq_group_info g;
        mq_status st = mq_group_get_info(broker, S("topic"), S("group"), (int32_t)I("partition", 0),
                                         &g, sizeof g);
        status(out, st);
        if (st == MQ_OK)
            fprintf(out,
                    " committed=%" PRId64 " next=%" PRId64 " lag=%" PRId64 " in_flight=%" PRId64
                    " lost=%" PRId64 " dead_lettered=%" PRId64 " next_age_ns=%" PRId64
                    " paused_until_ns=%" PRId64 " acquired=%" PRId64 " available=%" PRId64
                    " delayed=%" PRId64 " rejected=%" PRId64 " oldest_unsettled_age_ns=%" PRId64
                    " delivered=%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64,
                    g.committed, g.next, g.lag, g.in_flight, g.lost, g.dead_lettered, g.next_age_ns,
                    g.paused_until_ns, g.acquired, g.available, g.delayed, g.rejected,
                    g.oldest_unsettled_age_ns, g.delivered_once, g.delivered_twice,
                    g.delivered_thrice, g.delivered_more);
    } else if (strcmp(v, "key_murmur2") == 0) {
        size_t len;
        const char *key = field_bytes(req_field(r, "key"), &len);
        fprintf(out, "MQ_OK hash=%" PRId32, mq_key_murmur2(key, len));
    } else if (strcmp(v, "key_partition") == 0) {
        size_t len;
        const char *key = field_bytes(req_field(r, "key"), &len);
        int32_t partition = -1;
        mq_status st = mq_key_partition(key, len, (int32_t)I("partitions", 0), &partition);
        status(out, st);
        if (st == MQ_OK) fprintf(out, " partition=%" PRId32, partition);
    } else if (strcmp(v, "assignment_round_robin") == 0) {
        int32_t owned[4096];
        size_t count = SIZE_MAX;
        mq_status st =
            mq_assignment_round_robin((int32_t)I("partitions", 0), (int32_t)I("members", 0),
                                      (int32_t)I("member", 0), owned, 4096, &count);
        if (st == MQ_OK && count > 4096) REFUSE("over 4096 partitions");
        status(out, st);
        for (size_t i = 0; st == MQ_OK && i < count; ++i)
            fprintf(out, "%s%" PRId32, i ? "," : " owned=", owned[i]);
        if (st == MQ_OK && count == 0) fputs(" owned=", out);
    } else if (strcmp(v, "subscription_open") == 0) {
        subscription_open(r, out);
    } else if (strcmp(v, "subscription_close") == 0) {
        mq_status st = mq_subscription_close(p->sub);
        status(out, st);
        if (st == MQ_OK) p->open = 0;
        fprintf(out, " frees=%d", atomic_load(&p->frees));
    } else if (strcmp(v, "calls") == 0) {
        recorded(out, &p->mu, p->calls, &p->calls_buf, &p->calls_len);
    } else if (strcmp(v, "frees") == 0) {
        fprintf(out, "MQ_OK frees=%d", atomic_load(&p->frees));
    } else if (strcmp(v, "handler_extend_lease") == 0) {
        status(out, mq_handler_extend_lease());
    } else if (strcmp(v, "handler_set_nack_delay") == 0) {
        status(out, mq_handler_set_nack_delay(I("delay_ms", 0)));
    } else if (strcmp(v, "member_join") == 0) {
        member_join(r, out);
    } else if (strcmp(v, "member_close") == 0) {
        mq_status st = mq_member_close(mb->m);
        status(out, st);
        if (st == MQ_OK) mb->open = 0;
    } else if (strcmp(v, "member_get_assignment") == 0) {
        int32_t parts[4096];
        int64_t generation = -1;
        size_t count = SIZE_MAX;
        mq_status st = mq_member_get_assignment(mb->m, &generation, parts, 4096, &count);
        if (st == MQ_OK && count > 4096) REFUSE("over 4096 partitions");
        status(out, st);
        if (st == MQ_OK) fprintf(out, " generation=%" PRId64 " partitions=", generation);
        for (size_t i = 0; st == MQ_OK && i < count; ++i)
            fprintf(out, "%s%" PRId32, i ? "," : "", parts[i]);
    } else if (strcmp(v, "member_ack") == 0) {
        status(out, mq_member_ack(mb->m, (int32_t)I("partition", 0), I("offset", 0)));
    } else if (strcmp(v, "member_nack") == 0) {
        status(out, mq_member_nack(mb->m, (int32_t)I("partition", 0), I("delay_ms", 0)));
    } else if (strcmp(v, "member_extend_lease") == 0) {
        status(out, mq_member_extend_lease(mb->m, (int32_t)I("partition", 0)));
    } else if (strcmp(v, "rebalances") == 0) {
        recorded(out, &mb->mu, mb->rebalances, &mb->rebalances_buf, &mb->rebalances_len);
    } else if (strcmp(v, "await") == 0) {
        if (atomic_load(&bg->done)) fprintf(out, "%.*s", (int)bg->reply_len, bg->reply);
        else fputs("pending", out);
    } else if (strcmp(v, "cancel") == 0) {
        mq_cancel_trigger(bg->cancel);
        fputs("MQ_OK", out);
    } else if (strcmp(v, "end") == 0) {
        end(out);
    } else {
        testee_error(out, "unknown verb");
    }
}

/* ---- background calls and the main loop ---------------------------------------------------- */

static void *background_main(void *arg) {
    background *bg = arg;
    FILE *out = open_memstream(&bg->reply, &bg->reply_len);
    run(&bg->req, out, bg->cancel);
    fclose(out);
    atomic_store(&bg->done, 1);
    return NULL;
}

static void start_background(request *r, FILE *out) {
    background *bg = calloc(1, sizeof *bg);
    request_parse(&bg->req, strdup(r->text));
    if (mq_cancel_new(&bg->cancel) != MQ_OK || !add(r, "async", BACKGROUND, bg))
        REFUSE("cannot start the call");
    bg->threaded = 1;
    if (pthread_create(&bg->thread, NULL, &background_main, bg) != 0)
        REFUSE("cannot start a thread");
    fputs("MQ_OK", out);
}

/* start=NAME: the call through its *_async form. Its reply is written where it ends: on this
 * thread when it need not wait, else in `done` on the broker's completer thread (where
 * mq_last_error() holds its detail). Either way exactly once. */
static void async_reply(background *bg, mq_status st) {
    FILE *out = open_memstream(&bg->reply, &bg->reply_len);
    request *r = &bg->req;
    status(out, st);
    if (strcmp(r->verb, "publish") == 0) {
        if (st == MQ_OK)
            fprintf(out, " partition=%" PRId32 " offset=%" PRId64, bg->partition, bg->offset);
    } else if (strcmp(r->verb, "publish_batch") == 0) {
        if (bg->published != SIZE_MAX) fprintf(out, " published=%zu", bg->published);
        int written = 1;
        for (size_t i = 0; i < bg->n; ++i) written &= bg->results[i].partition != INT32_MIN;
        for (size_t i = 0; written && i < bg->n; ++i)
            fprintf(out, " result=%" PRId32 ":%" PRId64, bg->results[i].partition,
                    bg->results[i].offset);
    } else {
        fprintf(out, " count=%zu", bg->count);
        for (size_t i = 0; i < bg->count && i < bg->max; ++i) put_message(out, &bg->msgs[i]);
    }
    fclose(out);
    free(bg->recs);
    free(bg->headers);
    free(bg->results);
    free(bg->msgs);
    atomic_store(&bg->done, 1);
}

static void async_done(void *user, mq_status st) { async_reply(user, st); }

static void start_async(request *r, FILE *out) {
    const char *v = r->verb;
    if (strcmp(v, "publish") != 0 && strcmp(v, "publish_batch") != 0 && strcmp(v, "poll") != 0 &&
        strcmp(v, "ack_poll") != 0 && strcmp(v, "member_poll") != 0 &&
        strcmp(v, "member_ack_poll") != 0)
        REFUSE("no asynchronous form of that call");
    member *mb = NULL;
    if (strncmp(v, "member_", 7) == 0 && !(mb = find(r, "member", MEMBER)))
        REFUSE("no such member");
    background *bg = calloc(1, sizeof *bg);
    request_parse(&bg->req, strdup(r->text));
    if (mq_cancel_new(&bg->cancel) != MQ_OK || !add(r, "start", BACKGROUND, bg))
        REFUSE("cannot start the call");
    r = &bg->req; /* the call's strings must outlive it: S() reads this copy */
    mq_status st;
    if (strcmp(v, "publish") == 0 || strcmp(v, "publish_batch") == 0) {
        bg->n = records(r, &bg->recs, &bg->headers);
        bg->partition = -1;
        bg->offset = -1;
        bg->published = SIZE_MAX;
        if (v[7] != '_') {
            const mq_record *rec = &bg->recs[0];
            st = mq_topic_publish_async(broker, S("topic"), rec->key, rec->key_len, rec->payload,
                                        rec->payload_len, rec->headers, rec->header_count,
                                        I("wait", 0), bg->cancel, &bg->partition, &bg->offset,
                                        &async_done, bg);
        } else {
            bg->results = calloc(bg->n ? bg->n : 1, sizeof *bg->results);
            for (size_t i = 0; i < bg->n; ++i)
                bg->results[i] = (mq_publish_result){INT32_MIN, INT64_MIN};
            st = mq_topic_publish_batch_async(broker, S("topic"), bg->recs, sizeof *bg->recs, bg->n,
                                              I("wait", 0), bg->cancel, bg->results,
                                              sizeof *bg->results, &bg->published, &async_done, bg);
        }
    } else {
        bg->max = (size_t)I("max", 10);
        bg->count = SIZE_MAX;
        bg->msgs = calloc(bg->max ? bg->max : 1, sizeof *bg->msgs);
        if (mb && strcmp(v, "member_ack_poll") == 0)
            st = mq_member_ack_poll_async(mb->m, (int32_t)I("partition", 0), I("offset", 0),
                                          bg->msgs, sizeof *bg->msgs, bg->max, I("wait", 0),
                                          bg->cancel, &bg->count, &async_done, bg);
        else if (mb)
            st = mq_member_poll_async(mb->m, bg->msgs, sizeof *bg->msgs, bg->max, I("wait", 0),
                                      bg->cancel, &bg->count, &async_done, bg);
        else if (strcmp(v, "ack_poll") == 0)
            st = mq_group_ack_poll_async(broker, S("topic"), S("group"), (int32_t)I("partition", 0),
                                         I("offset", 0), bg->msgs, sizeof *bg->msgs, bg->max,
                                         I("wait", 0), bg->cancel, &bg->count, &async_done, bg);
        else
            st = mq_group_poll_async(broker, S("topic"), S("group"), (int32_t)I("partition", 0),
                                     bg->msgs, sizeof *bg->msgs, bg->max, I("wait", 0), bg->cancel,
                                     &bg->count, &async_done, bg);
    }
    /* MQ_PENDING: `done` writes the reply (perhaps already has); bg is its own from here. */
    if (st != MQ_PENDING) async_reply(bg, st);
    fputs("MQ_OK", out);
}

int main(void) {
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    while ((len = getline(&line, &cap, stdin)) > 0) {
        if (line[len - 1] == '\n') line[--len] = '\0';
        request r;
        char *reply = NULL;
        size_t reply_len = 0;
        FILE *out = open_memstream(&reply, &reply_len);
        if (request_parse(&r, strdup(line)) != 0) testee_error(out, "not a request line");
        else if (req_field(&r, "async")) start_background(&r, out);
        else if (req_field(&r, "start") && strcmp(r.verb, "subscribe") != 0)
            start_async(&r, out); /* subscribe's start= is where the group starts */
        else run(&r, out, NULL);
        fclose(out);
        printf("%s\n", reply);
        fflush(stdout);
        free(reply);
        request_free(&r);
    }
    free(line);
    return 0;
}
