/*
 * railgauge: a small streaming JSON writer (one object or JSON Lines record
 * at a time) into a caller buffer, written out with rg_json_write_line().
 * Commas are placed automatically. Strings are escaped (control characters
 * as \n, \r, \t or \u00XX; bytes that are not UTF-8 as \ufffd); a NULL
 * string is written as null, and so are numbers that are not finite.
 *
 * Errors are sticky: the first one is kept in status and later calls do
 * nothing. RG_ERR_RANGE: the text (and its NUL) does not fit cap, or nesting
 * deeper than RG_JSON_MAX_DEPTH. RG_ERR_INVALID: misuse that would make
 * invalid JSON (a key outside an object, a value in an object without its
 * key, an unmatched end, a second top-level value, a NULL buffer).
 */
#ifndef RG_BASE_JSON_H
#define RG_BASE_JSON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base/error.h"

#define RG_JSON_MAX_DEPTH 16

typedef struct rg_json {
    char   *buf;        /* output buffer (owned by the caller) */
    size_t  cap, len;
    int     depth;
    int     need_comma[RG_JSON_MAX_DEPTH]; /* per open container: bit 0 a
                                              value was written, bit 1 it is
                                              an object (json.c) */
    int     after_key;
    rg_status_t status; /* first error (RG_ERR_RANGE on overflow); sticky */
} rg_json_t;

void rg_json_init(rg_json_t *js, char *buf, size_t cap);
void rg_json_object_begin(rg_json_t *js);
void rg_json_object_end(rg_json_t *js);
void rg_json_array_begin(rg_json_t *js);
void rg_json_array_end(rg_json_t *js);
void rg_json_key(rg_json_t *js, const char *key);
void rg_json_string(rg_json_t *js, const char *value);
void rg_json_int(rg_json_t *js, int64_t value);
void rg_json_uint(rg_json_t *js, uint64_t value);
/* The shortest of %.15g, %.16g, %.17g that reads back as the same double;
 * a whole number gets ".0" (5.0, not 5) so that readers keep it a float. */
void rg_json_double(rg_json_t *js, double value);
void rg_json_bool(rg_json_t *js, int value);
void rg_json_null(rg_json_t *js);
/* Inserts already-formed JSON text as a value (e.g. a transport's info). */
void rg_json_raw(rg_json_t *js, const char *text);

/* Convenience: key + value. */
void rg_json_kv_string(rg_json_t *js, const char *key, const char *value);
void rg_json_kv_int(rg_json_t *js, const char *key, int64_t value);
void rg_json_kv_uint(rg_json_t *js, const char *key, uint64_t value);
void rg_json_kv_double(rg_json_t *js, const char *key, double value);
void rg_json_kv_bool(rg_json_t *js, const char *key, int value);

/* The text so far (NUL-terminated) or NULL after an error. */
const char *rg_json_text(const rg_json_t *js);

/* Writes the text plus '\n' to f and flushes (one JSON Lines record).
 * Nothing is written for a failed writer (its status, with a message) or an
 * incomplete record (RG_ERR_INVALID); RG_ERR_IO where the write fails. */
rg_status_t rg_json_write_line(const rg_json_t *js, FILE *f, rg_err_t *err);

/* Not public; shared with the reader (json_read.h): the length (1 to 4) of
 * the valid UTF-8 sequence at s, which ends before end, or 0 where it is not
 * one (overlong forms, surrogates and code points above U+10FFFF are not). */
size_t rg__json_utf8_len(const unsigned char *s, const unsigned char *end);

#endif /* RG_BASE_JSON_H */
