/*
 * railgauge: settings as tables, never a bare getenv (STYLE.md, 5).
 *
 * Each component declares a table of {name, default, help, offset, parser};
 * rg_config_load() fills a struct from the defaults, then from the
 * environment variable RG_<PREFIX>_<NAME> (or a former name of it, an alias),
 * and reports a bad value with its variable's name. rg_config_print() lists
 * every setting with its value.
 */
#ifndef RG_BASE_CONFIG_H
#define RG_BASE_CONFIG_H

#include <stddef.h>
#include <stdio.h>

#include "base/error.h"

typedef enum rg_config_type {
    RG_CONFIG_SIZE = 1,   /* size_t; accepts 4096, 64k, 64KiB, 1m, 1MiB, 1g */
    RG_CONFIG_INT,        /* int */
    RG_CONFIG_DOUBLE,     /* double */
    RG_CONFIG_TIME_NS,    /* double ns; accepts 500ns, 10us, 1.5ms, 2s; no unit: ns */
    RG_CONFIG_STRING,     /* char[RG_CONFIG_STRING_MAX] */
    RG_CONFIG_PATH        /* char[RG_CONFIG_PATH_MAX]: a file or directory name */
} rg_config_type_t;

#define RG_CONFIG_STRING_MAX 256
#define RG_CONFIG_PATH_MAX   4096

typedef struct rg_config_field {
    const char       *name;    /* "RING_SIZE" -> RG_SHM_RING_SIZE */
    const char       *dflt;    /* default, as text with units */
    const char       *help;
    size_t            offset;  /* offsetof(struct, field) */
    rg_config_type_t  type;
} rg_config_field_t;

typedef struct rg_config_table {
    const char              *prefix;  /* "SHM" */
    const rg_config_field_t *fields;  /* ends with a {NULL} entry */
} rg_config_table_t;

/* A setting's former name, still read: where RG_<prefix>_<name> is unset,
 * the first of its aliases that is set gives the value (so the RG_ name wins
 * where both are set, even set empty). A separate list, ending with {NULL},
 * passed to the *_aliased functions, so that the tables' entries keep their
 * five members. */
typedef struct rg_config_alias {
    const char *name;  /* the field's name: "BARRIER" */
    const char *env;   /* the whole former variable: "RAILGAUGE_BARRIER" */
} rg_config_alias_t;

/* Parses `text` as the field's type into the struct at base; the struct is
 * untouched on error (RG_ERR_PARSE, with a message naming the field and
 * quoting the text). Whitespace around the value is ignored. */
rg_status_t rg_config_parse(const rg_config_field_t *field, const char *text,
                            void *base, rg_err_t *err);

/* Defaults, then RG_<prefix>_<name> from the environment (RG_<name> for an
 * empty prefix). A bad variable gives RG_ERR_PARSE naming the variable and
 * its value; a bad default (a bug in the table) RG_ERR_INVALID. A variable
 * that is set but empty is a bad value, not "unset". Every field is checked
 * before any is stored, so on error the struct is as it was. */
rg_status_t rg_config_load(const rg_config_table_t *table, void *base, rg_err_t *err);

/* As rg_config_load, reading the aliases too (NULL: none); a bad value read
 * through an alias is reported under the alias's name. */
rg_status_t rg_config_load_aliased(const rg_config_table_t *table,
                                   const rg_config_alias_t *aliases, void *base,
                                   rg_err_t *err);

/* The variable the field `name` is read from now, into out: its RG_ name
 * where that is set, else the first of its aliases that is set, else its
 * RG_ name (for messages that name what the user set). RG_ERR_NOT_FOUND for
 * a name not in the table, RG_ERR_RANGE where out is too small. */
rg_status_t rg_config_source(const rg_config_table_t *table, const rg_config_alias_t *aliases,
                             const char *name, char *out, size_t cap, rg_err_t *err);

/* 1 when the variable of the field `name` (or one of its aliases) is set:
 * the user chose its value, which a tool's own default must not override;
 * 0 when it is not set or the table has no such field. */
int rg_config_given(const rg_config_table_t *table, const rg_config_alias_t *aliases,
                    const char *name);

/* One aligned line per field: variable, value, "(default ...)", help.
 * Sizes print in the largest exact binary unit (3MiB), times in the largest
 * unit that keeps them at least 1 (1.5ms). With base NULL the defaults are
 * listed as the values (for documentation). */
void rg_config_print(const rg_config_table_t *table, const void *base, FILE *out);

/* As rg_config_print; a field with aliases says so after its help:
 * "(formerly RAILGAUGE_BARRIER, still read)". */
void rg_config_print_aliased(const rg_config_table_t *table, const rg_config_alias_t *aliases,
                             const void *base, FILE *out);

/* Parses a size with an optional binary unit: b/B, k/K/KB/KiB = 1024,
 * m/M/MB/MiB = 2^20, g/G/GB/GiB = 2^30 (case-insensitive, kB is 1024 too);
 * "1MiB" -> 1048576. A decimal fraction is allowed where the result is a
 * whole number of bytes ("1.5k" -> 1536). Negative, fractional-byte ("0.5",
 * "1.1k"), overflowing or malformed text gives RG_ERR_PARSE with a message
 * quoting the text; NULL text or out gives RG_ERR_INVALID. */
rg_status_t rg_parse_size(const char *text, size_t *out, rg_err_t *err);

#endif /* RG_BASE_CONFIG_H */
