#define _POSIX_C_SOURCE 200809L /* strdup, strtok_r */
#include "protocol.h"

#include <stdlib.h>
#include <string.h>

int request_parse(request *r, char *line) {
    memset(r, 0, sizeof *r);
    r->line = line;
    r->text = strdup(line);
    size_t spaces = 0;
    for (char *p = line; *p; ++p) spaces += *p == ' ';
    r->fields = calloc(spaces + 1, sizeof *r->fields);
    if (!r->fields || !r->text) return -1;
    char *save = NULL;
    r->verb = strtok_r(line, " ", &save);
    if (!r->verb) return -1;
    for (char *tok; (tok = strtok_r(NULL, " ", &save));) {
        char *eq = strchr(tok, '=');
        if (!eq) return -1;
        *eq = '\0';
        r->fields[r->count++] = (field){tok, eq + 1, strlen(eq + 1), 0};
    }
    return 0;
}

void request_free(request *r) {
    free(r->fields);
    free(r->line);
    free(r->text);
    memset(r, 0, sizeof *r);
}

field *req_field(request *r, const char *name) {
    for (size_t i = 0; i < r->count; ++i)
        if (strcmp(r->fields[i].name, name) == 0) return &r->fields[i];
    return NULL;
}

static int hex(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

/* Decodes s[0..*len) in place and NUL-terminates it. */
static void decode(char *s, size_t *len) {
    size_t out = 0;
    for (size_t i = 0; i < *len; ++i) {
        if (s[i] == '%' && i + 2 < *len && hex(s[i + 1]) >= 0 && hex(s[i + 2]) >= 0) {
            s[out++] = (char)(hex(s[i + 1]) * 16 + hex(s[i + 2]));
            i += 2;
        } else {
            s[out++] = s[i];
        }
    }
    s[out] = '\0';
    *len = out;
}

const char *field_bytes(field *f, size_t *len) {
    if (!f->decoded) decode(f->value, &f->len);
    f->decoded = 1;
    if (len) *len = f->len;
    return f->value;
}

void field_pair(field *f, const char **name, size_t *name_len, const char **value,
                size_t *value_len) {
    char *colon = strchr(f->value, ':');
    char *v = colon ? colon + 1 : f->value + f->len;
    if (colon) *colon = '\0';
    *name_len = colon ? (size_t)(colon - f->value) : f->len;
    *value_len = strlen(v);
    decode(f->value, name_len);
    decode(v, value_len);
    *name = f->value;
    *value = v;
}

const char *req_str(request *r, const char *name) {
    field *f = req_field(r, name);
    return f ? field_bytes(f, NULL) : NULL;
}

int64_t req_int(request *r, const char *name, int64_t dflt) {
    field *f = req_field(r, name);
    return f ? strtoll(f->value, NULL, 10) : dflt;
}

void put_enc(FILE *out, const void *bytes, size_t len) {
    const unsigned char *s = bytes;
    for (size_t i = 0; i < len; ++i) {
        unsigned c = s[i];
        int plain = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
        if (plain) fputc((int)c, out);
        else fprintf(out, "%%%02X", c);
    }
}

void put_bytes(FILE *out, const char *name, const void *bytes, size_t len) {
    fprintf(out, " %s=", name);
    put_enc(out, bytes, len);
}
