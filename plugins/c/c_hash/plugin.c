/*
 * c_hash: checksums and base64 for text. Built by plugins/c/build.sh.
 */
#include <stdlib.h>
#include <string.h>

#include "toolhost.h"

static uint32_t crc32(const unsigned char *s, size_t n) {
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) {
        c ^= s[i];
        for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
    }
    return c ^ 0xFFFFFFFFu;
}

static uint32_t adler32(const unsigned char *s, size_t n) {
    uint32_t a = 1, b = 0;
    for (size_t i = 0; i < n; i++) {
        a = (a + s[i]) % 65521u;
        b = (b + a) % 65521u;
    }
    return (b << 16) | a;
}

static uint32_t fnv1a32(const unsigned char *s, size_t n) {
    uint32_t h = 0x811C9DC5u;
    for (size_t i = 0; i < n; i++) h = (h ^ s[i]) * 0x01000193u;
    return h;
}

static uint64_t fnv1a64(const unsigned char *s, size_t n) {
    uint64_t h = 0xCBF29CE484222325ull;
    for (size_t i = 0; i < n; i++) h = (h ^ s[i]) * 0x100000001B3ull;
    return h;
}

static const char HEX[] = "0123456789abcdef";

static void hex_value(th_output *out, uint64_t v, int bytes) {
    char buf[16];
    for (int i = 0; i < bytes * 2; i++) buf[i] = HEX[(v >> (4 * (bytes * 2 - 1 - i))) & 15];
    th_string(out, buf, (size_t)bytes * 2);
}

static th_status hash_into(th_output *out, const char *algorithm, const unsigned char *s, size_t len);

static th_status c_hash(const th_input *in, th_output *out) {
    th_str text, algorithm;
    if (!th_get_string(in, "text", &text)) return th_error(out, TH_INVALID_INPUT, "`text` must be a string");
    /* Default algorithm: the manifest's [config] default_algorithm, else crc32. */
    char *configured = NULL;
    if (!th_get_string(in, "algorithm", &algorithm)) {
        configured = th_config("default_algorithm");
        algorithm.ptr = configured ? configured : "crc32";
        algorithm.len = strlen(algorithm.ptr);
    }
    th_status status = hash_into(out, algorithm.ptr, (const unsigned char *)text.ptr, text.len);
    free(configured);
    return status;
}

static th_status hash_into(th_output *out, const char *algorithm, const unsigned char *s, size_t len) {
    th_log(TH_DEBUG, "hashing %zu bytes with %s", len, algorithm);

    th_object_begin(out);
    th_key(out, "algorithm");
    th_cstring(out, algorithm);
    th_key(out, "hex");
    uint64_t value;
    if (strcmp(algorithm, "crc32") == 0) {
        value = crc32(s, len);
        hex_value(out, value, 4);
    } else if (strcmp(algorithm, "adler32") == 0) {
        value = adler32(s, len);
        hex_value(out, value, 4);
    } else if (strcmp(algorithm, "fnv1a32") == 0) {
        value = fnv1a32(s, len);
        hex_value(out, value, 4);
    } else if (strcmp(algorithm, "fnv1a64") == 0) {
        value = fnv1a64(s, len);
        hex_value(out, value, 8);
    } else {
        return th_error(out, TH_INVALID_INPUT, "unknown algorithm `%s`: use crc32, adler32, fnv1a32 or fnv1a64",
                        algorithm);
    }
    /* JSON numbers are exact up to 2^53: give 64-bit values as text only. */
    if (value <= 0xFFFFFFFFull) {
        th_key(out, "value");
        th_int(out, (int64_t)value);
    }
    th_key(out, "bytes");
    th_int(out, (int64_t)len);
    th_object_end(out);
    return TH_OK;
}

static const char B64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static int b64_index(unsigned char c) {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+' || c == '-') return 62;
    if (c == '/' || c == '_') return 63;
    return -1;
}

