/*
 * railgauge: a small streaming JSON writer (see json.h).
 *
 * Errors are sticky: the first one is kept in js->status and every later
 * call does nothing, so a caller can write a whole record and check once, at
 * rg_json_text() or rg_json_write_line(). The buffer is kept NUL-terminated
 * after every call and is never written past cap.
 */
#include "base/json.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* need_comma[d - 1] describes the container open at depth d: whether a value
 * has been written in it (so the next one needs a comma) and whether it is an
 * object (so values need keys) or an array. */
#define RG__JSON_COMMA   0x1
#define RG__JSON_OBJECT  0x2

static void rg__json_fail(rg_json_t *js, rg_status_t status)
{
    if (js->status == RG_OK) {
        js->status = status;
    }
}

/* Appends n bytes, or fails with RG_ERR_RANGE where they and the NUL that
 * follows them do not fit. Nothing of the n bytes is appended on failure, so
 * the buffer stays NUL-terminated within cap. */
static void rg__json_put(rg_json_t *js, const char *s, size_t n)
{
    if (js->status != RG_OK) {
        return;
    }
    if (js->cap - js->len <= n) {
        rg__json_fail(js, RG_ERR_RANGE);
        return;
    }
    memcpy(js->buf + js->len, s, n);
    js->len += n;
    js->buf[js->len] = '\0';
}

static void rg__json_puts(rg_json_t *js, const char *s)
{
    rg__json_put(js, s, strlen(s));
}

/* Checks that a value may come here and writes the comma before it. Returns
 * 0 where the writer has failed (now or earlier). */
static int rg__json_value_begin(rg_json_t *js)
{
    int *state;

    if (js->status != RG_OK) {
        return 0;
    }
    if (js->depth == 0) {
        /* One top-level value per record (JSON Lines). */
        if (js->len > 0) {
            rg__json_fail(js, RG_ERR_INVALID);
            return 0;
        }
        return 1;
    }
    state = &js->need_comma[js->depth - 1];
    if (*state & RG__JSON_OBJECT) {
        /* In an object a value must follow its key. */
        if (!js->after_key) {
            rg__json_fail(js, RG_ERR_INVALID);
            return 0;
        }
        js->after_key = 0;
    } else if (*state & RG__JSON_COMMA) {
        rg__json_put(js, ",", 1);
    }
    *state |= RG__JSON_COMMA;
    return js->status == RG_OK;
}

void rg_json_init(rg_json_t *js, char *buf, size_t cap)
{
    if (js == NULL) {
        return;
    }
    memset(js, 0, sizeof(*js));
    js->buf    = buf;
    js->cap    = cap;
    js->status = RG_OK;
    if (buf == NULL || cap == 0) {
        /* No room even for the terminating NUL: every write would overflow. */
        js->status = (buf == NULL) ? RG_ERR_INVALID : RG_ERR_RANGE;
        js->cap    = 0;
        return;
    }
    buf[0] = '\0';
}

static void rg__json_open(rg_json_t *js, char c, int flags)
{
    if (js == NULL || !rg__json_value_begin(js)) {
        return;
    }
    if (js->depth >= RG_JSON_MAX_DEPTH) {
        rg__json_fail(js, RG_ERR_RANGE);
        return;
    }
    rg__json_put(js, &c, 1);
    if (js->status == RG_OK) {
        js->need_comma[js->depth++] = flags;
    }
}

static void rg__json_close(rg_json_t *js, char c, int flags)
{
    if (js == NULL || js->status != RG_OK) {
        return;
    }
    /* Closing what is not open, the wrong kind of container, or an object
     * whose last key has no value would all produce invalid JSON. */
    if (js->depth == 0 ||
        (js->need_comma[js->depth - 1] & RG__JSON_OBJECT) != flags ||
        js->after_key) {
        rg__json_fail(js, RG_ERR_INVALID);
        return;
    }
    rg__json_put(js, &c, 1);
    if (js->status == RG_OK) {
        js->depth--;
    }
}

void rg_json_object_begin(rg_json_t *js)
{
    rg__json_open(js, '{', RG__JSON_OBJECT);
}

void rg_json_object_end(rg_json_t *js)
{
    rg__json_close(js, '}', RG__JSON_OBJECT);
}

void rg_json_array_begin(rg_json_t *js)
{
    rg__json_open(js, '[', 0);
}

