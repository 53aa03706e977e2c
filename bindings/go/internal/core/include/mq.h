/*
 * mq.h — the C ABI of mq, an in-process, Kafka-shaped publish-subscribe log.
 *
 * Promises of this header
 * -----------------------
 * - Status values and enum constants never change and are never reused.
 * - Function signatures, struct layouts and constant values of 1.x never change: a program
 *   built against 1.m runs against any library 1.n with n >= m (docs/ABI.md).
 * - Structs grow only by appending fields, and the library always learns the caller's size:
 *   - config structs start with a `size` field, filled by the matching `*_init` function
 *     (pass `sizeof` of the struct as you compiled it); the library reads only the fields
 *     that fit and uses defaults for the rest;
 *   - info structs (filled by the library) are passed with their size (`sizeof *out`); the
 *     library writes only what fits;
 *   - arrays of mq_record, mq_message and mq_publish_result are passed with their element size
 *     (`sizeof(mq_message)`, ...); the library strides by it and reads or writes only the
 *     fields that fit. A size below the 1.0 struct's is MQ_ERR_INVALID.
 *   mq_header is frozen: it never gains a field.
 * - Lifetimes: every handle (broker, subscription, member, publisher, cursor, cancel token)
 *   stays valid until its own release (mq_broker_free, mq_subscription_close, mq_member_close,
 *   mq_publisher_close, mq_cursor_close, mq_cancel_free), and handles may be released in any
 *   order, from any thread but the ones named at each release function. Releasing the broker
 *   first closes it; the handles made from it keep working as closed handles (their calls
 *   return MQ_CLOSED) until they are released, and the
 *   broker's memory (with every message view) goes when the last of them is (SQLite's
 *   sqlite3_close_v2 rule, what garbage-collected languages need).
 * - Churn does not grow memory: what mq_group_unsubscribe and mq_topic_delete remove (groups,
 *   topics, their messages) is freed once no call that could still see it is running and no
 *   member or push subscription holds it (1.1; 1.0 kept every group until the broker went).
 *   A call asleep in a wait (a poll or publish, even with MQ_WAIT_FOREVER) delays none of it
 *   (1.2): it keeps only its own topic and group until it returns.
 * - Every function is thread-safe on one broker. Different partitions never contend on one lock.
 * - No C++ exception crosses this boundary. Every failure is an `mq_status` plus a thread-local
 *   detail message (`mq_last_error()`). A failed call changes no state unless its documentation
 *   says otherwise (only batch publish can partially succeed).
 * - When several statuses apply, the first in this order is returned: MQ_ERR_INVALID for a
 *   NULL handle; MQ_CLOSED; then the arguments left to right (topic: MQ_ERR_INVALID for an
 *   illegal name, then MQ_ERR_NO_TOPIC; group: likewise, then MQ_ERR_NO_GROUP; partition:
 *   MQ_ERR_PARTITION; then the other arguments, each MQ_ERR_INVALID or MQ_ERR_TOO_LARGE); then
 *   the state of the partition (MQ_ERR_FENCED, MQ_REBALANCED, MQ_ERR_NOT_IN_FLIGHT, ...) and
 *   last the outcome of waiting (MQ_FULL, MQ_TIMEOUT, MQ_CANCELLED).
 * - Waits are in milliseconds: `MQ_WAIT_FOREVER` (-1) waits without limit, `MQ_NO_WAIT` (0) does
 *   not block, 1 to 2^40 waits that long (the duration rule below). Any other value is
 *   MQ_ERR_INVALID. Every blocking call wakes on `mq_broker_close` (MQ_CLOSED) and on its
 *   `mq_cancel` token (MQ_CANCELLED).
 * - The duration rule: every duration, whether an argument or an option field (waits, ack and
 *   session timeouts, nack delays, max age, spin), is an int64_t count of milliseconds (of
 *   nanoseconds where its name ends in _ns) from 0 to 2^40 ms (1099511627776 ms, about 35
 *   years), plus MQ_WAIT_FOREVER for waits. Where a parameter's documentation narrows the range
 *   (ack_timeout_ms and session_timeout_ms are at least 1, spin_ns at most 10^9), that range
 *   applies. A value outside is MQ_ERR_INVALID, and mq_last_error() names the parameter and its
 *   range. Each parameter below says "a duration" where this rule applies.
 * - Names (topics, groups, members) follow Kafka's topic rule (its Topic.validate): 1 to 249
 *   characters of `[a-zA-Z0-9._-]`, NUL-terminated, and neither "." nor "..". Any call given an
 *   illegal name returns MQ_ERR_INVALID (a legal name that does not exist: MQ_ERR_NO_TOPIC /
 *   MQ_ERR_NO_GROUP). Kafka lets group ids be any string; mq holds groups and members to the
 *   topic rule too, so every name prints, logs and compares alike. As Kafka does, creating a
 *   topic whose name equals an existing topic's once '.' and '_' are taken as the same
 *   character ("a.b" beside "a_b": Kafka's metric names cannot tell them apart) is
 *   MQ_ERR_INVALID; groups and members have no such rule.
 * - No symbol is named after a POSIX <mqueue.h> function: this header and <mqueue.h> can be
 *   included together.
 */
#ifndef MQ_H
#define MQ_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- export macro ------------------------------------------------------------------------ */
#if defined(MQ_STATIC)
#define MQ_API
#elif defined(_WIN32)
#if defined(MQ_BUILDING)
#define MQ_API __declspec(dllexport)
#else
#define MQ_API __declspec(dllimport)
#endif
#else
#define MQ_API __attribute__((visibility("default")))
#endif

/* ---- version ----------------------------------------------------------------------------- */
#define MQ_VERSION_MAJOR 1
#define MQ_VERSION_MINOR 7
#define MQ_VERSION_PATCH 0
/* major * 1000000 + minor * 1000 + patch */
#define MQ_VERSION_NUMBER (MQ_VERSION_MAJOR * 1000000 + MQ_VERSION_MINOR * 1000 + MQ_VERSION_PATCH)
#define MQ_VERSION_STRING "1.7.0"

/* The library's version at run time; compare with MQ_VERSION_NUMBER to catch header/library
 * skew (compatible when the majors match and the runtime minor is >= the compiled one). */
MQ_API int mq_version_number(void);
MQ_API const char *mq_version_string(void);

/* ---- statuses ---------------------------------------------------------------------------- */
typedef enum mq_status {
    MQ_OK = 0,
    MQ_TIMEOUT = 1,            /* poll: nothing to hand out within the wait */
    MQ_FULL = 2,               /* publish: the partition was still full when the wait ended */
    MQ_CLOSED = 3,             /* the broker is closed (or was closed during the wait) */
    MQ_CANCELLED = 4,          /* the call's mq_cancel token was triggered while it waited */
    MQ_REBALANCED = 5,         /* member call: the group's generation changed since the member
                               * last fetched its assignment; nothing was done; call
                               * mq_member_get_assignment and carry on */
    MQ_PENDING = 6,            /* since 1.4, from the *_async calls only: the call waits, and its
                               * callback will say how it ended */
    MQ_ERR_INVALID = 10,       /* NULL pointer, bad value, illegal name, bad config */
    MQ_ERR_NO_TOPIC = 11,      /* no topic of that name */
    MQ_ERR_NO_GROUP = 12,      /* no such group on that topic */
    MQ_ERR_EXISTS = 13,        /* the topic or group already exists */
    MQ_ERR_PARTITION = 14,     /* partition number out of range */
    MQ_ERR_TOO_LARGE = 15,     /* message larger than the broker maximum or the byte budget */
    MQ_ERR_NOT_IN_FLIGHT = 16, /* ack of an offset that is not in flight for that group */
    MQ_ERR_OWNED = 17,         /* a partition is owned by another live subscription of the group */
    MQ_ERR_DEADLOCK = 18,      /* a subscription was closed from inside its own handler */
    MQ_ERR_NO_MEMORY = 19,     /* allocation failed; nothing changed */
    MQ_ERR_INTERNAL = 20,      /* a bug in mq; the message says where */
    MQ_ERR_OUT_OF_RANGE = 21,  /* seek to an offset outside the retained log */
    MQ_ERR_FENCED = 22,        /* the caller does not own that partition in the group's current
                               * generation (or the member was removed); nothing was done */
    MQ_ERR_UNSUPPORTED = 23,   /* since 1.2: the call or option has no meaning on this broker's
                               * backend (see docs/KAFKA.md), or the library was built without
                               * that backend; nothing was done */
    MQ_ERR_BACKEND = 24        /* since 1.2: the Kafka cluster refused the request or did not
                               * answer in time; the message carries the cluster's words */
} mq_status;

/* A constant name for a status, e.g. "MQ_FULL"; "MQ_UNKNOWN_STATUS" for other values. */
MQ_API const char *mq_status_name(int status);

/* The detail of the last failure on the calling thread, in words a user can act on
 * (e.g. "offset 7 is not in flight for billing (nothing is)"). Never NULL; "" when no call on
 * this thread has failed. Valid until the next failing mq call on this thread.
 * Normal outcomes (MQ_TIMEOUT, MQ_FULL, MQ_CLOSED, MQ_CANCELLED) carry fixed texts.
 * Bindings: the message belongs to the OS thread that made the failing call, so read it in the
 * same native call as the failure (a Go goroutine may move to another thread between two cgo
 * calls; a JNI or cffi wrapper should copy it before returning to the managed side). A small C
 * wrapper that calls the function and, on failure, copies mq_last_error() is the safe shape. */
MQ_API const char *mq_last_error(void);

/* ---- waits and cancellation -------------------------------------------------------------- */
#define MQ_WAIT_FOREVER (-1)
#define MQ_NO_WAIT 0

