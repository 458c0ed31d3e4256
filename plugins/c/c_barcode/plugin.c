/*
 * c_barcode: draws a Code 128 barcode of a text as a PNG. Built by
 * plugins/c/build.sh, on toolhost:plugin@0.2.0: the image is a content
 * part, a summary of it the structured result (with an output schema),
 * progress is reported while the rows are encoded, and a call without a
 * text asks the user for one.
 *
 * Code 128 code set B (printable ASCII), with the mod-103 check symbol and
 * a quiet zone of ten modules each side; the PNG is 1-bit greyscale in
 * stored (uncompressed) deflate blocks, so nothing here needs zlib.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "toolhost.h"

/* Bar and space widths, in modules, of symbols 0-105 (each adds up to 11);
 * the stop symbol, 106, has a seventh bar. */
static const char *const CODE128[107] = {
    "212222", "222122", "222221", "121223", "121322", "131222", "122213", "122312", "132212", "221213",
    "221312", "231212", "112232", "122132", "122231", "113222", "123122", "123221", "223211", "221132",
    "221231", "213212", "223112", "312131", "311222", "321122", "321221", "312212", "322112", "322211",
    "212123", "212321", "232121", "111323", "131123", "131321", "112313", "132113", "132311", "211313",
    "231113", "231311", "112133", "112331", "132131", "113123", "113321", "133121", "313121", "211331",
    "231131", "213113", "213311", "213131", "311123", "311321", "331121", "312113", "312311", "332111",
    "314111", "221411", "431111", "111224", "111422", "121124", "121421", "141122", "141221", "112214",
    "112412", "122114", "122411", "142112", "142211", "241211", "221114", "413111", "241112", "134111",
    "111242", "121142", "121241", "114212", "124112", "124211", "411212", "421112", "421211", "212141",
    "214121", "412121", "111143", "111341", "131141", "114113", "114311", "411113", "411311", "113141",
    "114131", "311141", "411131", "211412", "211214", "211232", "2331112",
};
#define START_B 104
#define STOP 106
#define QUIET 10
#define MAX_TEXT 80

/* ---- PNG ---- */

static uint32_t crc_table[256];

static uint32_t crc32_update(uint32_t c, const unsigned char *s, size_t n) {
    if (!crc_table[1]) {
        for (uint32_t i = 0; i < 256; i++) {
            uint32_t k = i;
            for (int j = 0; j < 8; j++) k = (k >> 1) ^ (0xEDB88320u & (0u - (k & 1u)));
            crc_table[i] = k;
        }
    }
    for (size_t i = 0; i < n; i++) c = crc_table[(c ^ s[i]) & 0xFF] ^ (c >> 8);
    return c;
}

typedef struct {
    unsigned char *buf;
    size_t len, cap;
    int oom;
} bytes;

static void put(bytes *b, const void *s, size_t n) {
    if (b->oom || n == 0) return;
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 1024;
        while (cap < b->len + n) cap *= 2;
        unsigned char *grown = realloc(b->buf, cap);
        if (!grown) { b->oom = 1; return; }
        b->buf = grown;
        b->cap = cap;
    }
    memcpy(b->buf + b->len, s, n);
    b->len += n;
}

static void put_u32(bytes *b, uint32_t v) {
    unsigned char be[4] = {(unsigned char)(v >> 24), (unsigned char)(v >> 16), (unsigned char)(v >> 8), (unsigned char)v};
    put(b, be, 4);
}

static void put_chunk(bytes *png, const char type[4], const unsigned char *data, size_t len) {
    put_u32(png, (uint32_t)len);
    put(png, type, 4);
    put(png, data, len);
    uint32_t crc = crc32_update(0xFFFFFFFFu, (const unsigned char *)type, 4);
    put_u32(png, crc32_update(crc, data, len) ^ 0xFFFFFFFFu);
}

