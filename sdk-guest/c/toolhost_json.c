/*
 * The JSON half of the toolhost C SDK: a reader for the input object's
 * top-level keys, a writer for the output, and the output's content parts.
 * No dependency on the generated bindings, so it also builds natively for
 * tests.
 */
#include "toolhost_internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------- reading ---------- */

static const char *skip_ws(const char *p, const char *end) {
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) p++;
    return p;
}

/* End of the string starting at p (p points at the opening quote), or NULL. */
static const char *skip_string(const char *p, const char *end) {
    p++;
    while (p < end) {
        if (*p == '\\') {
            p += 2;
        } else if (*p == '"') {
            return p + 1;
        } else {
            p++;
        }
    }
    return NULL;
}

/* End of the JSON value starting at p, or NULL if it is malformed. */
static const char *skip_value(const char *p, const char *end) {
    p = skip_ws(p, end);
    if (p >= end) return NULL;
    if (*p == '"') return skip_string(p, end);
    if (*p == '{' || *p == '[') {
        size_t depth = 0;
        while (p < end) {
            char c = *p;
            if (c == '"') {
                p = skip_string(p, end);
                if (!p) return NULL;
                continue;
            }
            if (c == '{' || c == '[') depth++;
            if (c == '}' || c == ']') {
                depth--;
                if (depth == 0) return p + 1;
            }
            p++;
        }
        return NULL;
    }
    const char *start = p;
    while (p < end && *p != ',' && *p != '}' && *p != ']' && *p != ' ' && *p != '\t' && *p != '\n' &&
           *p != '\r')
        p++;
    return p > start ? p : NULL;
}

static int hex4(const char *p, const char *end, uint32_t *out) {
    if (end - p < 4) return 0;
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= (uint32_t)(c - '0');
        else if (c >= 'a' && c <= 'f') v |= (uint32_t)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') v |= (uint32_t)(c - 'A' + 10);
        else return 0;
    }
    *out = v;
    return 1;
}