/* A cancel token wakes one waiter: pass it to a blocking call, trigger it from any thread, and
 * that call returns MQ_CANCELLED as soon as it would otherwise wait (or at once if it is already
 * waiting). A call that does not need to wait completes normally, and one with MQ_NO_WAIT never
 * waits (it returns MQ_FULL / MQ_TIMEOUT as usual). The token stays triggered
 * until mq_cancel_reset. A token may be passed to one blocking call at a time. */
typedef struct mq_cancel mq_cancel;

/* Creates a token. MQ_ERR_INVALID (out NULL), MQ_ERR_NO_MEMORY. */
MQ_API mq_status mq_cancel_new(mq_cancel **out);
/* Triggers the token; safe from any thread and from signal-free async contexts such as another
 * thread's callback. NULL is ignored. */
MQ_API void mq_cancel_trigger(mq_cancel *cancel);
/* Clears a triggered token so it can be used again. NULL is ignored. */
MQ_API void mq_cancel_reset(mq_cancel *cancel);
/* 1 if triggered, else 0 (0 for NULL). */
MQ_API int mq_cancel_is_triggered(const mq_cancel *cancel);
/* Releases the token. Safe at any time, also while a call waits with it: that call keeps it
 * alive until it returns (a trigger no longer reaches it). NULL is ignored. */
MQ_API void mq_cancel_free(mq_cancel *cancel);

/* ---- broker ------------------------------------------------------------------------------ */
typedef struct mq_broker mq_broker;

/* A monotonic clock in nanoseconds. Called from any thread that publishes or polls, with
 * partition locks held: it must be fast, thread-safe, and must not call into mq. */
typedef int64_t (*mq_clock_fn)(void *user);

typedef struct mq_broker_options {
    size_t size;              /* set by mq_broker_options_init */
    mq_clock_fn clock;        /* default NULL: the system's monotonic clock */
    void *clock_user;         /* passed to clock */
    size_t max_message_bytes; /* largest key + payload + headers accepted, 1 to 2^30;
                                  * default 1 MiB (1048576) */
    /* Wait strategy of mq_group_poll, mq_member_poll and push loops: before a poll with nothing to
     * hand out blocks, it spins up to spin_ns nanoseconds watching for a change. 0 (default) blocks
     * at once. Spinning makes a waiting consumer see a publish sooner (no sleep and wake-up)
     * at the price of a busy CPU while it spins: worth it only with cores to spare.
     * A duration (top of file) of 0 to 10^9 ns (one second). */
    int64_t spin_ns;
    /* Since 1.2: the Kafka backend (docs/KAFKA.md). NULL (default): the broker is the
     * in-process log. Otherwise the bootstrap servers of a Kafka cluster ("host:port,..."), and
     * every call works on that cluster's topics, consumer groups and committed offsets instead.
     * Copied. A library built without the backend (CMake option MQ_KAFKA) refuses it with
     * MQ_ERR_UNSUPPORTED. */
    const char *kafka_bootstrap;
    /* Since 1.2: client settings passed to librdkafka as they are, "name=value" lines separated
     * by '\n' (e.g. "security.protocol=ssl\nclient.id=billing"). NULL = none. Copied.
     * Ignored without kafka_bootstrap. */
    const char *kafka_config;
} mq_broker_options;

/* Fills defaults and sets opts->size = size (pass sizeof *opts). Does nothing if opts is NULL or
 * size is smaller than the size field. */
MQ_API void mq_broker_options_init(mq_broker_options *opts, size_t size);

/* Creates a broker. opts may be NULL for defaults.
 * MQ_ERR_INVALID: out NULL, opts->size too small, max_message_bytes 0 or above 2^30 (1 GiB),
 * spin_ns below 0 or above 10^9, a kafka_config line without '=' or a setting librdkafka
 * rejects (the message names it). MQ_ERR_NO_MEMORY. With kafka_bootstrap: MQ_ERR_UNSUPPORTED
 * (built without the Kafka backend, or a clock is set: Kafka's clock is the cluster's), and
 * MQ_ERR_BACKEND when the cluster does not answer within 10 s (blocks until then). */
MQ_API mq_status mq_broker_new(const mq_broker_options *opts, mq_broker **out);

/* Closes the broker: every waiting publish and poll returns MQ_CLOSED at once, push
 * subscriptions stop calling handlers, and every later call returns MQ_CLOSED, except info,
 * describe and list calls (which keep working), mq_subscription_close and mq_member_close
 * (which release their handles as usual) and mq_broker_close itself (MQ_OK again: closing is
 * idempotent). Does not block on handlers; safe from a handler. MQ_ERR_INVALID if b is NULL. */
MQ_API mq_status mq_broker_close(mq_broker *b);

/* Releases the broker handle: closes the broker if needed and waits until no call made through
 * this handle is inside the library (calls blocked in a wait are woken by the close and
 * return MQ_CLOSED). Subscriptions and members still open stay valid (see "Lifetimes" above):
 * their handlers stop being called, their calls return MQ_CLOSED, and the broker's memory goes
 * when the last of them is released. Message views stay valid until then. From a handler or
 * callback of this broker it does not wait for that handler's own call. NULL is ignored. */
MQ_API void mq_broker_free(mq_broker *b);

/* ---- topics ------------------------------------------------------------------------------ */

/* What a topic does when a partition is full (backlog at capacity or bytes at the budget). */
typedef enum mq_retention {
    /* The slowest group holds messages; publishers wait (SPEC.md's back-pressure). */
    MQ_RETAIN_UNTIL_ACKED = 0,
    /* Publishers never wait: the oldest messages are dropped to keep the newest `capacity`
     * messages (and max_bytes). A group that falls behind the log's start skips forward; the
     * loss is reported in the `lost` field of the next message it is handed and counted in
     * mq_group_info.lost. */
    MQ_RETAIN_BOUNDED = 1
} mq_retention;

typedef struct mq_topic_config {
    size_t size;        /* set by mq_topic_config_init */
    int32_t partitions; /* 1 to 65536; default 1 */
    int64_t capacity;   /* messages retained per partition, 1 to 2^40; default 1024 */
    int64_t max_bytes;  /* key + payload + header bytes retained per partition, 0 to
                                * INT64_MAX; 0 = no budget (default) */
    /* Lease length, a duration (top of file) of 1 to 2^40 ms; default 30000. A lease starts
     * when the poll that hands messages out
     * starts. With the system clock it may last up to one clock tick longer (CLOCK_MONOTONIC_
     * COARSE's resolution, a few ms: polls read that cheaper clock), never shorter; likewise a
     * delayed nack's pause and max_age_ms. */
    int64_t ack_timeout_ms;
    int32_t retention;  /* an mq_retention; default MQ_RETAIN_UNTIL_ACKED */
    int64_t max_age_ms; /* trim messages older than this whatever the groups' cursors;
                                * a duration (top of file), 0 to 2^40 ms; 0 = no limit
                                * (default) */
} mq_topic_config;

/* Fills defaults and sets cfg->size = size (pass sizeof *cfg). */
MQ_API void mq_topic_config_init(mq_topic_config *cfg, size_t size);

/* Creates a topic. cfg may be NULL for defaults.
 * With max_age_ms, a message older than that (by the broker clock) is trimmed whatever the
 * groups' cursors; groups that had not acked it skip forward and count it as lost, as with
 * MQ_RETAIN_BOUNDED. Ages are enforced at the start of every call that touches the partition:
 * publish (single and batch), poll, member poll, ack, nack, lease extension, seek, subscribe,
 * unsubscribe, partition and group info, and describe; a publisher waiting for room wakes when
 * the oldest message expires.
 * MQ_ERR_INVALID: b or name NULL, illegal name, a name that collides with an existing topic's
 * ('.' against '_', see Names at the top), partitions < 1 or > 65536, capacity < 1 or > 2^40,
 * max_bytes < 0, ack_timeout_ms < 1 or > 2^40, max_age_ms < 0 or > 2^40, unknown retention,
 * cfg->size too small. MQ_ERR_EXISTS: the name is taken. MQ_CLOSED. MQ_ERR_NO_MEMORY. Never
 * blocks on other topics' traffic. */
MQ_API mq_status mq_topic_create(mq_broker *b, const char *name, const mq_topic_config *cfg);

/* Deletes a topic (ABI 1.1). When it returns the name is free: no call by name reaches the old
 * topic (MQ_ERR_NO_TOPIC), and mq_topic_create makes a new, empty topic of that name, which
 * shares nothing with the old one (no messages, groups, members or offsets).
 * What was using the deleted topic:
 * - publishes (single and batch), mq_group_poll and mq_member_poll waiting on it return
 *   MQ_ERR_NO_TOPIC at once. A call that raced the deletion either took effect on the old
 *   topic before it or returns MQ_ERR_NO_TOPIC.
 * - Push subscriptions on it stop: their loops end and no handler is called afterwards (a
 *   handler already running finishes, its message valid until it returns). The handle stays
 *   valid until mq_subscription_close, which works as usual.
 * - Members of its groups: every call but mq_member_close and mq_member_id returns
 *   MQ_ERR_NO_TOPIC, and no on_rebalance callback runs any more. Close them as usual.
 * - Message views: those handed out by mq_group_poll may become invalid when this returns (as
 *   with mq_group_unsubscribe); those held by a member or a push handler of the topic stay
 *   valid until that handle is released (mq_member_close, mq_subscription_close).
 * - Groups of other topics that dead-letter into it: a poll that must dead-letter a message
 *   returns MQ_ERR_NO_TOPIC instead and the message stays at the group's head (a new topic of
 *   the same name does not take its place: subscribe the group anew).
 * - Introspection (info, describe, lists) no longer sees it.
 * The topic's memory goes once no call on it is running and no member, subscription or group
 * of another topic holds it. Never blocks on the topic's waiters (it wakes them). Safe from a
 * handler or callback.
 * MQ_ERR_INVALID (b or name NULL, illegal name), MQ_CLOSED, MQ_ERR_NO_TOPIC (no topic of that
 * name), MQ_ERR_NO_MEMORY (nothing changed). */