/* A zlib stream of stored deflate blocks holding `raw`. */
static void put_zlib_stored(bytes *z, const unsigned char *raw, size_t len) {
    put(z, "\x78\x01", 2);
    uint32_t a = 1, b = 0;
    for (size_t i = 0; i < len; i++) {
        a = (a + raw[i]) % 65521u;
        b = (b + a) % 65521u;
    }
    size_t at = 0;
    do {
        size_t n = len - at > 65535 ? 65535 : len - at;
        unsigned char head[5] = {at + n == len ? 1 : 0, (unsigned char)n, (unsigned char)(n >> 8),
                                 (unsigned char)~n, (unsigned char)(~n >> 8)};
        put(z, head, 5);
        put(z, raw + at, n);
        at += n;
    } while (at < len);
    put_u32(z, (b << 16) | a);
}

/* ---- the tool ---- */

static const char INPUT_SCHEMA[] =
    "{\"type\":\"object\",\"properties\":{"
    "\"text\":{\"type\":\"string\",\"maxLength\":80,"
    "\"description\":\"What the barcode encodes: 1 to 80 printable ASCII characters. "
    "Without it, the user is asked.\"},"
    "\"module_px\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":8,"
    "\"description\":\"Width of the narrowest bar in pixels (default 2).\"},"
    "\"height_px\":{\"type\":\"integer\",\"minimum\":10,\"maximum\":400,"
    "\"description\":\"Height of the bars in pixels (default 80).\"}},"
    "\"additionalProperties\":false}";

static const char OUTPUT_SCHEMA[] =
    "{\"type\":\"object\",\"properties\":{"
    "\"text\":{\"type\":\"string\",\"description\":\"What the barcode encodes.\"},"
    "\"symbology\":{\"const\":\"code128-b\"},"
    "\"check_symbol\":{\"type\":\"integer\",\"description\":\"The mod-103 check symbol.\"},"
    "\"width\":{\"type\":\"integer\"},\"height\":{\"type\":\"integer\"},"
    "\"bytes\":{\"type\":\"integer\",\"description\":\"Size of the PNG.\"}},"
    "\"required\":[\"text\",\"symbology\",\"check_symbol\",\"width\",\"height\",\"bytes\"],"
    "\"additionalProperties\":false}";

static const char QUESTION_SCHEMA[] =
    "{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\",\"title\":\"Text\","
    "\"description\":\"1 to 80 printable ASCII characters.\",\"maxLength\":80}},"
    "\"required\":[\"text\"]}";

/* The text to encode: the input's, or the user's answer to a question. */
static th_status text_to_encode(const th_input *in, th_output *out, th_str *text) {
    if (th_get_string(in, "text", text)) return TH_OK;
    th_answer answer = th_ask("What should the barcode encode?", QUESTION_SCHEMA);
    switch (answer.status) {
        case TH_ASK_ACCEPT:
            if (th_get_string(answer.form, "text", text)) return TH_OK;
            return th_error(out, TH_INVALID_INPUT, "the answer has no `text`");
        case TH_ASK_DECLINE:
        case TH_ASK_CANCEL:
            return th_error(out, TH_FAILED, "the user did not say what the barcode should encode");
        case TH_ASK_UNAVAILABLE:
            return th_error(out, TH_INVALID_INPUT, "`text` is missing, and no one can be asked for it here (%s): pass `text`",
                            answer.error);
        default:
            return th_error(out, TH_INVALID_INPUT, "`text` is missing, and asking the user for it failed (%s): pass `text`",
                            answer.error);
    }
}

