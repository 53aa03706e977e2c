/* The testee's side of the line protocol (tests/conformance/FORMAT.md): a request is
 * "VERB name=value ...", values percent-encoded; a reply is "STATUS name=value ...". */
#ifndef MQ_TESTEE_PROTOCOL_H
#define MQ_TESTEE_PROTOCOL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct field {
    char *name;
    char *value; /* raw until decoded (in place) */
    size_t len;
    int decoded;
} field;

typedef struct request {
    char *text; /* the line as received (owned) */
    char *line; /* owned; split in place: verb, names and values point into it */
    char *verb;
    field *fields;
    size_t count;
} request;

/* Splits line (malloc'd; the request takes it over). 0 on success. */
int request_parse(request *r, char *line);
void request_free(request *r);

field *req_field(request *r, const char *name); /* the first with that name, or NULL */
/* Decodes a field's value once (in place) and returns it; it is NUL-terminated at len. */
const char *field_bytes(field *f, size_t *len);
/* A NAME:VALUE field split and decoded. */
void field_pair(field *f, const char **name, size_t *name_len, const char **value,
                size_t *value_len);
const char *req_str(request *r, const char *name); /* decoded, or NULL when absent */
int64_t req_int(request *r, const char *name, int64_t dflt);

/* Writes bytes percent-encoded (every byte outside [A-Za-z0-9._-] as %XX). */
void put_enc(FILE *out, const void *bytes, size_t len);
/* Writes " name=" and the encoded bytes. */
void put_bytes(FILE *out, const char *name, const void *bytes, size_t len);

#endif