MQ_API mq_status mq_topic_delete(mq_broker *b, const char *name);

/* Writes the topic names, each followed by '\n', in creation order, NUL-terminated, into buf
 * (snprintf-style: at most cap bytes, truncated if needed). *needed (may be NULL) receives the
 * bytes the whole list needs including the NUL. buf may be NULL when cap is 0.
 * MQ_ERR_INVALID (b NULL, buf NULL with cap > 0). Works after close. */
MQ_API mq_status mq_topic_list(mq_broker *b, char *buf, size_t cap, size_t *needed);

/* The same for the groups of a topic, in subscription order. MQ_ERR_NO_TOPIC. */
MQ_API mq_status mq_group_list(mq_broker *b, const char *topic, char *buf, size_t cap,
                               size_t *needed);

/* ---- groups ------------------------------------------------------------------------------ */
typedef enum mq_start {
    MQ_START_LATEST = 0,  /* a new group sees what is published after it subscribes */
    MQ_START_EARLIEST = 1 /* a new group starts at the oldest retained message */
} mq_start;

/* Since 1.6: what kind of group mq_group_options.share subscribes (SPEC rule 16). */
typedef enum mq_share_mode {
    MQ_SHARE_NONE = 0, /* an ordered group: each partition is handed out in order, one lease */
    MQ_SHARE_ALL = 1,  /* a share group: any number of polls share a partition, per message */
    MQ_SHARE_KEY = 2   /* a key-shared group: a share group that keeps per-key order */
} mq_share_mode;

typedef struct mq_group_options {
    size_t size;   /* set by mq_group_options_init */
    int32_t start; /* an mq_start (MQ_START_LATEST or MQ_START_EARLIEST); default
                            * MQ_START_LATEST */
    /* Poison messages: when a message has been handed to this group max_deliveries times
     * without an ack, the next poll does not hand it out again; it appends it to
     * dead_letter_topic (key and payload as published, with an mq_dead_letter record saying
     * where it came from) and treats it as acked for this group, so the partition moves on.
     * The poll then goes on to hand out the messages after it in the same call.
     * 0 = no limit (default; then dead_letter_topic must be NULL); any value up to UINT32_MAX.
     * The dead-letter topic must
     * exist and differ from this topic. When it is full, the poll waits for room until its own
     * deadline (the wait does not start over); if the deadline passes first the poll returns
     * MQ_TIMEOUT and the message stays at the head of the group (neither delivered nor acked)
     * until a later poll can dead-letter it. A message the dead-letter topic can never take
     * (larger than its byte budget, origin headers included) is counted as lost instead: the
     * group moves past it, mq_group_info.lost counts it and the next message handed to the
     * group reports it in its `lost` field. */
    uint32_t max_deliveries;
    const char *dead_letter_topic; /* copied; NULL = none (default) */
    /* Since 1.6: an mq_share_mode; default MQ_SHARE_NONE. A share group (mq as a task queue;
     * SPEC rule 16, Kafka's share groups) lets any number of consumers poll the same partition:
     * each mq_group_poll (plain, copying, acknowledging or asynchronous) acquires up to `max`
     * messages that no other poll holds, each under its own lock of the topic's
     * ack_timeout_ms that runs out independently (the message is then available again), and
     * each acquired message is settled on its own, in any order, with mq_share_settle. A
     * message's delivery_count counts its acquisitions and is the token that proves the
     * caller's acquisition is the current one; max_deliveries and the dead-letter topic work
     * as for ordered groups (an available message acquired max_deliveries times is
     * dead-lettered instead of handed out again). Messages not yet due (mq_record.delay_ms)
     * are skipped and handed out as they become due. For trimming and back-pressure a share
     * group's position (mq_group_info.committed) is its oldest unsettled message.
     * MQ_SHARE_KEY adds Pulsar's Key_Shared rule: a message is not acquired while an earlier
     * message with the same key (by murmur2 hash) is unsettled, so messages of one key are
     * handed out, and can only be settled, one at a time in offset order (keyless messages
     * are unconstrained; a poll looks at most 4 * max_acquired messages past the oldest
     * unsettled one for free keys).
     * Views: a view a share group's poll hands out stays valid until the group's frontier
     * passes the message, that is until it is settled, by its holder or, once the holder's lock
     * ran out, by whoever acquired it next. A consumer whose lock may run out while it still
     * reads the message uses the copying poll (mq_group_poll_copy), as the bindings do.
     * In a share group mq_group_ack accepts an acquired message (without the delivery-count
     * check), mq_group_nack releases every message the group has acquired on the partition
     * (after delay_ms if given) and mq_group_extend_lease renews all their locks.
     * Push subscriptions and members take partitions exclusively: mq_subscription_open and
     * mq_member_join refuse a share group (MQ_ERR_INVALID). The Kafka backend refuses a share
     * group with MQ_ERR_UNSUPPORTED (docs/KAFKA.md). */
    int32_t share;
    /* Since 1.6, share groups only: at most this many messages of one partition are acquired
     * at once (0 = 2000, Kafka's default; at most 1000000). A poll that finds the limit reached
     * waits until a message is settled or a lock runs out; publishers are not slowed by it. */
    uint32_t max_acquired;
} mq_group_options;

MQ_API void mq_group_options_init(mq_group_options *opts, size_t size);

/* Subscribes a consumer group to a topic: creates its cursor on every partition, at the end of
 * the log (or at the oldest retained message with MQ_START_EARLIEST). opts may be NULL.
 * MQ_ERR_INVALID (NULL, illegal name, bad options, max_deliveries without a dead-letter topic or
 * the reverse, dead-letter topic equal to topic), MQ_ERR_NO_TOPIC (topic or dead-letter topic),
 * MQ_ERR_EXISTS (the group is already subscribed), MQ_CLOSED, MQ_ERR_NO_MEMORY. */
MQ_API mq_status mq_group_subscribe(mq_broker *b, const char *topic, const char *group,
                                    const mq_group_options *opts);

/* Removes a group from a topic: its cursors go and whatever only it was holding back is trimmed
 * at once (publishers blocked on it wake). Polls waiting for the group return MQ_ERR_NO_GROUP;
 * its push subscriptions stop calling their handlers (close them as usual); every call of its
 * members but mq_member_close and mq_member_id returns MQ_ERR_NO_GROUP, a waiting
 * mq_member_poll at once, and no on_rebalance callback of theirs runs any more (close them as
 * usual; subscribe the group again to join anew). Message views the group was handed may
 * become invalid.
 * MQ_ERR_INVALID, MQ_ERR_NO_TOPIC, MQ_ERR_NO_GROUP, MQ_CLOSED. */
MQ_API mq_status mq_group_unsubscribe(mq_broker *b, const char *topic, const char *group);

/* ---- publishing -------------------------------------------------------------------------- */

/* A message header: a name and a value, both byte strings (either may be empty; a NULL pointer
 * is allowed only with length 0 and means the same as an empty string: mq has no "null"
 * header value, on either engine, so a reader never sees a difference between NULL and "";
 * the Kafka engine writes such a value as an empty one, not as Kafka's null header, and
 * reads a null header written by another Kafka client as empty). A message carries an ordered
 * list of them, duplicates allowed, as Kafka's do. Their bytes count with key and payload
 * against max_message_bytes and the topic's byte budget. This struct is frozen: it never gains a field. */
typedef struct mq_header {
    const void *name;
    size_t name_len;
    const void *value;
    size_t value_len;
} mq_header;

/* Appends one message. key NULL (with key_len 0) means "no key": round-robin over partitions
 * (each keyless publish that passes its argument checks takes the next partition, whether or
 * not it then succeeds);
 * a non-NULL key (even of length 0) picks partition (murmur2(key) & 0x7fffffff) % partitions,
 * exactly Kafka's default partitioner. Key, payload and the header_count headers (headers may be
 * NULL when header_count is 0) are copied before return.
 * Blocks while the partition's backlog is at capacity (or the byte budget would be exceeded),
 * for at most wait_ms. On MQ_OK, *partition_out and *offset_out (each may be NULL) receive where
 * it went.
 * MQ_FULL: still full when the wait ended; nothing appended. MQ_CLOSED, MQ_CANCELLED (cancel may
 * be NULL). MQ_ERR_INVALID: b or topic NULL, key/payload/headers (or a header's name or value)
 * NULL with nonzero length, wait_ms outside the duration rule (top of file). MQ_ERR_NO_TOPIC. MQ_ERR_TOO_LARGE: the message's bytes
 * (key, payload, header names and values) exceed max_message_bytes or the topic's byte budget.
 * MQ_ERR_NO_MEMORY. */
MQ_API mq_status mq_topic_publish(mq_broker *b, const char *topic, const void *key, size_t key_len,
                                  const void *payload, size_t payload_len, const mq_header *headers,
                                  size_t header_count, int64_t wait_ms, mq_cancel *cancel,
                                  int32_t *partition_out, int64_t *offset_out);

