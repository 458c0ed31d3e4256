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

typedef enum {
    TH_PART_TEXT,
    TH_PART_IMAGE,
    TH_PART_AUDIO,
    TH_PART_RESOURCE_TEXT,
    TH_PART_RESOURCE_BLOB,
} th_part_kind;

/* One content part, with copies of what the tool gave. */
typedef struct {
    th_part_kind kind;
    char *media_type; /* image, audio: required; resources: NULL for none */
    char *uri; /* resources */
    unsigned char *data; /* the text or the bytes; NULL when len == 0 */
    size_t len;
    th_role role; /* a prompt message's speaker */
} th_part;

struct th_output {
    char *buf;
    size_t len, cap;
    int oom;
    size_t depth;
    unsigned char has_item[TH_MAX_DEPTH];
    int after_key;
    char *message; /* error message, when a tool fails */
    th_part *parts; /* content parts, in order */
    size_t part_count, part_cap;
    th_role role; /* the speaker of prompt messages added next */
};

/* 1 if `json` is an object whose top-level keys could be read, else 0. */
int th_input_parse(th_input *in, const char *json, size_t len);
void th_input_free(th_input *in);
void th_output_free(th_output *out);
/* Why a successful output cannot be sent (out of memory, text that is not
 * UTF-8, a part without its media type or URI), or NULL when it can. */
const char *th_output_problem(const th_output *out);
/* A malloc'd, formatted string, or NULL. */
char *th_vformat(const char *fmt, va_list ap);

#endif