void rg_json_array_end(rg_json_t *js)
{
    rg__json_close(js, ']', 0);
}

/* RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF (the
 * second byte's range says which); shared with the reader (json_read.c). */
size_t rg__json_utf8_len(const unsigned char *s, const unsigned char *end)
{
    unsigned c = s[0], lo = 0x80, hi = 0xBF;
    size_t   n, i;

    if (c < 0x80) {
        return 1;
    }
    if (c >= 0xC2 && c <= 0xDF) {
        n = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        n  = 3;
        lo = c == 0xE0 ? 0xA0 : 0x80;   /* overlong below */
        hi = c == 0xED ? 0x9F : 0xBF;   /* UTF-16 surrogates above */
    } else if (c >= 0xF0 && c <= 0xF4) {
        n  = 4;
        lo = c == 0xF0 ? 0x90 : 0x80;   /* overlong below */
        hi = c == 0xF4 ? 0x8F : 0xBF;   /* above U+10FFFF */
    } else {
        return 0;
    }
    if ((size_t)(end - s) < n || s[1] < lo || s[1] > hi) {
        return 0;
    }
    for (i = 2; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80) {
            return 0;
        }
    }
    return n;
}

/* Writes s as a quoted JSON string. Control characters are escaped (the
 * common ones in their short form, the rest as \u00XX); bytes that are not
 * valid UTF-8 become U+FFFD, because a strict reader (Python's json on
 * bytes) rejects the whole record otherwise and such bytes come from outside
 * (host names, strerror text in some locale). */
static void rg__json_quoted(rg_json_t *js, const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    const unsigned char *run = p;
    const unsigned char *end = p + strlen(s);
    char                 esc[8];
    size_t               n;

    rg__json_put(js, "\"", 1);
    while (*p != '\0') {
        const char *rep = NULL;

        n = rg__json_utf8_len(p, end);
        if (n > 1) {
            p += n;
            continue;
        }
        switch (*p) {
        case '"':  rep = "\\\""; break;
        case '\\': rep = "\\\\"; break;
        case '\n': rep = "\\n";  break;
        case '\r': rep = "\\r";  break;
        case '\t': rep = "\\t";  break;
        default:
            if (n == 0) {
                rep = "\\ufffd";
            } else if (*p < 0x20) {
                snprintf(esc, sizeof(esc), "\\u%04x", (unsigned)*p);
                rep = esc;
            }
            break;
        }
        if (rep != NULL) {
            rg__json_put(js, (const char *)run, (size_t)(p - run));
            rg__json_puts(js, rep);
            run = p + 1;
        }
        p++;
    }
    rg__json_put(js, (const char *)run, (size_t)(p - run));
    rg__json_put(js, "\"", 1);
}

void rg_json_key(rg_json_t *js, const char *key)
{
    int *state;

    if (js == NULL || js->status != RG_OK) {
        return;
    }
    /* A key belongs in an object, once per value, and cannot be NULL. */
    if (js->depth == 0 || key == NULL || js->after_key ||
        !(js->need_comma[js->depth - 1] & RG__JSON_OBJECT)) {
        rg__json_fail(js, RG_ERR_INVALID);
        return;
    }
    state = &js->need_comma[js->depth - 1];
    if (*state & RG__JSON_COMMA) {
        rg__json_put(js, ",", 1);
    }
    rg__json_quoted(js, key);
    rg__json_put(js, ":", 1);
    if (js->status == RG_OK) {
        js->after_key = 1;
    }
}

void rg_json_string(rg_json_t *js, const char *value)
{
    if (js == NULL) {
        return;
    }
    if (value == NULL) {
        rg_json_null(js);
        return;
    }
    if (rg__json_value_begin(js)) {
        rg__json_quoted(js, value);
    }
}

void rg_json_int(rg_json_t *js, int64_t value)
{
    char text[24];

    if (js != NULL && rg__json_value_begin(js)) {
        snprintf(text, sizeof(text), "%" PRId64, value);
        rg__json_puts(js, text);
    }
}

void rg_json_uint(rg_json_t *js, uint64_t value)
{
    char text[24];

    if (js != NULL && rg__json_value_begin(js)) {
        snprintf(text, sizeof(text), "%" PRIu64, value);
        rg__json_puts(js, text);
    }
}