static th_status c_barcode(const th_input *in, th_output *out) {
    th_str text;
    th_status status = text_to_encode(in, out, &text);
    if (status != TH_OK) return status;
    if (text.len == 0 || text.len > MAX_TEXT)
        return th_error(out, TH_INVALID_INPUT, "`text` must be 1 to %d characters, not %zu", MAX_TEXT, text.len);
    for (size_t i = 0; i < text.len; i++) {
        unsigned char c = (unsigned char)text.ptr[i];
        if (c < 32 || c > 126)
            return th_error(out, TH_INVALID_INPUT,
                            "`text` has a character Code 128 set B cannot encode at byte %zu: use printable ASCII", i);
    }
    int64_t module_px = 2, height = 80;
    th_get_int(in, "module_px", &module_px);
    th_get_int(in, "height_px", &height);

    /* Symbols: start B, the text, the check symbol, stop. */
    size_t count = text.len + 3;
    int symbols[MAX_TEXT + 3];
    symbols[0] = START_B;
    int check = START_B;
    for (size_t i = 0; i < text.len; i++) {
        symbols[i + 1] = text.ptr[i] - 32;
        check += symbols[i + 1] * (int)(i + 1);
    }
    check %= 103;
    symbols[text.len + 1] = check;
    symbols[text.len + 2] = STOP;

    /* One row of modules: 1 = bar. */
    size_t modules = 2 * QUIET + 11 * (count - 1) + 13;
    unsigned char row_modules[2 * QUIET + 11 * (MAX_TEXT + 2) + 13];
    size_t at = 0;
    memset(row_modules, 0, sizeof row_modules);
    at = QUIET;
    for (size_t s = 0; s < count; s++) {
        const char *widths = CODE128[symbols[s]];
        for (int e = 0; widths[e]; e++) {
            for (int k = 0; k < widths[e] - '0'; k++) row_modules[at++] = (e % 2 == 0);
        }
    }

    /* The image: 1-bit greyscale (0 black), each row a filter byte and the
     * packed pixels. Every row is the same. */
    size_t width = modules * (size_t)module_px;
    size_t stride = 1 + (width + 7) / 8;
    unsigned char *row = calloc(1, stride);
    unsigned char *raw = malloc(stride * (size_t)height);
    if (!row || !raw) {
        free(row);
        free(raw);
        return th_error(out, TH_FAILED, "out of memory for a %zu x %lld image", width, (long long)height);
    }
    for (size_t x = 0; x < width; x++) {
        if (!row_modules[x / (size_t)module_px]) row[1 + x / 8] |= (unsigned char)(0x80 >> (x % 8));
    }
    for (int64_t y = 0; y < height; y++) {
        memcpy(raw + stride * (size_t)y, row, stride);
        th_progress((double)(y + 1), (double)height, "encoding rows");
    }
    free(row);

    bytes png = {0}, idat = {0};
    put(&png, "\x89PNG\r\n\x1a\n", 8);
    unsigned char ihdr[13];
    ihdr[0] = (unsigned char)(width >> 24);
    ihdr[1] = (unsigned char)(width >> 16);
    ihdr[2] = (unsigned char)(width >> 8);
    ihdr[3] = (unsigned char)width;
    ihdr[4] = 0;
    ihdr[5] = 0;
    ihdr[6] = (unsigned char)(height >> 8);
    ihdr[7] = (unsigned char)height;
    ihdr[8] = 1; /* bit depth */
    ihdr[9] = 0; /* greyscale */
    ihdr[10] = ihdr[11] = ihdr[12] = 0;
    put_chunk(&png, "IHDR", ihdr, sizeof ihdr);
    put_zlib_stored(&idat, raw, stride * (size_t)height);
    free(raw);
    put_chunk(&png, "IDAT", idat.buf, idat.len);
    free(idat.buf);
    put_chunk(&png, "IEND", NULL, 0);
    if (png.oom || idat.oom) {
        free(png.buf);
        return th_error(out, TH_FAILED, "out of memory while encoding the PNG");
    }

    th_add_image(out, "image/png", png.buf, png.len);
    th_object_begin(out);
    th_key(out, "text");
    th_string(out, text.ptr, text.len);
    th_key(out, "symbology");
    th_cstring(out, "code128-b");
    th_key(out, "check_symbol");
    th_int(out, check);
    th_key(out, "width");
    th_int(out, (int64_t)width);
    th_key(out, "height");
    th_int(out, height);
    th_key(out, "bytes");
    th_int(out, (int64_t)png.len);
    th_object_end(out);
    free(png.buf);
    return TH_OK;
}

TOOLHOST_PLUGIN(
    {.name = "c_barcode",
     .description = "Draw a Code 128 barcode of a short text (printable ASCII) as a PNG image; "
                    "answers the image and a summary of it.",
     .input_schema = INPUT_SCHEMA,
     .run = c_barcode,
     .output_schema = OUTPUT_SCHEMA,
     .annotations = {.title = "Draw a barcode", .read_only = TH_YES, .idempotent = TH_YES, .open_world = TH_NO}},
)