/* One message of a batch. Grows by appending fields: pass sizeof(mq_record) as record_size. */
typedef struct mq_record {
    const void *key; /* NULL = no key */
    size_t key_len;
    const void *payload;
    size_t payload_len;
    const mq_header *headers; /* header_count headers; NULL when header_count is 0 */
    size_t header_count;
    /* Since 1.5: delayed delivery. No group is handed the message before the broker clock
     * reaches its publish time + delay_ms (its `deliver-at` time); 0 (default, and what a
     * caller compiled against an older header passes) hands it out at once. A duration (top of
     * file). The message is appended, counted and retained at once like any other: only its
     * hand-out waits. A group hands out its partition in offset order, so a delayed message
     * holds the messages after it in its partition for every group until it is due (per-key
     * order survives; publish delayed messages to a topic of their own, or give them a key
     * whose partition carries nothing urgent, when that matters). Polls waiting on the
     * partition wake when it becomes due. The Kafka backend refuses a delay >
     * 0 with MQ_ERR_UNSUPPORTED (docs/KAFKA.md). */
    int64_t delay_ms;
} mq_record;

/* Where a record of a batch went. Grows by appending fields: pass sizeof(mq_publish_result). */
typedef struct mq_publish_result {
    int32_t partition; /* where the record went (or would have gone) */
    int64_t offset;    /* its offset, or -1 if it was not published */
} mq_publish_result;

/* Appends count records, taking each partition's lock once for all of its records (waiting for
 * space as needed, within one overall wait_ms). Records of one partition are appended in input
 * order. All records are validated before anything is appended (any invalid record: the whole
 * batch fails with nothing appended, *published 0 and results untouched). count 0 (records may
 * then be NULL) is MQ_OK. A partition that fills up takes the records that fit before the
 * batch stops. results (may be NULL) has count entries; *published (may
 * be NULL) receives how many were appended.
 * On MQ_FULL, MQ_CLOSED or MQ_CANCELLED the batch stopped part-way: for each partition the
 * published records are a prefix of that partition's records, and the others have offset -1.
 * record_size is sizeof(mq_record) and result_size sizeof(mq_publish_result) as the caller
 * compiled them (see the growth rule at the top). A failing record is named by its index.
 * Other statuses as for mq_topic_publish. */
MQ_API mq_status mq_topic_publish_batch(mq_broker *b, const char *topic, const mq_record *records,
                                        size_t record_size, size_t count, int64_t wait_ms,
                                        mq_cancel *cancel, mq_publish_result *results,
                                        size_t result_size, size_t *published);

/* ---- pull consumption -------------------------------------------------------------------- */

/* Where a dead-lettered message came from (see mq_group_options.max_deliveries). Its strings
 * live as long as the broker. The same facts travel as headers appended after the message's
 * own (values in decimal ASCII for the numbers), so a consumer in any language reads them
 * alike: */
#define MQ_HEADER_DEAD_LETTER_TOPIC "mq.dead_letter.topic"
#define MQ_HEADER_DEAD_LETTER_GROUP "mq.dead_letter.group"
#define MQ_HEADER_DEAD_LETTER_PARTITION "mq.dead_letter.partition"
#define MQ_HEADER_DEAD_LETTER_OFFSET "mq.dead_letter.offset"
#define MQ_HEADER_DEAD_LETTER_DELIVERY_COUNT "mq.dead_letter.delivery_count"
typedef struct mq_dead_letter {
    const char *topic; /* the topic it was published to */
    const char *group; /* the group that gave up on it */
    int32_t partition;
    uint32_t delivery_count; /* times that group had been handed it */
    int64_t offset;          /* its offset in that partition */
} mq_dead_letter;

/* A message view. Its pointers (key, payload, headers and their bytes, dead_letter) point into
 * the log: no copy is made. They stay valid until the group acks past the message, seeks past
 * it, or is unsubscribed, or the broker's memory goes; if the message is dropped from under the
 * group (MQ_RETAIN_BOUNDED, max_age_ms), until the group's next poll, ack or seek on that
 * partition. This holds however the group came to hold the view (first delivery, redelivery,
 * or a replay after a seek back). Grows by appending fields: pass sizeof(mq_message) as
 * msg_size. */
typedef struct mq_message {
    int32_t partition;
    /* How many polls have handed this offset to this group, this one included: 1 on first
     * delivery. A rewind (nack, lease expiry) alone does not count; the poll that hands the
     * message out again does. In a push subscription, the rest of a polled batch that its loop
     * gives back unseen (after a handler fails, or when it stops) does not count, so a failing
     * message never takes the ones behind it to the dead-letter topic (max_deliveries) before
     * a handler saw them. */
    uint32_t delivery_count;
    int64_t offset;
    const void *key; /* NULL when the message was published without a key */
    size_t key_len;
    const void *payload; /* never NULL (a zero-length payload points at an empty buffer) */
    size_t payload_len;
    const mq_header *headers; /* header_count headers, in publish order; NULL when none */
    size_t header_count;
    /* Broker clock when it was published. Never less than the timestamp of the message before
     * it in the partition (two publishers racing are clamped into offset order). */
    int64_t timestamp_ns;
    /* Messages of this partition the group lost (dropped before it acked them, by
     * MQ_RETAIN_BOUNDED or max_age_ms) since the message it was handed before this one.
     * 0 when nothing was lost: the loss is never silent. */
    int64_t lost;
    /* NULL, unless this message was dead-lettered into this topic: then where it came from
     * (also in its MQ_HEADER_DEAD_LETTER_* headers). A dead letter's timestamp is the time it
     * was appended to this topic; it is routed like any record (by its key, round-robin without
     * one). */
    const mq_dead_letter *dead_letter;
} mq_message;

/* Hands out up to max messages of one partition to a group, from its `next` offset on, moves
 * `next` past them and starts a new lease (ack timeout) covering everything in flight. If the
 * group's lease ran out (broker clock >= poll time + ack timeout), first rewinds `next` to
 * `committed` (redelivery). A poll that hands out nothing does not renew the lease.
 * Views die with the ack that passes them: copy what you need before a cumulative ack.
 * With nothing to hand out, waits up to wait_ms; a waiting poll wakes on a publish to its
 * partition, a nack, its lease running out, close and its cancel token. *count_out receives
 * the number written to msgs; msg_size is sizeof(mq_message) as the caller compiled it.
 * The wait is one deadline: whatever happens during it (dead-lettering included), the poll
 * returns by then. Messages moved to the dead-letter topic do not count against max.
 * MQ_TIMEOUT: nothing within the wait (count 0). MQ_CLOSED, MQ_CANCELLED.
 * MQ_ERR_INVALID (NULL pointers, max 0, msg_size too small, wait_ms outside the duration rule
 * at the top of the file), MQ_ERR_NO_TOPIC,
 * MQ_ERR_NO_GROUP, MQ_ERR_PARTITION. */
MQ_API mq_status mq_group_poll(mq_broker *b, const char *topic, const char *group,
                               int32_t partition, mq_message *msgs, size_t msg_size, size_t max,
                               int64_t wait_ms, mq_cancel *cancel, size_t *count_out);

/* Acknowledges, cumulatively, every offset up to and including `offset` for the group. What
 * every group has acknowledged is trimmed at once, waking blocked publishers.
 * MQ_ERR_NOT_IN_FLIGHT: offset < committed (already acked) or >= next (never handed out); the
 * message names the in-flight range, "offset 7 is not in flight for billing (nothing is)" or
 * "offset 9 is not in flight for billing (in flight: 4..5)"; nothing changes.
 * MQ_ERR_INVALID, MQ_ERR_NO_TOPIC, MQ_ERR_NO_GROUP, MQ_ERR_PARTITION, MQ_CLOSED. */
MQ_API mq_status mq_group_ack(mq_broker *b, const char *topic, const char *group, int32_t partition,
                              int64_t offset);

/* Since 1.1. Exactly mq_group_ack(offset) then mq_group_poll of the same partition, in one
 * critical section: one lock round trip instead of two, and the publishers the ack makes room
 * for are woken once, with the poll's unlock (or before it would block). A consumer loop that
 * acks its last handled offset and asks for more uses it instead of the pair.
 * The ack comes first and stands whatever the poll then finds (MQ_TIMEOUT, MQ_CANCELLED, and
 * MQ_ERR_NO_MEMORY with a message saying so, after the ack: the offset is acked). A rejected ack polls nothing: MQ_ERR_NOT_IN_FLIGHT (as
 * mq_group_ack, with its message; nothing changes, *count_out is 0, no wait). Blocking, wake-ups
 * and views as mq_group_poll; the ack ends the views it passes before the poll hands out new
 * ones. Statuses in mq.h's order: MQ_ERR_INVALID (NULL broker), MQ_CLOSED, the topic, group and
 * partition (MQ_ERR_INVALID / MQ_ERR_NO_TOPIC / MQ_ERR_NO_GROUP / MQ_ERR_PARTITION), then
 * msgs, msg_size, max, wait_ms and count_out (MQ_ERR_INVALID), then MQ_ERR_NOT_IN_FLIGHT, then
 * MQ_TIMEOUT / MQ_CANCELLED. Any thread. */
MQ_API mq_status mq_group_ack_poll(mq_broker *b, const char *topic, const char *group,
                                   int32_t partition, int64_t offset, mq_message *msgs,
                                   size_t msg_size, size_t max, int64_t wait_ms, mq_cancel *cancel,
                                   size_t *count_out);

/* Rewinds the group's `next` to `committed`: the in-flight messages are handed out again by the
 * next poll (which is woken). With delay_ms > 0 they come back no sooner than that (by the
 * broker clock): the group's polls of that partition hand out nothing until then (order within
 * the partition is kept, so the group waits rather than skipping ahead); once the pause is
 * over, mq_group_info.paused_until_ns reads 0 again. A nack with nothing in flight is MQ_OK and
 * changes nothing.
 * MQ_ERR_INVALID (delay_ms, a duration (top of file), < 0 or above 2^40), MQ_ERR_NO_TOPIC,
 * MQ_ERR_NO_GROUP,
 * MQ_ERR_PARTITION, MQ_CLOSED. */