static size_t put_utf8(char *dst, uint32_t cp) {
    if (cp < 0x80) { dst[0] = (char)cp; return 1; }
    if (cp < 0x800) { dst[0] = (char)(0xC0 | (cp >> 6)); dst[1] = (char)(0x80 | (cp & 0x3F)); return 2; }
    if (cp < 0x10000) {
        dst[0] = (char)(0xE0 | (cp >> 12));
        dst[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        dst[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    dst[0] = (char)(0xF0 | (cp >> 18));
    dst[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    dst[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    dst[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* Decode the JSON string token [p, end) (quotes included) into a new
 * NUL-terminated buffer. Escapes never grow the text, so len bytes suffice. */
static char *decode_string(const char *p, const char *end, size_t *out_len) {
    char *buf = malloc((size_t)(end - p) + 1);
    if (!buf) return NULL;
    size_t n = 0;
    p++;
    end--;
    while (p < end) {
        char c = *p++;
        if (c != '\\') { buf[n++] = c; continue; }
        if (p >= end) break;
        char e = *p++;
        switch (e) {
            case 'b': buf[n++] = '\b'; break;
            case 'f': buf[n++] = '\f'; break;
            case 'n': buf[n++] = '\n'; break;
            case 'r': buf[n++] = '\r'; break;
            case 't': buf[n++] = '\t'; break;
            case 'u': {
                uint32_t cp;
                if (!hex4(p, end, &cp)) { free(buf); return NULL; }
                p += 4;
                if (cp >= 0xD800 && cp <= 0xDBFF && end - p >= 6 && p[0] == '\\' && p[1] == 'u') {
                    uint32_t lo;
                    if (hex4(p + 2, end, &lo) && lo >= 0xDC00 && lo <= 0xDFFF) {
                        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                        p += 6;
                    }
                }
                if (cp >= 0xD800 && cp <= 0xDFFF) cp = 0xFFFD; /* lone surrogate */
                n += put_utf8(buf + n, cp);
                break;
            }
            default: buf[n++] = e; break; /* \" \\ \/ */
        }
    }
    buf[n] = 0;
    *out_len = n;
    return buf;
}

void th_input_free(th_input *in) {
    for (size_t i = 0; i < in->count; i++) free(in->entries[i].key);
    free(in->entries);
    for (size_t i = 0; i < in->owned_count; i++) free(in->owned[i]);
    free(in->owned);
    memset(in, 0, sizeof(*in));
}

int th_input_parse(th_input *in, const char *json, size_t len) {
    memset(in, 0, sizeof(*in));
    in->json = json;
    in->len = len;
    const char *p = json, *end = json + len;
    p = skip_ws(p, end);
    if (p >= end || *p != '{') return 0;
    p = skip_ws(p + 1, end);
    if (p < end && *p == '}') return 1;
    for (;;) {
        p = skip_ws(p, end);
        if (p >= end || *p != '"') goto bad;
        const char *kend = skip_string(p, end);
        if (!kend) goto bad;
        size_t klen;
        char *key = decode_string(p, kend, &klen);
        if (!key) goto bad;
        p = skip_ws(kend, end);
        if (p >= end || *p != ':') { free(key); goto bad; }
        const char *vstart = skip_ws(p + 1, end);
        const char *vend = skip_value(vstart, end);
        if (!vend) { free(key); goto bad; }
        th_entry *grown = realloc(in->entries, (in->count + 1) * sizeof(th_entry));
        if (!grown) { free(key); goto bad; }
        in->entries = grown;
        in->entries[in->count].key = key;
        in->entries[in->count].value.ptr = vstart;
        in->entries[in->count].value.len = (size_t)(vend - vstart);
        in->count++;
        p = skip_ws(vend, end);
        if (p < end && *p == ',') { p++; continue; }
        if (p < end && *p == '}') return 1;
        goto bad;
    }
bad:
    th_input_free(in);
    return 0;
}

static const th_str *find(const th_input *in, const char *key) {
    /* The last duplicate wins, as in most JSON parsers. */
    for (size_t i = in->count; i > 0; i--)
        if (strcmp(in->entries[i - 1].key, key) == 0) return &in->entries[i - 1].value;
    return NULL;
}

th_str th_input_json(const th_input *in) {
    th_str s = {in->json, in->len};
    return s;
}

bool th_has(const th_input *in, const char *key) { return find(in, key) != NULL; }

bool th_get_raw(const th_input *in, const char *key, th_str *out) {
    const th_str *v = find(in, key);
    if (!v) return false;
    *out = *v;
    return true;
}

bool th_get_string(const th_input *in, const char *key, th_str *out) {
    const th_str *v = find(in, key);
    if (!v || v->len < 2 || v->ptr[0] != '"') return false;
    size_t n;
    char *s = decode_string(v->ptr, v->ptr + v->len, &n);
    if (!s) return false;
    char **grown = realloc(((th_input *)in)->owned, (in->owned_count + 1) * sizeof(char *));
    if (!grown) { free(s); return false; }
    ((th_input *)in)->owned = grown;
    ((th_input *)in)->owned[((th_input *)in)->owned_count++] = s;
    out->ptr = s;
    out->len = n;
    return true;
}

bool th_get_number(const th_input *in, const char *key, double *out) {
    const th_str *v = find(in, key);
    if (!v || v->len == 0 || v->len > 63) return false;
    char c = v->ptr[0];
    if (c != '-' && (c < '0' || c > '9')) return false;
    char buf[64];
    memcpy(buf, v->ptr, v->len);
    buf[v->len] = 0;
    char *stop;
    double d = strtod(buf, &stop);
    if (*stop != 0) return false;
    *out = d;
    return true;
}

bool th_get_int(const th_input *in, const char *key, int64_t *out) {
    double d;
    if (!th_get_number(in, key, &d)) return false;
    if (d != floor(d) || d < -9223372036854775808.0 || d >= 9223372036854775808.0) return false;
    const th_str *v = find(in, key);
    /* Exact for integers written without fraction or exponent. */
    if (!memchr(v->ptr, '.', v->len) && !memchr(v->ptr, 'e', v->len) && !memchr(v->ptr, 'E', v->len)) {
        char buf[64];
        memcpy(buf, v->ptr, v->len);
        buf[v->len] = 0;
        *out = strtoll(buf, NULL, 10);
    } else {
        *out = (int64_t)d;
    }
    return true;
}

bool th_get_bool(const th_input *in, const char *key, bool *out) {
    const th_str *v = find(in, key);
    if (!v) return false;
    if (v->len == 4 && memcmp(v->ptr, "true", 4) == 0) { *out = true; return true; }
    if (v->len == 5 && memcmp(v->ptr, "false", 5) == 0) { *out = false; return true; }
    return false;
}

bool th_utf8_valid(const char *s, size_t len) {
    const unsigned char *p = (const unsigned char *)s, *end = p + len;
    while (p < end) {
        unsigned char c = *p;
        size_t n;
        uint32_t cp;
        if (c < 0x80) { p++; continue; }
        if (c >= 0xC2 && c <= 0xDF) { n = 1; cp = c & 0x1F; }
        else if (c >= 0xE0 && c <= 0xEF) { n = 2; cp = c & 0x0F; }
        else if (c >= 0xF0 && c <= 0xF4) { n = 3; cp = c & 0x07; }
        else return false;
        if ((size_t)(end - p) <= n) return false;
        for (size_t i = 1; i <= n; i++) {
            if ((p[i] & 0xC0) != 0x80) return false;
            cp = (cp << 6) | (p[i] & 0x3F);
        }
        if ((n == 2 && cp < 0x800) || (n == 3 && (cp < 0x10000 || cp > 0x10FFFF)) || (cp >= 0xD800 && cp <= 0xDFFF))
            return false;
        p += n + 1;
    }
    return true;
}

/* ---------- writing ---------- */

void th_output_free(th_output *out) {
    free(out->buf);
    free(out->message);
    for (size_t i = 0; i < out->part_count; i++) {
        free(out->parts[i].media_type);
        free(out->parts[i].uri);
        free(out->parts[i].data);
    }
    free(out->parts);
    memset(out, 0, sizeof(*out));
}

static void append(th_output *out, const char *s, size_t n) {
    if (out->oom) return;
    if (out->len + n + 1 > out->cap) {
        size_t cap = out->cap ? out->cap : 256;
        while (cap < out->len + n + 1) cap *= 2;
        char *grown = realloc(out->buf, cap);
        if (!grown) { out->oom = 1; return; }
        out->buf = grown;
        out->cap = cap;
    }
    memcpy(out->buf + out->len, s, n);
    out->len += n;
    out->buf[out->len] = 0;
}

/* Before a value: a comma if the container already has one, unless the
 * value follows a key. */
static void before_value(th_output *out) {
    if (out->after_key) { out->after_key = 0; return; }
    if (out->depth > 0 && out->depth <= TH_MAX_DEPTH) {
        if (out->has_item[out->depth - 1]) append(out, ",", 1);
        out->has_item[out->depth - 1] = 1;
    }
}

static void container_begin(th_output *out, char c) {
    before_value(out);
    append(out, &c, 1);
    if (out->depth < TH_MAX_DEPTH) out->has_item[out->depth] = 0;
    out->depth++;
}

static void container_end(th_output *out, char c) {
    if (out->depth > 0) out->depth--;
    append(out, &c, 1);
}

void th_object_begin(th_output *out) { container_begin(out, '{'); }
void th_object_end(th_output *out) { container_end(out, '}'); }
void th_array_begin(th_output *out) { container_begin(out, '['); }
void th_array_end(th_output *out) { container_end(out, ']'); }

static void write_string(th_output *out, const char *s, size_t len) {
    static const char hex[] = "0123456789abcdef";
    append(out, "\"", 1);
    size_t run = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\') { run++; continue; }
        append(out, s + i - run, run);
        run = 0;
        char esc[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
        switch (c) {
            case '"': append(out, "\\\"", 2); break;
            case '\\': append(out, "\\\\", 2); break;
            case '\n': append(out, "\\n", 2); break;
            case '\r': append(out, "\\r", 2); break;
            case '\t': append(out, "\\t", 2); break;
            default: append(out, esc, 6); break;
        }
    }
    append(out, s + len - run, run);
    append(out, "\"", 1);
}

void th_key(th_output *out, const char *key) {
    before_value(out);
    write_string(out, key, strlen(key));
    append(out, ":", 1);
    out->after_key = 1;
}

void th_string(th_output *out, const char *s, size_t len) {
    before_value(out);
    write_string(out, s, len);
}

void th_cstring(th_output *out, const char *s) { th_string(out, s, strlen(s)); }

void th_number(th_output *out, double value) {
    before_value(out);
    if (!isfinite(value)) { append(out, "null", 4); return; }
    char buf[32];
    int n = snprintf(buf, sizeof buf, "%.15g", value);
    if (strtod(buf, NULL) != value) n = snprintf(buf, sizeof buf, "%.17g", value);
    append(out, buf, (size_t)n);
}

void th_int(th_output *out, int64_t value) {
    before_value(out);
    char buf[24];
    int n = snprintf(buf, sizeof buf, "%lld", (long long)value);
    append(out, buf, (size_t)n);
}

void th_bool(th_output *out, bool value) {
    before_value(out);
    append(out, value ? "true" : "false", value ? 4 : 5);
}

void th_null(th_output *out) {
    before_value(out);
    append(out, "null", 4);
}

void th_raw(th_output *out, const char *json, size_t len) {
    before_value(out);
    append(out, json, len);
}

th_status th_error(th_output *out, th_status status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    free(out->message);
    out->message = th_vformat(fmt, ap);
    va_end(ap);
    return status;
}

/* ---------- content parts ---------- */

static char *copy_cstring(th_output *out, const char *s) {
    if (!s) return NULL;
    size_t n = strlen(s);
    char *copy = malloc(n + 1);
    if (!copy) { out->oom = 1; return NULL; }
    memcpy(copy, s, n + 1);
    return copy;
}

static void add_part(th_output *out, th_part_kind kind, const char *uri, const char *media_type,
                     const void *data, size_t len) {
    if (out->oom) return;
    if (out->part_count == out->part_cap) {
        size_t cap = out->part_cap ? out->part_cap * 2 : 4;
        th_part *grown = realloc(out->parts, cap * sizeof *grown);
        if (!grown) { out->oom = 1; return; }
        out->parts = grown;
        out->part_cap = cap;
    }
    th_part part = {kind, NULL, NULL, NULL, len, out->role};
    part.media_type = copy_cstring(out, media_type);
    part.uri = copy_cstring(out, uri);
    if (len > 0) {
        part.data = malloc(len);
        if (part.data) memcpy(part.data, data, len);
        else out->oom = 1;
    }
    if (out->oom) {
        free(part.media_type);
        free(part.uri);
        free(part.data);
        return;
    }
    out->parts[out->part_count++] = part;
}

void th_add_text(th_output *out, const char *text, size_t len) {
    add_part(out, TH_PART_TEXT, NULL, NULL, text, len);
}

void th_add_image(th_output *out, const char *media_type, const void *data, size_t len) {
    add_part(out, TH_PART_IMAGE, NULL, media_type ? media_type : "", data, len);
}

void th_add_audio(th_output *out, const char *media_type, const void *data, size_t len) {
    add_part(out, TH_PART_AUDIO, NULL, media_type ? media_type : "", data, len);
}

void th_add_resource_text(th_output *out, const char *uri, const char *media_type, const char *text, size_t len) {
    add_part(out, TH_PART_RESOURCE_TEXT, uri ? uri : "", media_type, text, len);
}

void th_add_resource_blob(th_output *out, const char *uri, const char *media_type, const void *data, size_t len) {
    add_part(out, TH_PART_RESOURCE_BLOB, uri ? uri : "", media_type, data, len);
}

void th_set_role(th_output *out, th_role role) { out->role = role; }

void th_add_value(th_output *out, const char *value) {
    if (value) add_part(out, TH_PART_TEXT, NULL, NULL, value, strlen(value));
}

static bool cstring_utf8(const char *s) { return !s || th_utf8_valid(s, strlen(s)); }

const char *th_output_problem(const th_output *out) {
    if (out->oom) return "out of memory while writing the output";
    if (!th_utf8_valid(out->buf, out->len)) return "the tool's output is not valid UTF-8";
    for (size_t i = 0; i < out->part_count; i++) {
        const th_part *p = &out->parts[i];
        if (!cstring_utf8(p->media_type) || !cstring_utf8(p->uri))
            return "a content part's media type or URI is not valid UTF-8";
        switch (p->kind) {
            case TH_PART_TEXT:
            case TH_PART_RESOURCE_TEXT:
                if (!th_utf8_valid((const char *)p->data, p->len))
                    return "a text content part is not valid UTF-8";
                break;
            case TH_PART_IMAGE:
            case TH_PART_AUDIO:
                if (p->media_type[0] == 0)
                    return "an image or audio part needs its media type (e.g. image/png)";
                break;
            case TH_PART_RESOURCE_BLOB:
                break;
        }
        if ((p->kind == TH_PART_RESOURCE_TEXT || p->kind == TH_PART_RESOURCE_BLOB) && p->uri[0] == 0)
            return "an embedded resource needs its URI";
    }
    return NULL;
}

char *th_vformat(const char *fmt, va_list ap) {
    va_list copy;
    va_copy(copy, ap);
    int n = vsnprintf(NULL, 0, fmt, copy);
    va_end(copy);
    if (n < 0) return NULL;
    char *s = malloc((size_t)n + 1);
    if (s) vsnprintf(s, (size_t)n + 1, fmt, ap);
    return s;
}