static th_status c_base64(const th_input *in, th_output *out) {
    th_str text, mode;
    if (!th_get_string(in, "text", &text)) return th_error(out, TH_INVALID_INPUT, "`text` must be a string");
    if (!th_get_string(in, "mode", &mode)) return th_error(out, TH_INVALID_INPUT, "`mode` must be a string");
    const unsigned char *s = (const unsigned char *)text.ptr;

    if (strcmp(mode.ptr, "encode") == 0) {
        size_t n = (text.len + 2) / 3 * 4;
        char *buf = malloc(n + 1);
        if (!buf) return th_error(out, TH_FAILED, "out of memory");
        size_t j = 0;
        for (size_t i = 0; i < text.len; i += 3) {
            uint32_t v = (uint32_t)s[i] << 16;
            if (i + 1 < text.len) v |= (uint32_t)s[i + 1] << 8;
            if (i + 2 < text.len) v |= s[i + 2];
            buf[j++] = B64[(v >> 18) & 63];
            buf[j++] = B64[(v >> 12) & 63];
            buf[j++] = i + 1 < text.len ? B64[(v >> 6) & 63] : '=';
            buf[j++] = i + 2 < text.len ? B64[v & 63] : '=';
        }
        th_object_begin(out);
        th_key(out, "text");
        th_string(out, buf, j);
        th_object_end(out);
        free(buf);
        return TH_OK;
    }
    if (strcmp(mode.ptr, "decode") == 0) {
        char *buf = malloc(text.len / 4 * 3 + 3);
        if (!buf) return th_error(out, TH_FAILED, "out of memory");
        uint32_t acc = 0;
        int bits = 0;
        size_t j = 0;
        for (size_t i = 0; i < text.len; i++) {
            unsigned char c = s[i];
            if (c == '=' || c == '\n' || c == '\r' || c == ' ') continue;
            int v = b64_index(c);
            if (v < 0) {
                free(buf);
                return th_error(out, TH_INVALID_INPUT, "`text` is not base64: unexpected character at offset %zu", i);
            }
            acc = (acc << 6) | (uint32_t)v;
            bits += 6;
            if (bits >= 8) {
                bits -= 8;
                buf[j++] = (char)((acc >> bits) & 0xFF);
            }
        }
        /* Decoded bytes are reported as text; JSON cannot carry arbitrary bytes. */
        if (!th_utf8_valid(buf, j) || memchr(buf, 0, j)) {
            free(buf);
            return th_error(out, TH_INVALID_INPUT, "the decoded bytes are not UTF-8 text; only text can be returned");
        }
        th_object_begin(out);
        th_key(out, "text");
        th_string(out, buf, j);
        th_key(out, "bytes");
        th_int(out, (int64_t)j);
        th_object_end(out);
        free(buf);
        return TH_OK;
    }
    return th_error(out, TH_INVALID_INPUT, "unknown mode `%s`: use encode or decode", mode.ptr);
}

TOOLHOST_PLUGIN(
    {"c_hash",
     "Checksum or hash a text (UTF-8 bytes) with CRC-32, Adler-32, FNV-1a 32 or FNV-1a 64; returns the hex digest.",
     "{\"type\":\"object\",\"properties\":{"
     "\"text\":{\"type\":\"string\",\"description\":\"The text to hash.\"},"
     "\"algorithm\":{\"enum\":[\"crc32\",\"adler32\",\"fnv1a32\",\"fnv1a64\"],"
     "\"description\":\"Defaults to the plugin's configured default_algorithm (crc32).\"}},"
     "\"required\":[\"text\"],\"additionalProperties\":false}",
     c_hash},
    {"c_base64",
     "Encode text to base64 or decode base64 (standard or URL-safe alphabet) back to text.",
     "{\"type\":\"object\",\"properties\":{"
     "\"mode\":{\"enum\":[\"encode\",\"decode\"]},"
     "\"text\":{\"type\":\"string\",\"description\":\"Text to encode, or base64 to decode.\"}},"
     "\"required\":[\"mode\",\"text\"],\"additionalProperties\":false}",
     c_base64},
)