MQ_API mq_status mq_group_nack(mq_broker *b, const char *topic, const char *group,
                               int32_t partition, int64_t delay_ms);

/* Restarts the lease of the group's in-flight messages on a partition ("still working on it"):
 * they are not redelivered before another ack timeout has passed. A lease that has already run
 * out but whose messages no poll has taken back yet is restarted too (MQ_OK).
 * MQ_ERR_NOT_IN_FLIGHT: nothing is in flight. Other statuses as mq_group_ack. */
MQ_API mq_status mq_group_extend_lease(mq_broker *b, const char *topic, const char *group,
                                       int32_t partition);

#define MQ_OFFSET_END (-1)      /* mq_group_seek: skip everything retained */
#define MQ_OFFSET_EARLIEST (-2) /* mq_group_seek: replay everything retained */

/* Moves the group's cursor on a partition to `offset` (committed = next = offset): an offset in
 * the retained range start..end (replay or skip), MQ_OFFSET_EARLIEST or MQ_OFFSET_END. What was
 * in flight is forgotten, a delayed nack is cancelled, delivery counts start over, and what the
 * group no longer holds back is trimmed. Loss the group has not been told of yet (mq_message.lost)
 * is kept and reported by its next poll. A seek ends the group's views of the messages it
 * moves past (forward); a seek back keeps them, and the messages it replays are new views.
 * MQ_ERR_OUT_OF_RANGE: offset outside start..end (the message names the range, or says the log
 * is empty and names the only legal offset); nothing changes.
 * Other statuses as mq_group_ack. */
MQ_API mq_status mq_group_seek(mq_broker *b, const char *topic, const char *group,
                               int32_t partition, int64_t offset);

/* ---- push consumption -------------------------------------------------------------------- */
typedef struct mq_subscription mq_subscription;

/* Called for each message in partition order. Return 0 when the work is done (the message is
 * then acked); nonzero to nack (the message and the rest of its batch are delivered again, at
 * once or after the delay set with mq_handler_set_nack_delay).
 * Runs on a library thread (one per owned partition), never with a library lock held. msg is
 * valid during the call. It may call any mq function except mq_subscription_close of its own
 * subscription (which returns MQ_ERR_DEADLOCK). The loop may coalesce the acks of one polled
 * batch (SPEC rule 10). With partitions NULL (the subscription is a member of its group), a
 * rebalance that moves a partition away fences the loop's acks from then on: the messages of
 * that batch handled but not yet acked are delivered again to the new owner, as Kafka
 * redelivers what was not committed before a rebalance. Handlers must be idempotent anyway
 * (at-least-once); subscriptions with an explicit partition list never lose their partitions. */
typedef int (*mq_handler)(void *user, const mq_message *msg);

/* Called exactly once, after the handler can no longer run (from mq_subscription_close, or
 * before mq_subscription_open returns when it fails). */
typedef void (*mq_user_free)(void *user);

typedef struct mq_subscription_options {
    size_t size;               /* set by mq_subscription_options_init */
    int32_t prefetch;          /* messages per poll, 1 to 65536; default 10 (each loop
                                   * holds a buffer of prefetch messages) */
    const int32_t *partitions; /* partitions to own, each in 0..partitions-1 of the topic and
                                   * none twice; NULL = all (default) */
    size_t partition_count;    /* entries in partitions: 0 with NULL, else at least 1 */
    /* Since 1.3. As mq_member_options.session_timeout_ms, for the member a subscription without
     * a partition list is: a duration (top of file) of 1 to 2^40 ms, default 10000. On Kafka it
     * bounds how long a crashed process's partitions stay with it before the group moves them
     * (docs/KAFKA.md). In-process the subscription's membership lives exactly as long as the
     * subscription (a crash ends the whole log with it), so the value is only checked. On
     * Kafka the limits of mq_member_options.session_timeout_ms apply. */
    int64_t session_timeout_ms;
} mq_subscription_options;

MQ_API void mq_subscription_options_init(mq_subscription_options *opts, size_t size);

/* Starts a push subscription: for each owned partition a library thread polls (prefetch
 * messages), calls handler for each in order and acks it. Subscribes the group (at the end of
 * the log) if it is not subscribed yet. opts may be NULL.
 * With opts->partitions NULL (the default) the subscription is a member of the group (see
 * mq_member_join): it owns what the group assigns it, and its loops start and stop as
 * partitions move when other members or subscriptions join and leave. With a partition list it
 * claims exactly those partitions (rule 11).
 * MQ_ERR_OWNED: another live subscription of the group owns one of the listed partitions, or
 * the group has members (with a list) / claimed partitions (without one); nothing is
 * claimed. MQ_ERR_INVALID (NULL, bad options, duplicate partitions, a partition list with
 * partition_count 0), MQ_ERR_NO_TOPIC,
 * MQ_ERR_PARTITION, MQ_CLOSED, MQ_ERR_NO_MEMORY (no thread could be started).
 * On any failure user_free(user) has been called (if not NULL) before return. */
MQ_API mq_status mq_subscription_open(mq_broker *b, const char *topic, const char *group,
                                      const mq_subscription_options *opts, mq_handler handler,
                                      void *user, mq_user_free user_free, mq_subscription **out);

/* From inside a handler: restarts the lease of the messages this handler's loop holds (see
 * mq_group_extend_lease), for work that outlives the ack timeout.
 * MQ_ERR_INVALID: not called from a push handler. MQ_CLOSED. */
MQ_API mq_status mq_handler_extend_lease(void);

/* From inside a handler: if the handler then returns nonzero, its nack is delayed by delay_ms
 * (see mq_group_nack). Applies to the current handler call only.
 * MQ_ERR_INVALID: not called from a push handler, or delay_ms (a duration, see the top of the
 * file) < 0 or above 2^40. */
MQ_API mq_status mq_handler_set_nack_delay(int64_t delay_ms);

/* Stops the subscription's loops, waits until no handler of it is running, releases its
 * partitions, calls user_free, and frees the handle. Messages a handler had not finished stay in
 * flight and are delivered again (after a nack by the next owner or when the lease runs out).
 * MQ_ERR_DEADLOCK: called from the subscription's own handler; nothing happens.
 * MQ_ERR_INVALID: sub NULL. */
MQ_API mq_status mq_subscription_close(mq_subscription *sub);

/* ---- live groups: members ---------------------------------------------------------------- */

/* A group member is a handle that joins a group on a topic and leaves it when closed. The broker
 * divides the topic's partitions among the group's current members and numbers each division
 * with a generation. When members join, leave or time out, the generation increases and
 * partitions move: a partition taken from a member has its in-flight messages rewound to the
 * group's committed offset for the new owner (at-least-once: the committed offset lives in the
 * partition, not in the member). A member learns of a change on its next call (MQ_REBALANCED)
 * or through its on_rebalance callback, then fetches its assignment.
 * Fencing: a member's poll, ack or nack on a partition it does not own in the current generation
 * is MQ_ERR_FENCED, so a slow old owner can never ack or take messages of the new one.
 * Plain mq_group_poll/mq_group_ack by explicit partition keep working for users who manage assignment
 * themselves (they are not fenced). Members and push subscriptions with an explicit partition
 * list cannot share a group (MQ_ERR_OWNED). */
typedef struct mq_member mq_member;

/* An assignment strategy: for each partition p in 0..partitions-1, write to owner_out[p] the
 * index (0..member_count-1) of the member that owns it. Members are listed in join order.
 * Called with the group's membership lock held, from whichever thread caused the rebalance: it
 * must be fast, pure and must not call into mq. An out-of-range index leaves that partition
 * unowned until the next rebalance. */
typedef void (*mq_assignor)(void *user, int32_t partitions, const char *const *member_ids,
                            int32_t member_count, int32_t *owner_out);

/* Called for every member of the group after every rebalance (its own join included: then
 * before mq_member_join returns, with the handle it is about to return), on the thread that
 * caused it (a join, a close, or the call that noticed a timed-out member), with no library
 * lock held. Generations start at 1 and keep counting while the group is empty. It may call
 * mq_member_get_assignment; it must not close its own member (MQ_ERR_DEADLOCK). */
typedef void (*mq_rebalance_fn)(void *user, mq_member *member, int64_t generation);

typedef struct mq_member_options {
    size_t size;                /* set by mq_member_options_init */
    const char *member_id;      /* copied; NULL = generated "<group>-<n>"; a legal name */
    int64_t session_timeout_ms; /* a member that makes no call for this long is removed as
                                    * if it had left (noticed by the group's next join or member
                                    * call); a duration (top of file) of 1 to 2^40 ms;
                                    * default 10000. A member blocked in mq_member_poll is
                                    * calling. On Kafka at most what client and cluster take
                                    * (librdkafka: 1 h, else MQ_ERR_INVALID; the brokers'
                                    * group.max.session.timeout.ms, 30 min by default, else
                                    * MQ_ERR_BACKEND from the join). */
    mq_assignor assignor;       /* NULL = round-robin (partition p to member p % count); the
                                    * group uses the strategy of its first member */
    void *assignor_user;
    mq_rebalance_fn on_rebalance; /* optional */
    void *on_rebalance_user;
} mq_member_options;

MQ_API void mq_member_options_init(mq_member_options *opts, size_t size);

/* Joins a group (subscribing it at the end of the log if needed) and rebalances.
 * MQ_ERR_EXISTS: member_id is taken in the group. MQ_ERR_OWNED: a push subscription with an
 * explicit partition list owns partitions of the group. MQ_ERR_INVALID, MQ_ERR_NO_TOPIC,
 * MQ_CLOSED, MQ_ERR_NO_MEMORY. */
