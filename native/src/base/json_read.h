/*
 * railgauge: the one JSON reader of the native side, beside the writer
 * (json.h): a strict RFC 8259 parser into a read-only tree.
 *
 *   rg_json_doc_t doc;
 *   if (rg_json_parse(&doc, text, len, NULL, &err) != RG_OK) ... err says
 *       "line 3, column 17: ',' or '}' expected" (and doc.err_* the parts);
 *   double L;
 *   if (!rg_json_as_double(rg_json_get(rg_json_at(rg_json_get(
 *           rg_json_root(&doc), "ranges"), 0), "L_us"), &L)) ... no such number;
 *   rg_json_doc_fini(&doc);
 *
 * Every lookup takes NULL for "absent" and gives NULL where the value is
 * absent or of another type, so a path of lookups needs one check at its end.
 *
 * Why our own and not a library (DESIGN.md names one from Debian): the PMPI
 * library (native/pmpi) reads model files and is LD_PRELOADed into other
 * people's MPI programs, where a shared json-c or jansson of ours could clash
 * with the one the program already loaded (another version under the same
 * symbols); and the lent build machines build from source with no package
 * installs. The files we read are small and written by our own Python, so a
 * few hundred lines that we test and fuzz (tests/fuzz/json_fuzz.c) cost less
 * than the dependency.
 *
 * Strict: exactly one value (any type) with optional whitespace around it; no
 * comments, trailing commas, single quotes, NaN/Infinity, leading zeros or
 * byte order mark; strings must be UTF-8 (no overlong forms, no surrogates
 * encoded directly) without raw control characters; \u escapes are decoded,
 * a surrogate pair into one character, and a lone surrogate is an error (it
 * has no UTF-8 form). Numbers are read with strtod in the C locale (a program
 * that set another LC_NUMERIC does not change them): one beyond the range of
 * a double is an error, one below its smallest becomes 0 or subnormal (as
 * Python's json reads it). Duplicate keys: the last one wins, as in Python's
 * json module, which writes these files and reads them elsewhere, so that
 * both sides read one file alike.
 *
 * Limits (rg_json_limits_t; 0 or NULL: the defaults below): the text's size,
 * the nesting of arrays and objects, and the number of values, so that a
 * hostile file costs bounded time, stack and memory. A document's tree and
 * its decoded strings live in blocks that rg_json_doc_fini() frees at once;
 * the text may be freed right after rg_json_parse().
 *
 * Errors: RG_ERR_PARSE for text that is not JSON, RG_ERR_RANGE for a limit or
 * a number out of range, both with the line and column (1-based, the column
 * in characters) in the message and in doc->err_line, doc->err_col and
 * doc->err_what, so that a caller can name its file its own way;
 * RG_ERR_NOMEM; RG_ERR_INVALID for NULL arguments or bad limits.
 */
#ifndef RG_BASE_JSON_READ_H
#define RG_BASE_JSON_READ_H

#include <stddef.h>

#include "base/error.h"

#define RG_JSON_READ_MAX_BYTES  ((size_t)64 << 20) /* default text size limit */
#define RG_JSON_READ_MAX_DEPTH  64u                /* default nesting limit */
#define RG_JSON_READ_DEPTH_CAP  1024u              /* the most a caller may ask (stack) */
#define RG_JSON_READ_MAX_VALUES ((size_t)1 << 22)  /* default value count limit */

typedef enum rg_json_type {
    RG_JSON_ABSENT = 0, /* no value: a key not found, an index past the end, NULL */
    RG_JSON_NULL,
    RG_JSON_BOOL,
    RG_JSON_NUMBER,
    RG_JSON_STRING,
    RG_JSON_ARRAY,
    RG_JSON_OBJECT
} rg_json_type_t;

/* One value of a parsed document (json_read.c); read-only, owned by it. */
typedef struct rg_json_val rg_json_val_t;

typedef struct rg_json_limits {
    size_t   max_bytes;  /* the text; 0: RG_JSON_READ_MAX_BYTES */
    unsigned max_depth;  /* arrays and objects inside each other; 0: RG_JSON_READ_MAX_DEPTH */
    size_t   max_values; /* values of every kind; 0: RG_JSON_READ_MAX_VALUES */
} rg_json_limits_t;

/* A parsed document: the caller's struct, the tree in blocks it owns. */
typedef struct rg_json_doc {
    rg_json_val_t         *root;     /* NULL until a parse succeeds */
    struct rg__json_block *blocks;   /* json_read.c */
    unsigned               err_line; /* where the last parse failed (0: nowhere */
    unsigned               err_col;  /* in particular, as for a text too long) */
    char                   err_what[160];
} rg_json_doc_t;

/* Parses text[0..len) (no NUL needed; a NUL in it is an error) into doc,
 * which it initializes whatever the outcome: rg_json_doc_fini() is always
 * right afterwards. limits may be NULL. See the header comment for the
 * errors. */
rg_status_t rg_json_parse(rg_json_doc_t *doc, const char *text, size_t len,
                          const rg_json_limits_t *limits, rg_err_t *err);

/* Frees the tree; doc is empty afterwards (a second call does nothing). */
void rg_json_doc_fini(rg_json_doc_t *doc);

/* The document's value; NULL for a document that did not parse. */
const rg_json_val_t *rg_json_root(const rg_json_doc_t *doc);

/* The value's type; RG_JSON_ABSENT for NULL. */
rg_json_type_t rg_json_type(const rg_json_val_t *v);

/* "an object", "a number", ..., "nothing" (ABSENT), for messages. */
const char *rg_json_type_name(rg_json_type_t type);

/* Where the value starts in its text (line and column, 1-based; 0 for NULL). */
void rg_json_where(const rg_json_val_t *v, unsigned *line_p, unsigned *col_p);

/* The member `key` of an object (the last of that name); NULL where obj is not
 * an object or has no such member. A key with a \u0000 in it is never found. */
const rg_json_val_t *rg_json_get(const rg_json_val_t *obj, const char *key);

/* The number of elements of an array or members of an object; 0 else. */
size_t rg_json_count(const rg_json_val_t *v);

/* Element i of an array (counted from 0; O(i)); NULL where there is none. */
const rg_json_val_t *rg_json_at(const rg_json_val_t *arr, size_t i);

/* Iteration over an array's elements or an object's members, in the
 * document's order: for (e = rg_json_first(a); e != NULL; e = rg_json_next(e)). */
const rg_json_val_t *rg_json_first(const rg_json_val_t *container);
const rg_json_val_t *rg_json_next(const rg_json_val_t *v);

/* A member's key (decoded, NUL-terminated; *len_p, if not NULL, its length
 * in bytes, as for strings); NULL for a value that is no object's member. */
const char *rg_json_member_key(const rg_json_val_t *member, size_t *len_p);

/* Typed getters: 1 and the value where v is of that type, else 0 and *out
 * untouched. */
int rg_json_as_double(const rg_json_val_t *v, double *out);
int rg_json_as_bool(const rg_json_val_t *v, int *out);
/* A string's text (decoded UTF-8, NUL-terminated; it may hold a NUL itself
 * where the JSON had \u0000: *len_p, if not NULL, is its length in bytes);
 * NULL where v is not a string. */
const char *rg_json_as_string(const rg_json_val_t *v, size_t *len_p);
/* 1 where v is a string equal to s, else 0. */
int rg_json_string_is(const rg_json_val_t *v, const char *s);
/* 1 where v is null (not where it is absent). */
int rg_json_is_null(const rg_json_val_t *v);

#endif /* RG_BASE_JSON_READ_H */
