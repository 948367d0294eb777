/*
 * railgauge: a small streaming JSON writer (one object or JSON Lines record
 * at a time) into a caller buffer or a FILE. Strings are escaped; numbers
 * that are not finite are written as null.
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
    int     need_comma[RG_JSON_MAX_DEPTH];
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
void rg_json_double(rg_json_t *js, double value);  /* %.17g-exact, shortest */
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

/* Writes the text plus '\n' to f and flushes (one JSON Lines record). */
rg_status_t rg_json_write_line(const rg_json_t *js, FILE *f, rg_err_t *err);

#endif /* RG_BASE_JSON_H */