MQ_API mq_status mq_member_join(mq_broker *b, const char *topic, const char *group,
                                const mq_member_options *opts, mq_member **out);

/* Leaves the group (the others rebalance; what this member had in flight goes to the new
 * owners) and frees the handle. A member already removed for its session timeout just frees
 * its handle (MQ_OK). Waits for a running on_rebalance call of this member, and completes its
 * pending asynchronous polls (1.4, see mq_member_poll_async) with MQ_CLOSED.
 * MQ_ERR_DEADLOCK: called from this member's own on_rebalance; nothing happens.
 * MQ_ERR_INVALID: member NULL. */
MQ_API mq_status mq_member_close(mq_member *member);

/* The member's id (valid until mq_member_close), or "" for NULL. */
MQ_API const char *mq_member_id(const mq_member *member);

/* The member's current assignment: *generation (may be NULL) and its partitions in increasing
 * order (at most cap written to partitions; *count receives how many it owns). Fetching marks
 * the generation as seen, so the member's next calls stop returning MQ_REBALANCED. When the
 * generation changed since the member last fetched, what it had in flight on the partitions it
 * keeps is handed out again by its next poll (its acks were refused with MQ_REBALANCED, so
 * those messages could not otherwise be acked before their lease ran out).
 * MQ_ERR_FENCED: the member was removed (session timeout); close it and join again.
 * MQ_ERR_INVALID (member or count NULL, partitions NULL with cap > 0), MQ_CLOSED. */
MQ_API mq_status mq_member_get_assignment(mq_member *member, int64_t *generation,
                                          int32_t *partitions, size_t cap, size_t *count);

/* Polls the member's partitions (each call starts at the next one, for fairness) and returns
 * messages of one partition, as mq_group_poll does (msg->partition tells which). Waits up to wait_ms
 * (the duration rule at the top of the file) for any of them. MQ_REBALANCED: the generation changed (before or during the wait); nothing
 * was handed out. MQ_ERR_FENCED: the member was removed. Otherwise statuses as mq_group_poll. */
MQ_API mq_status mq_member_poll(mq_member *member, mq_message *msgs, size_t msg_size, size_t max,
                                int64_t wait_ms, mq_cancel *cancel, size_t *count_out);

/* As mq_group_ack / mq_group_nack / mq_group_extend_lease, for a partition the
 * member owns (delay_ms: a duration, 0 to 2^40 ms). MQ_REBALANCED, MQ_ERR_FENCED as above; MQ_ERR_PARTITION; statuses as those. */
MQ_API mq_status mq_member_ack(mq_member *member, int32_t partition, int64_t offset);
MQ_API mq_status mq_member_nack(mq_member *member, int32_t partition, int64_t delay_ms);
MQ_API mq_status mq_member_extend_lease(mq_member *member, int32_t partition);

/* Since 1.1. Exactly mq_member_ack(partition, offset) then mq_member_poll: when the poll's
 * rotation looks at `partition` first (always, for a member owning one partition) the ack and
 * that look share one critical section; otherwise the ack is made first on its own. The ack
 * stands whatever the poll then finds (MQ_ERR_NO_MEMORY after it included). A rejected ack polls nothing (*count_out 0, no wait):
 * MQ_REBALANCED, MQ_ERR_FENCED, MQ_ERR_NOT_IN_FLIGHT as mq_member_ack. Statuses in mq.h's order:
 * MQ_ERR_INVALID (NULL member), MQ_CLOSED, MQ_ERR_PARTITION, then msgs, msg_size, max, wait_ms,
 * count_out (MQ_ERR_INVALID), then MQ_ERR_FENCED / MQ_REBALANCED / MQ_ERR_NOT_IN_FLIGHT, then
 * the poll's own outcome as mq_member_poll (MQ_REBALANCED during the wait, MQ_TIMEOUT,
 * MQ_CANCELLED). Any thread. */
MQ_API mq_status mq_member_ack_poll(mq_member *member, int32_t partition, int64_t offset,
                                    mq_message *msgs, size_t msg_size, size_t max, int64_t wait_ms,
                                    mq_cancel *cancel, size_t *count_out);

/* ---- the copying poll (since 1.3) ------------------------------------------------------- */
/* The polls above hand out views into the log, valid until the group acks past them: a
 * binding that copies them in its own code races the group's other threads. These four forms
 * copy the messages instead, into a buffer the caller owns, while the engine still holds the
 * lock that keeps their bytes alive. Afterwards nothing in the buffer points into the library.
 *
 * Layout 1 (MQ_COPY_LAYOUT_1). Every position ("_at") is a byte offset from the start of the
 * buffer, so a buffer moved or copied whole stays readable; MQ_COPY_ABSENT marks "none".
 *   at 0:                        an mq_copy_header;
 *   at sizeof(mq_copy_header):   count mq_copied_message entries, in poll order;
 *   from header.bytes_at to cap: the byte region the entries point into (keys, payloads,
 *                                header arrays of mq_copied_header, dead letters as
 *                                mq_copied_dead_letter; those structs are 8-byte aligned).
 * The caller passes an 8-byte aligned buffer. All integers are native-endian. A later layout
 * would come with new functions; these write layout 1 for ever.
 *
 * A message is handed out (its delivery counted, `next` moved past it) only if it was copied:
 * a poll stops at the first message that does not fit in the room left. If not even the
 * first fits, nothing is handed out, the call returns MQ_ERR_TOO_LARGE and *needed_out is the
 * cap that would hold that message alone; otherwise *needed_out is the number of bytes used
 * (header, entries and byte region). needed_out may be NULL. */
#define MQ_COPY_LAYOUT_1 1
#define MQ_COPY_ABSENT 0xFFFFFFFFFFFFFFFFULL

typedef struct mq_copy_header {
    uint32_t layout;   /* MQ_COPY_LAYOUT_1 */
    uint32_t count;    /* entries that follow; also *count_out */
    uint64_t bytes_at; /* where the byte region starts */
} mq_copy_header;

typedef struct mq_copied_message { /* as mq_message, by position instead of pointer */
    int64_t offset;
    int32_t partition;
    uint32_t delivery_count;
    int64_t timestamp_ns;
    int64_t lost;
    uint64_t key_at; /* MQ_COPY_ABSENT: published without a key */
    uint64_t key_len;
    uint64_t payload_at;
    uint64_t payload_len;
    uint64_t headers_at; /* header_count mq_copied_header; MQ_COPY_ABSENT when none */
    uint64_t header_count;
    uint64_t dead_letter_at; /* an mq_copied_dead_letter, or MQ_COPY_ABSENT */
} mq_copied_message;

typedef struct mq_copied_header {
    uint64_t name_at;
    uint64_t name_len;
    uint64_t value_at;
    uint64_t value_len;
} mq_copied_header;

typedef struct mq_copied_dead_letter { /* as mq_dead_letter; strings not NUL-terminated */
    uint64_t topic_at;
    uint64_t topic_len;
    uint64_t group_at;
    uint64_t group_len;
    int64_t offset;
    int32_t partition;
    uint32_t delivery_count;
} mq_copied_dead_letter;

/* As mq_group_poll, copying into buf (cap bytes, 8-byte aligned) in layout 1. Statuses as
 * mq_group_poll, and MQ_ERR_INVALID for buf NULL or not 8-byte aligned or cap below
 * sizeof(mq_copy_header); MQ_ERR_TOO_LARGE when the first message does not fit (above). Once
 * the arguments pass, the header is written whatever the outcome (count 0 unless MQ_OK). */
MQ_API mq_status mq_group_poll_copy(mq_broker *b, const char *topic, const char *group,
                                    int32_t partition, void *buf, size_t cap, size_t max,
                                    int64_t wait_ms, mq_cancel *cancel, size_t *count_out,
                                    size_t *needed_out);

/* As mq_group_ack_poll, copying as mq_group_poll_copy. A poll that ends MQ_ERR_TOO_LARGE
 * after the ack leaves the ack standing. */
MQ_API mq_status mq_group_ack_poll_copy(mq_broker *b, const char *topic, const char *group,
                                        int32_t partition, int64_t offset, void *buf, size_t cap,
                                        size_t max, int64_t wait_ms, mq_cancel *cancel,
                                        size_t *count_out, size_t *needed_out);

/* As mq_member_poll, copying as mq_group_poll_copy. */
MQ_API mq_status mq_member_poll_copy(mq_member *member, void *buf, size_t cap, size_t max,
                                     int64_t wait_ms, mq_cancel *cancel, size_t *count_out,
                                     size_t *needed_out);

/* As mq_member_ack_poll, copying as mq_group_poll_copy. */
MQ_API mq_status mq_member_ack_poll_copy(mq_member *member, int32_t partition, int64_t offset,
                                         void *buf, size_t cap, size_t max, int64_t wait_ms,
                                         mq_cancel *cancel, size_t *count_out, size_t *needed_out);

/* Copies one message view into buf (cap bytes, 8-byte aligned) in layout 1, count 1: what a
 * push handler (or a view poll's caller, while its views are valid) uses to read a lent message
 * the way the copying polls are read. *needed_out (may be NULL) receives the bytes used, or
 * with MQ_ERR_TOO_LARGE (nothing written) the cap the message needs. MQ_ERR_INVALID: msg NULL;
 * buf NULL or not 8-byte aligned, or cap below sizeof(mq_copy_header). */
MQ_API mq_status mq_message_copy(const mq_message *msg, void *buf, size_t cap, size_t *needed_out);