void rg_json_double(rg_json_t *js, double value)
{
    static const int precision[] = {15, 16, 17};
    char   text[40];
    size_t i;

    if (js == NULL) {
        return;
    }
    if (!isfinite(value)) {
        rg_json_null(js);
        return;
    }
    if (!rg__json_value_begin(js)) {
        return;
    }
    /* The shortest of %.15g, %.16g and %.17g that reads back as the same
     * double; %.17g always does, so the loop ends there at the latest. */
    for (i = 0; i < sizeof(precision) / sizeof(precision[0]); i++) {
        snprintf(text, sizeof(text), "%.*g", precision[i], value);
        if (strtod(text, NULL) == value) {
            break;
        }
    }
    /* A locale with a decimal comma would make invalid JSON. */
    for (i = 0; text[i] != '\0'; i++) {
        if (text[i] == ',') {
            text[i] = '.';
        }
    }
    /* "5" would read back as an integer in Python; "5.0" stays a float. */
    if (strpbrk(text, ".e") == NULL) {
        strcat(text, ".0");
    }
    rg__json_puts(js, text);
}

void rg_json_bool(rg_json_t *js, int value)
{
    if (js != NULL && rg__json_value_begin(js)) {
        rg__json_puts(js, value ? "true" : "false");
    }
}

void rg_json_null(rg_json_t *js)
{
    if (js != NULL && rg__json_value_begin(js)) {
        rg__json_puts(js, "null");
    }
}

void rg_json_raw(rg_json_t *js, const char *text)
{
    if (js == NULL || js->status != RG_OK) {
        return;
    }
    /* Empty text is no JSON value at all; the rest is trusted as is. */
    if (text == NULL || text[0] == '\0') {
        rg__json_fail(js, RG_ERR_INVALID);
        return;
    }
    if (rg__json_value_begin(js)) {
        rg__json_puts(js, text);
    }
}

void rg_json_kv_string(rg_json_t *js, const char *key, const char *value)
{
    rg_json_key(js, key);
    rg_json_string(js, value);
}

void rg_json_kv_int(rg_json_t *js, const char *key, int64_t value)
{
    rg_json_key(js, key);
    rg_json_int(js, value);
}

void rg_json_kv_uint(rg_json_t *js, const char *key, uint64_t value)
{
    rg_json_key(js, key);
    rg_json_uint(js, value);
}

void rg_json_kv_double(rg_json_t *js, const char *key, double value)
{
    rg_json_key(js, key);
    rg_json_double(js, value);
}

void rg_json_kv_bool(rg_json_t *js, const char *key, int value)
{
    rg_json_key(js, key);
    rg_json_bool(js, value);
}

const char *rg_json_text(const rg_json_t *js)
{
    if (js == NULL || js->status != RG_OK) {
        return NULL;
    }
    return js->buf;
}

rg_status_t rg_json_write_line(const rg_json_t *js, FILE *f, rg_err_t *err)
{
    if (js == NULL || f == NULL) {
        return rg_err_set(err, RG_ERR_INVALID, "rg_json_write_line: %s is NULL",
                          (js == NULL) ? "the writer" : "the file");
    }
    switch (js->status) {
    case RG_OK:
        break;
    case RG_ERR_RANGE:
        return rg_err_set(err, RG_ERR_RANGE, "JSON record did not fit its "
                          "%zu-byte buffer or nested deeper than %d levels",
                          js->cap, RG_JSON_MAX_DEPTH);
    case RG_ERR_INVALID:
        return rg_err_set(err, RG_ERR_INVALID, "JSON record is malformed: a "
                          "key outside an object, a value without its key, "
                          "an unmatched end or a second top-level value");
    default:
        return rg_err_set(err, js->status, "JSON writer failed: %s",
                          rg_status_string(js->status));
    }
    if (js->depth != 0 || js->after_key || js->len == 0) {
        return rg_err_set(err, RG_ERR_INVALID, "JSON record is incomplete: "
                          "%d container(s) still open%s", js->depth,
                          (js->len == 0) ? " and nothing written" : "");
    }
    if (fwrite(js->buf, 1, js->len, f) != js->len || fputc('\n', f) == EOF) {
        return rg_err_set_errno(err, RG_ERR_IO, errno,
                                "cannot write a %zu-byte JSON record", js->len);
    }
    if (fflush(f) != 0) {
        return rg_err_set_errno(err, RG_ERR_IO, errno,
                                "cannot flush a JSON record");
    }
    return RG_OK;
}
