/* Internals shared by the toolhost C SDK's source files. Not for plugins. */
#ifndef TOOLHOST_INTERNAL_H
#define TOOLHOST_INTERNAL_H

#include <stdarg.h>

#include "toolhost.h"

#define TH_MAX_DEPTH 128

typedef struct {
    char *key; /* decoded, NUL-terminated */
    th_str value; /* raw JSON text of the value, inside the input */
} th_entry;

struct th_input {
    const char *json;
    size_t len;
    th_entry *entries;
    size_t count;
    char **owned; /* strings handed out by th_get_string */
    size_t owned_count;
};

struct th_output {
    char *buf;
    size_t len, cap;
    int oom;
    size_t depth;
    unsigned char has_item[TH_MAX_DEPTH];
    int after_key;
    char *message; /* error message, when a tool fails */
};

/* 1 if `json` is an object whose top-level keys could be read, else 0. */
int th_input_parse(th_input *in, const char *json, size_t len);
void th_input_free(th_input *in);
void th_output_free(th_output *out);
/* A malloc'd, formatted string, or NULL. */
char *th_vformat(const char *fmt, va_list ap);

#endif