/* ---- asynchronous calls (since 1.4) ------------------------------------------------------ */
/* Each *_async call is its blocking form with two more arguments, and waits without a thread.
 * It runs on the calling thread exactly as the blocking form until that would wait. If it does
 * not need to wait (messages are there, there is room, wait_ms is 0, or it fails), it returns
 * the blocking form's status, its outputs written, and never calls `done`. Otherwise it
 * returns MQ_PENDING and the call goes on without a thread: whatever would wake the blocking
 * form (a publish, an ack that makes room, a nack, a lease running out, the deadline, its
 * cancel token, an unsubscribe, the topic's deletion, close) runs it again on the broker's one
 * completer thread, and when it ends, done(user, status) is called there exactly once, with the
 * blocking form's status and outputs (MQ_OK, MQ_TIMEOUT / MQ_FULL at wait_ms, MQ_CANCELLED,
 * MQ_CLOSED, errors) and mq_last_error() set on that thread for failures. `done` may run
 * before the call returns MQ_PENDING, runs with no lock of the library held, and may call any
 * mq function (another *_async call, mq_broker_close, mq_broker_free). It must not block for
 * long: it delays every other completion of the broker.
 * While a call is pending, every pointer it was given (buffers, outputs, records, key, payload,
 * headers, names) must stay valid: the call writes its outputs just before `done`. Close and
 * free complete every pending call with MQ_CLOSED: mq_broker_close and mq_broker_free return
 * after their `done` calls have returned (unless called from a `done`). To abandon a pending
 * call, trigger its cancel token and wait for its `done` (MQ_CANCELLED, or what it completed
 * with first): that is when its buffers may go.
 * Pending calls are served with the blocking ones: a publish wakes blocking and asynchronous
 * polls of its partition alike, and whichever comes first takes the messages.
 * MQ_ERR_INVALID also for done NULL; MQ_ERR_UNSUPPORTED on the Kafka engine (use the blocking
 * forms there, docs/KAFKA.md). */
typedef void (*mq_done_fn)(void *user, mq_status status);

MQ_API mq_status mq_group_poll_async(mq_broker *b, const char *topic, const char *group,
                                     int32_t partition, mq_message *msgs, size_t msg_size,
                                     size_t max, int64_t wait_ms, mq_cancel *cancel,
                                     size_t *count_out, mq_done_fn done, void *user);
/* The ack is made before the call returns, whatever happens after (as mq_group_ack_poll). */
MQ_API mq_status mq_group_ack_poll_async(mq_broker *b, const char *topic, const char *group,
                                         int32_t partition, int64_t offset, mq_message *msgs,
                                         size_t msg_size, size_t max, int64_t wait_ms,
                                         mq_cancel *cancel, size_t *count_out, mq_done_fn done,
                                         void *user);
MQ_API mq_status mq_group_poll_copy_async(mq_broker *b, const char *topic, const char *group,
                                          int32_t partition, void *buf, size_t cap, size_t max,
                                          int64_t wait_ms, mq_cancel *cancel, size_t *count_out,
                                          size_t *needed_out, mq_done_fn done, void *user);
MQ_API mq_status mq_group_ack_poll_copy_async(mq_broker *b, const char *topic, const char *group,
                                              int32_t partition, int64_t offset, void *buf,
                                              size_t cap, size_t max, int64_t wait_ms,
                                              mq_cancel *cancel, size_t *count_out,
                                              size_t *needed_out, mq_done_fn done, void *user);
/* A keyless record takes its round-robin partition once, on the calling thread. */
MQ_API mq_status mq_topic_publish_async(mq_broker *b, const char *topic, const void *key,
                                        size_t key_len, const void *payload, size_t payload_len,
                                        const mq_header *headers, size_t header_count,
                                        int64_t wait_ms, mq_cancel *cancel, int32_t *partition_out,
                                        int64_t *offset_out, mq_done_fn done, void *user);
/* Each record is routed once, on the calling thread; the batch goes on partition by partition
 * as room appears, under one deadline, and *published / results are final at `done`. */
MQ_API mq_status mq_topic_publish_batch_async(mq_broker *b, const char *topic,
                                              const mq_record *records, size_t record_size,
                                              size_t count, int64_t wait_ms, mq_cancel *cancel,
                                              mq_publish_result *results, size_t result_size,
                                              size_t *published, mq_done_fn done, void *user);

/* The member polls' asynchronous forms. A pending one keeps the member calling (its session
 * does not run out while it waits) and ends as the blocking form would: messages, MQ_TIMEOUT,
 * MQ_CANCELLED, MQ_REBALANCED when the generation changes, MQ_ERR_FENCED, MQ_ERR_NO_TOPIC,
 * MQ_ERR_NO_GROUP, MQ_CLOSED. mq_member_close completes the member's pending calls with
 * MQ_CLOSED and returns after their `done` calls have returned; called from a `done` (of any
 * call of the broker) it returns at once, and the handle goes when the last of them has
 * completed. */
MQ_API mq_status mq_member_poll_async(mq_member *member, mq_message *msgs, size_t msg_size,
                                      size_t max, int64_t wait_ms, mq_cancel *cancel,
                                      size_t *count_out, mq_done_fn done, void *user);
/* The ack is made before the call returns, whatever happens after (as mq_member_ack_poll). */
MQ_API mq_status mq_member_ack_poll_async(mq_member *member, int32_t partition, int64_t offset,
                                          mq_message *msgs, size_t msg_size, size_t max,
                                          int64_t wait_ms, mq_cancel *cancel, size_t *count_out,
                                          mq_done_fn done, void *user);
MQ_API mq_status mq_member_poll_copy_async(mq_member *member, void *buf, size_t cap, size_t max,
                                           int64_t wait_ms, mq_cancel *cancel, size_t *count_out,
                                           size_t *needed_out, mq_done_fn done, void *user);
MQ_API mq_status mq_member_ack_poll_copy_async(mq_member *member, int32_t partition, int64_t offset,
                                               void *buf, size_t cap, size_t max, int64_t wait_ms,
                                               mq_cancel *cancel, size_t *count_out,
                                               size_t *needed_out, mq_done_fn done, void *user);

/* ---- partitioning helpers ---------------------------------------------------------------- */

/* Kafka's default partition for a key: (murmur2(key) & 0x7fffffff) % partitions.
 * MQ_ERR_INVALID: out NULL, key NULL with key_len > 0, partitions < 1. */
MQ_API mq_status mq_key_partition(const void *key, size_t key_len, int32_t partitions,
                                  int32_t *out);

/* Kafka's murmur2 of a key (signed, as Kafka's Utils.murmur2 returns it). key may be NULL only
 * when key_len is 0. */
MQ_API int32_t mq_key_murmur2(const void *key, size_t key_len);

/* Round-robin assignment: the partitions of `partitions` that member `member` of `members`
 * owns (partition p goes to member p % members), written in increasing order to out (at most
 * cap). *count_out receives how many the member owns (may exceed cap).
 * MQ_ERR_INVALID: partitions < 1, members < 1, member not in 0..members-1, out NULL with
 * cap > 0, count_out NULL. */
MQ_API mq_status mq_assignment_round_robin(int32_t partitions, int32_t members, int32_t member,
                                           int32_t *out, size_t cap, size_t *count_out);

/* ---- introspection (works after close) --------------------------------------------------- */
typedef struct mq_topic_info {
    int32_t partitions;
    int64_t capacity;
    int64_t max_bytes;
    int64_t ack_timeout_ms;
    int32_t retention;  /* an mq_retention */
    int64_t max_age_ms; /* 0 = no limit */
} mq_topic_info;

/* Fills *out (out_size = sizeof *out; a smaller out_size gets the fields that fit) with the
 * topic's config. MQ_ERR_INVALID, MQ_ERR_NO_TOPIC. */
MQ_API mq_status mq_topic_get_info(mq_broker *b, const char *topic, mq_topic_info *out,
                                   size_t out_size);

typedef struct mq_partition_info {
    int64_t start;   /* oldest retained offset */
    int64_t end;     /* next offset to be published */
    int64_t backlog; /* end - slowest committed (0 with no groups) */
    int64_t capacity;
    int64_t retained_bytes;      /* key + payload + header bytes retained (what max_bytes counts) */
    int64_t max_bytes;           /* byte budget, 0 = none */
    int64_t producer_waits;      /* publishes that found the partition full and started waiting
                               * (counted once per publish when its wait begins; a publish with
                               * MQ_NO_WAIT that gets MQ_FULL does not wait and is not counted) */
    int64_t max_backlog;         /* largest backlog seen */
    int64_t dropped;             /* messages trimmed before every group acked them (bounded
                               * retention, max age) */
    int64_t oldest_timestamp_ns; /* timestamp of the message at start; -1 when the log is empty */
    int64_t oldest_age_ns;       /* broker clock now minus oldest_timestamp_ns; -1 when empty */
} mq_partition_info;

/* Fills *out (out_size = sizeof *out; a smaller out_size gets the fields that fit).
 * MQ_ERR_INVALID, MQ_ERR_NO_TOPIC, MQ_ERR_PARTITION. */
MQ_API mq_status mq_partition_get_info(mq_broker *b, const char *topic, int32_t partition,
                                       mq_partition_info *out, size_t out_size);

