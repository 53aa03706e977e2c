/* mq.h and POSIX <mqueue.h> in one program, linked with -lrt and libmq.
 *
 * It compiles only if mq.h declares nothing named like a POSIX message-queue function. At run
 * time every POSIX name must still resolve to the C library, never to libmq, and both
 * libraries must answer calls. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <mqueue.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "mq.h"

typedef void (*any_fn)(void);

struct posix_fn {
    const char *name;
    any_fn fn;
};

/* ISO C has no conversion from a function pointer to void *; copying the bytes is the
 * portable way to hand one to dladdr on platforms where both have the same size. */
static const char *defining_object(any_fn fn) {
    void *addr;
    Dl_info info;
    memcpy(&addr, &fn, sizeof addr);
    if (!dladdr(addr, &info) || info.dli_fname == NULL) {
        return "(unknown)";
    }
    return info.dli_fname;
}

int main(void) {
    const struct posix_fn posix[] = {
        {"mq_open", (any_fn)mq_open},           {"mq_close", (any_fn)mq_close},
        {"mq_send", (any_fn)mq_send},           {"mq_receive", (any_fn)mq_receive},
        {"mq_notify", (any_fn)mq_notify},       {"mq_unlink", (any_fn)mq_unlink},
        {"mq_getattr", (any_fn)mq_getattr},     {"mq_setattr", (any_fn)mq_setattr},
        {"mq_timedsend", (any_fn)mq_timedsend}, {"mq_timedreceive", (any_fn)mq_timedreceive},
    };
    int failures = 0;

    for (size_t i = 0; i < sizeof posix / sizeof posix[0]; i++) {
        const char *object = defining_object(posix[i].fn);
        if (strstr(object, "libmq") != NULL) {
            fprintf(stderr, "FAIL: POSIX %s resolves into %s\n", posix[i].name, object);
            failures++;
        }
    }

    /* No O_CREAT and a name unique to this process: POSIX mq_open must fail with errno set
     * (ENOENT, or ENOSYS/EACCES where the mqueue filesystem is unavailable). */
    char name[64];
    snprintf(name, sizeof name, "/mq-coexist-probe-%ld", (long)getpid());
    errno = 0;
    mqd_t q = mq_open(name, O_RDONLY);
    if (q != (mqd_t)-1 || errno == 0) {
        fprintf(stderr, "FAIL: POSIX mq_open(\"%s\", O_RDONLY) returned %ld, errno %d\n", name,
                (long)q, errno);
        failures++;
        if (q != (mqd_t)-1) {
            mq_close(q);
        }
    }

    if (mq_version_number() != MQ_VERSION_NUMBER) {
        fprintf(stderr, "FAIL: mq_version_number() %d, header %d\n", mq_version_number(),
                MQ_VERSION_NUMBER);
        failures++;
    }
    if (strcmp(mq_status_name(MQ_FULL), "MQ_FULL") != 0) {
        fprintf(stderr, "FAIL: mq_status_name(MQ_FULL) is \"%s\"\n", mq_status_name(MQ_FULL));
        failures++;
    }
    mq_broker *broker = NULL;
    mq_status status = mq_broker_new(NULL, &broker);
    if (status != MQ_OK || broker == NULL) {
        fprintf(stderr, "FAIL: mq_broker_new: %s (%s)\n", mq_status_name(status), mq_last_error());
        failures++;
    }
    mq_broker_free(broker);

    if (failures == 0) {
        printf("ok: <mqueue.h> and mq.h coexist; POSIX mq_open is in %s\n",
               defining_object((any_fn)mq_open));
    }
    return failures == 0 ? 0 : 1;
}