typedef struct mq_group_info {
    int64_t committed;       /* every offset below it is acked */
    int64_t next;            /* next offset to hand out */
    int64_t lag;             /* end - committed */
    int64_t in_flight;       /* next - committed */
    int64_t lost;            /* messages dropped before this group acked them */
    int64_t dead_lettered;   /* messages this group sent to its dead-letter topic */
    int64_t next_age_ns;     /* age of the message at next (by the broker clock); -1 if none */
    int64_t paused_until_ns; /* broker clock time a delayed nack holds the group until; 0 if
                               * not paused */
    /* Since 1.6, share groups (0 or -1 for an ordered group). For a share group `committed`
     * is the oldest unsettled offset, `next` the first offset no poll has looked at, and
     * `in_flight` next - committed. */
    int64_t acquired;  /* messages acquired and not settled (their locks still run) */
    int64_t available; /* messages a poll could acquire now */
    int64_t delayed;   /* messages not handed out before a later time (mq_record.delay_ms, a
                        * release with a delay) */
    int64_t rejected;  /* messages settled with MQ_SETTLE_REJECT (dead-lettered or dropped) */
    int64_t oldest_unsettled_age_ns; /* age of the oldest unsettled message; -1 if none */
    int64_t delivered_once;          /* unsettled messages handed out once, */
    int64_t delivered_twice;         /* twice, */
    int64_t delivered_thrice;        /* three times, */
    int64_t delivered_more;          /* and four times or more (the delivery-count histogram) */
} mq_group_info;

/* Fills *out (out_size = sizeof *out; a smaller out_size gets the fields that fit).
 * MQ_ERR_INVALID, MQ_ERR_NO_TOPIC, MQ_ERR_NO_GROUP, MQ_ERR_PARTITION. */
MQ_API mq_status mq_group_get_info(mq_broker *b, const char *topic, const char *group,
                                   int32_t partition, mq_group_info *out, size_t out_size);

/* ---- share groups (since 1.6) ------------------------------------------------------------ */

/* How mq_share_settle settles an acquired message of a share group. */
typedef enum mq_settle {
    MQ_SETTLE_ACCEPT = 0,  /* done: never handed out again */
    MQ_SETTLE_RELEASE = 1, /* hand it out again: now, or after delay_ms */
    MQ_SETTLE_REJECT = 2,  /* never again: to the group's dead-letter topic if it has one (as
                            * max_deliveries does, with the same origin headers), else dropped;
                            * counted in mq_group_info.rejected */
    MQ_SETTLE_RENEW = 3    /* keep it: its lock starts over (the topic's ack_timeout_ms) */
} mq_settle;

/* Settles one message that a poll of share group `group` acquired: offset and delivery_count
 * are the message's as the poll handed it out (the delivery count is the fencing token: once
 * the lock runs out and another poll acquires the message, the old acquisition's settlement is
 * refused). delay_ms (a duration, top of file) applies to MQ_SETTLE_RELEASE only and must be 0
 * otherwise. Settlements of one group's messages may come in any order and from any thread.
 * A reject whose dead-letter topic is full leaves the message to the group's next poll, which
 * dead-letters it within its own wait (the reject stands). Never blocks.
 * MQ_ERR_INVALID (NULL, illegal names, not a share group, an unknown action, a delay with an
 * action other than release), MQ_ERR_NO_TOPIC, MQ_ERR_NO_GROUP, MQ_ERR_PARTITION,
 * MQ_ERR_NOT_IN_FLIGHT (the message is not held by that acquisition: never handed out,
 * settled, released, its lock ran out, or acquired again since; the message says which),
 * MQ_CLOSED. The Kafka backend: MQ_ERR_UNSUPPORTED. */
MQ_API mq_status mq_share_settle(mq_broker *b, const char *topic, const char *group,
                                 int32_t partition, int64_t offset, uint32_t delivery_count,
                                 int32_t action, int64_t delay_ms);

/* Describes a partition the way SPEC.md's reference trace prints it, e.g.
 * "log 1..3, backlog 3/3; billing 1/4; email 3/3" or
 * "log empty, next offset 3, backlog 0/10; ledger 3/3" (groups as committed/next, in
 * subscription order). Written snprintf-style into buf; *needed (may be NULL) receives the
 * bytes needed including the NUL. MQ_ERR_INVALID, MQ_ERR_NO_TOPIC, MQ_ERR_PARTITION. */
MQ_API mq_status mq_partition_describe(mq_broker *b, const char *topic, int32_t partition,
                                       char *buf, size_t cap, size_t *needed);

/* ---- handles: a topic or a group's partition resolved once (since 1.7) ------------------ */
/* The calls above name their topic and group on every call, so each one looks them up. A
 * publisher (a topic) and a cursor (one group's position on one partition) are looked up once,
 * at open, as librdkafka's topic handles are: their calls do exactly what the named forms do
 * (same arguments after the names, same behaviour, statuses and message views) without the
 * lookup. Open one per thread or share it: every call on a handle is thread-safe, as the named
 * forms are; only its close must not overlap a call on it.
 *
 * A handle holds its broker's memory (top of file, "Lifetimes"): after mq_broker_free its calls
 * return MQ_CLOSED until it is closed. It holds its topic and group, not their names: once the
 * topic is deleted its calls return MQ_ERR_NO_TOPIC, once the group is unsubscribed
 * MQ_ERR_NO_GROUP, even if a topic or group of that name comes back (open a new handle for
 * it). On a Kafka broker the handles keep the names and call the named forms. */

typedef struct mq_publisher mq_publisher;
typedef struct mq_cursor mq_cursor;

/* Opens a publisher on topic `topic`. MQ_ERR_INVALID (NULL, an illegal name),
 * MQ_ERR_NO_TOPIC, MQ_ERR_NO_MEMORY, MQ_CLOSED. */
MQ_API mq_status mq_publisher_open(mq_broker *b, const char *topic, mq_publisher **out);
/* mq_topic_publish on the publisher's topic. */
MQ_API mq_status mq_publisher_publish(mq_publisher *p, const void *key, size_t key_len,
                                      const void *payload, size_t payload_len,
                                      const mq_header *headers, size_t header_count,
                                      int64_t wait_ms, mq_cancel *cancel, int32_t *partition_out,
                                      int64_t *offset_out);
/* mq_topic_publish_batch on the publisher's topic. */
MQ_API mq_status mq_publisher_publish_batch(mq_publisher *p, const mq_record *records,
                                            size_t record_size, size_t count, int64_t wait_ms,
                                            mq_cancel *cancel, mq_publish_result *results,
                                            size_t result_size, size_t *published);
/* Frees the publisher (NULL: nothing). Not while a call on it is running. */
MQ_API void mq_publisher_close(mq_publisher *p);

/* Opens a cursor on group `group`'s partition `partition` of topic `topic`. MQ_ERR_INVALID,
 * MQ_ERR_NO_TOPIC, MQ_ERR_NO_GROUP, MQ_ERR_PARTITION, MQ_ERR_NO_MEMORY, MQ_CLOSED. */
MQ_API mq_status mq_cursor_open(mq_broker *b, const char *topic, const char *group,
                                int32_t partition, mq_cursor **out);
/* mq_group_poll on the cursor's group and partition. */
MQ_API mq_status mq_cursor_poll(mq_cursor *c, mq_message *msgs, size_t msg_size, size_t max,
                                int64_t wait_ms, mq_cancel *cancel, size_t *count_out);
/* mq_group_ack on the cursor's group and partition. */
MQ_API mq_status mq_cursor_ack(mq_cursor *c, int64_t offset);
/* mq_group_ack_poll on the cursor's group and partition. */
MQ_API mq_status mq_cursor_ack_poll(mq_cursor *c, int64_t offset, mq_message *msgs, size_t msg_size,
                                    size_t max, int64_t wait_ms, mq_cancel *cancel,
                                    size_t *count_out);
/* mq_group_poll_copy on the cursor's group and partition. */
MQ_API mq_status mq_cursor_poll_copy(mq_cursor *c, void *buf, size_t cap, size_t max,
                                     int64_t wait_ms, mq_cancel *cancel, size_t *count_out,
                                     size_t *needed_out);
/* mq_group_ack_poll_copy on the cursor's group and partition. */
MQ_API mq_status mq_cursor_ack_poll_copy(mq_cursor *c, int64_t offset, void *buf, size_t cap,
                                         size_t max, int64_t wait_ms, mq_cancel *cancel,
                                         size_t *count_out, size_t *needed_out);
/* Frees the cursor (NULL: nothing). Not while a call on it is running. */
MQ_API void mq_cursor_close(mq_cursor *c);

/* ---- the design card's names (since 1.3) ------------------------------------------------- */
/* mq was specified as "an opaque-handle C API (mq_broker_new, mq_publish, mq_poll, mq_ack,
 * callback-based mq_subscribe)". These four are those names: each is exactly its long form
 * (same signature, same behaviour and statuses, documented there), for programs written
 * against the card. The long forms stay, and name what they act on (docs/ABI.md). */

/* Exactly mq_topic_publish. */
MQ_API mq_status mq_publish(mq_broker *b, const char *topic, const void *key, size_t key_len,
                            const void *payload, size_t payload_len, const mq_header *headers,
                            size_t header_count, int64_t wait_ms, mq_cancel *cancel,
                            int32_t *partition_out, int64_t *offset_out);

/* Exactly mq_group_poll. */
MQ_API mq_status mq_poll(mq_broker *b, const char *topic, const char *group, int32_t partition,
                         mq_message *msgs, size_t msg_size, size_t max, int64_t wait_ms,
                         mq_cancel *cancel, size_t *count_out);

/* Exactly mq_group_ack. */
MQ_API mq_status mq_ack(mq_broker *b, const char *topic, const char *group, int32_t partition,
                        int64_t offset);

/* Exactly mq_subscription_open. */
MQ_API mq_status mq_subscribe(mq_broker *b, const char *topic, const char *group,
                              const mq_subscription_options *opts, mq_handler handler, void *user,
                              mq_user_free user_free, mq_subscription **out);

#ifdef __cplusplus
}
#endif

#endif /* MQ_H */
