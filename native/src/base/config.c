/*
 * railgauge: settings as tables (see config.h).
 *
 * Parsing is strict: a value that is not entirely understood is an error
 * naming the text, never a silent 0 or a prefix taken at face value, because
 * a benchmark run with a misread setting produces numbers that look right.
 * Whitespace around a value is allowed, since shell quoting often adds it.
 */
#include "base/config.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Environment variable names: "RG_" + prefix + "_" + name. */
#define RG__CONFIG_ENV_MAX     128
/* Enough digits after the point for any exact binary size; more are
 * rejected rather than rounded, so that the arithmetic stays exact. */
#define RG__CONFIG_SIZE_FRAC_MAX 9

/* Scratch room for one parsed value of any type. */
typedef union rg__config_value {
    size_t size;
    int    i;
    double d;
    char   s[RG_CONFIG_PATH_MAX]; /* a string or a path */
} rg__config_value_t;

typedef struct rg__config_unit {
    const char *name;
    double      scale;
} rg__config_unit_t;

static const rg__config_unit_t rg__config_size_units[] = {
    {"",    1.0},
    {"b",   1.0},
    {"k",   1024.0},
    {"kb",  1024.0},
    {"kib", 1024.0},
    {"m",   1048576.0},
    {"mb",  1048576.0},
    {"mib", 1048576.0},
    {"g",   1073741824.0},
    {"gb",  1073741824.0},
    {"gib", 1073741824.0},
    {NULL,  0.0}
};

static const rg__config_unit_t rg__config_time_units[] = {
    {"",   1.0},
    {"ns", 1.0},
    {"us", 1e3},
    {"ms", 1e6},
    {"s",  1e9},
    {NULL, 0.0}
};

/* Finds the unit named by unit[0..len-1], case-insensitively. */
static const rg__config_unit_t *
rg__config_unit_find(const rg__config_unit_t *units, const char *unit, size_t len)
{
    for (; units->name != NULL; units++) {
        if (strlen(units->name) == len && strncasecmp(units->name, unit, len) == 0) {
            return units;
        }
    }
    return NULL;
}

/* Splits text into a number and a unit: *num_p and *num_len_p cover the digits,
 * one optional decimal point and (where allow_exp) an exponent; *unit_p and
 * *unit_len_p cover the rest without surrounding whitespace. Returns 0 where
 * no digit starts the text (a sign, nothing, or garbage). */
static int rg__config_split(const char *text, int allow_exp,
                            const char **num_p, size_t *num_len_p,
                            const char **unit_p, size_t *unit_len_p)
{
    const char *p = text, *num, *end;
    int         digits = 0;

    while (isspace((unsigned char)*p)) {
        p++;
    }
    num = p;
    while (isdigit((unsigned char)*p)) {
        p++;
        digits++;
    }
    if (*p == '.') {
        p++;
        while (isdigit((unsigned char)*p)) {
            p++;
            digits++;
        }
    }
    if (digits == 0) {
        return 0;
    }
    if (allow_exp && (*p == 'e' || *p == 'E')) {
        const char *q = p + 1;

        if (*q == '+' || *q == '-') {
            q++;
        }
        /* "1e" or "2ex" are left for the unit check to reject. */
        if (isdigit((unsigned char)*q)) {
            while (isdigit((unsigned char)*q)) {
                q++;
            }
            p = q;
        }
    }
    *num_p     = num;
    *num_len_p = (size_t)(p - num);

    while (isspace((unsigned char)*p)) {
        p++;
    }
    end = p + strlen(p);
    while (end > p && isspace((unsigned char)end[-1])) {
        end--;
    }
    *unit_p     = p;
    *unit_len_p = (size_t)(end - p);
    return 1;
}

rg_status_t rg_parse_size(const char *text, size_t *out, rg_err_t *err)
{
    static const char         expect[] = "expected a whole number of bytes "
                                         "with an optional unit b, k/kB/KiB, "
                                         "m/MB/MiB or g/GB/GiB";
    const rg__config_unit_t  *unit;
    const char               *num, *unit_text, *p;
    size_t                    num_len, unit_len;
    uint64_t                  whole = 0, frac = 0, frac_div = 1, scale, value;
    int                       frac_digits = 0;

    if (text == NULL || out == NULL) {
        return rg_err_set(err, RG_ERR_INVALID, "rg_parse_size: %s is NULL",
                          (text == NULL) ? "text" : "out");
    }
    if (!rg__config_split(text, 0, &num, &num_len, &unit_text, &unit_len)) {
        return rg_err_set(err, RG_ERR_PARSE, "invalid size '%s': %s", text, expect);
    }
    unit = rg__config_unit_find(rg__config_size_units, unit_text, unit_len);
    if (unit == NULL) {
        return rg_err_set(err, RG_ERR_PARSE, "invalid size '%s': unknown unit "
                          "'%.*s' (%s)", text, (int)unit_len, unit_text, expect);
    }
    scale = (uint64_t)unit->scale;

    /* Exact integer arithmetic throughout: a double would round sizes above
     * 2^53 and make "0.1k" look like a whole number of bytes. */
    for (p = num; p < num + num_len && *p != '.'; p++) {
        unsigned d = (unsigned)(*p - '0');

        if (whole > (UINT64_MAX - d) / 10) {
            goto overflow;
        }
        whole = whole * 10 + d;
    }
    if (p < num + num_len) {
        for (p++; p < num + num_len; p++) {
            if (++frac_digits > RG__CONFIG_SIZE_FRAC_MAX) {
                return rg_err_set(err, RG_ERR_PARSE, "invalid size '%s': more "
                                  "than %d decimal places", text,
                                  RG__CONFIG_SIZE_FRAC_MAX);
            }
            frac      = frac * 10 + (uint64_t)(*p - '0');
            frac_div *= 10;
        }
    }

    /* frac < 10^9 and scale <= 2^30, so frac * scale cannot overflow. */
    if ((frac * scale) % frac_div != 0) {
        return rg_err_set(err, RG_ERR_PARSE, "invalid size '%s': not a whole "
                          "number of bytes", text);
    }
    if (whole > UINT64_MAX / scale) {
        goto overflow;
    }
    value = whole * scale;
    if (value > UINT64_MAX - (frac * scale) / frac_div) {
        goto overflow;
    }
    value += (frac * scale) / frac_div;
    if (value > SIZE_MAX) {
        goto overflow;
    }
    *out = (size_t)value;
    return RG_OK;

overflow:
    return rg_err_set(err, RG_ERR_PARSE, "invalid size '%s': larger than the "
                      "largest size, %zu bytes", text, (size_t)SIZE_MAX);
}

static rg_status_t rg__config_parse_time_ns(const char *text, double *out,
                                            rg_err_t *err)
{
    const rg__config_unit_t *unit;
    const char              *num, *unit_text;
    char                     numbuf[64], *end;
    size_t                   num_len, unit_len;
    double                   value;

    if (!rg__config_split(text, 1, &num, &num_len, &unit_text, &unit_len)) {
        return rg_err_set(err, RG_ERR_PARSE, "invalid time '%s': expected a "
                          "non-negative number with an optional unit ns, us, "
                          "ms or s (no unit: ns)", text);
    }
    unit = rg__config_unit_find(rg__config_time_units, unit_text, unit_len);
    if (unit == NULL) {
        return rg_err_set(err, RG_ERR_PARSE, "invalid time '%s': unknown unit "
                          "'%.*s' (expected ns, us, ms or s)", text,
                          (int)unit_len, unit_text);
    }
    /* The number was already checked to be plain decimal (no sign, hex, inf
     * or nan, which strtod would accept), so strtod only converts it. */
    if (num_len >= sizeof(numbuf)) {
        return rg_err_set(err, RG_ERR_PARSE, "invalid time '%s': number too "
                          "long", text);
    }
    memcpy(numbuf, num, num_len);
    numbuf[num_len] = '\0';
    value = strtod(numbuf, &end) * unit->scale;
    if (*end != '\0' || !isfinite(value)) {
        return rg_err_set(err, RG_ERR_PARSE, "invalid time '%s': out of range",
                          text);
    }
    *out = value;
    return RG_OK;
}

static rg_status_t rg__config_parse_int(const char *text, int *out, rg_err_t *err)
{
    char *end;
    long  value;

    errno = 0;
    value = strtol(text, &end, 10);
    while (end != text && isspace((unsigned char)*end)) {
        end++;
    }
    if (end == text || *end != '\0') {
        return rg_err_set(err, RG_ERR_PARSE, "invalid integer '%s'", text);
    }
    if (errno == ERANGE || value < INT_MIN || value > INT_MAX) {
        return rg_err_set(err, RG_ERR_PARSE, "integer '%s' is out of range "
                          "[%d, %d]", text, INT_MIN, INT_MAX);
    }
    *out = (int)value;
    return RG_OK;
}

static rg_status_t rg__config_parse_double(const char *text, double *out,
                                           rg_err_t *err)
{
    char   *end;
    double  value;

    errno = 0;
    value = strtod(text, &end);
    while (end != text && isspace((unsigned char)*end)) {
        end++;
    }
    if (end == text || *end != '\0') {
        return rg_err_set(err, RG_ERR_PARSE, "invalid number '%s'", text);
    }
    if (!isfinite(value)) {
        return rg_err_set(err, RG_ERR_PARSE, "number '%s' is not finite", text);
    }
    *out = value;
    return RG_OK;
}

/* The size of a field's destination in the struct, or 0 for a bad type. */
static size_t rg__config_type_size(rg_config_type_t type)
{
    switch (type) {
    case RG_CONFIG_SIZE:    return sizeof(size_t);
    case RG_CONFIG_INT:     return sizeof(int);
    case RG_CONFIG_DOUBLE:  return sizeof(double);
    case RG_CONFIG_TIME_NS: return sizeof(double);
    case RG_CONFIG_STRING:  return RG_CONFIG_STRING_MAX;
    case RG_CONFIG_PATH:    return RG_CONFIG_PATH_MAX;
    }
    return 0;
}

/* Parses text as the field's type into *val; the message does not name the
 * field, which the caller knows best how to name. */
static rg_status_t rg__config_parse_value(const rg_config_field_t *field,
                                          const char *text,
                                          rg__config_value_t *val, rg_err_t *err)
{
    size_t len;

    switch (field->type) {
    case RG_CONFIG_SIZE:
        return rg_parse_size(text, &val->size, err);
    case RG_CONFIG_INT:
        return rg__config_parse_int(text, &val->i, err);
    case RG_CONFIG_DOUBLE:
        return rg__config_parse_double(text, &val->d, err);
    case RG_CONFIG_TIME_NS:
        return rg__config_parse_time_ns(text, &val->d, err);
    case RG_CONFIG_STRING:
    case RG_CONFIG_PATH:
        len = strlen(text);
        if (len >= rg__config_type_size(field->type)) {
            return rg_err_set(err, RG_ERR_PARSE, "string of %zu characters is "
                              "longer than the limit of %zu", len,
                              rg__config_type_size(field->type) - 1);
        }
        memcpy(val->s, text, len + 1);
        return RG_OK;
    }
    return rg_err_set(err, RG_ERR_INVALID, "unknown setting type %d",
                      (int)field->type);
}

rg_status_t rg_config_parse(const rg_config_field_t *field, const char *text,
                            void *base, rg_err_t *err)
{
    rg__config_value_t val;
    rg_err_t           inner;
    rg_status_t        status;

    if (field == NULL || field->name == NULL || text == NULL || base == NULL) {
        return rg_err_set(err, RG_ERR_INVALID, "rg_config_parse: %s is NULL",
                          (field == NULL || field->name == NULL) ? "field" :
                          (text == NULL) ? "text" : "base");
    }
    memset(&val, 0, sizeof(val));
    rg_err_clear(&inner);
    status = rg__config_parse_value(field, text, &val, &inner);
    if (status != RG_OK) {
        return rg_err_set(err, status, "%s: %s", field->name, inner.msg);
    }
    /* Only a value that parsed reaches the struct. */
    memcpy((char *)base + field->offset, &val, rg__config_type_size(field->type));
    return RG_OK;
}

static rg_status_t rg__config_env_name(const rg_config_table_t *table,
                                       const rg_config_field_t *field,
                                       char *name, size_t len, rg_err_t *err)
{
    int n;

    if (table->prefix != NULL && table->prefix[0] != '\0') {
        n = snprintf(name, len, "RG_%s_%s", table->prefix, field->name);
    } else {
        n = snprintf(name, len, "RG_%s", field->name);
    }
    if (n < 0 || (size_t)n >= len) {
        return rg_err_set(err, RG_ERR_INVALID, "setting name RG_%s_%s is "
                          "longer than %zu characters",
                          (table->prefix != NULL) ? table->prefix : "",
                          field->name, len - 1);
    }
    return RG_OK;
}

/* The variable the field is read from (its RG_ name where set, else its
 * first alias that is set, else its RG_ name) into env, and its text (NULL:
 * none is set) into *text_p. */
static rg_status_t rg__config_field_env(const rg_config_table_t *table,
                                        const rg_config_alias_t *aliases,
                                        const rg_config_field_t *field, char *env,
                                        size_t len, const char **text_p, rg_err_t *err)
{
    const rg_config_alias_t *a;
    rg_status_t              status;

    status = rg__config_env_name(table, field, env, len, err);
    if (status != RG_OK) {
        return status;
    }
    *text_p = getenv(env);
    for (a = aliases; *text_p == NULL && a != NULL && a->name != NULL; a++) {
        if (strcmp(a->name, field->name) == 0 && a->env != NULL &&
            (*text_p = getenv(a->env)) != NULL) {
            snprintf(env, len, "%s", a->env);
        }
    }
    return RG_OK;
}

/* Parses the field's default, then its environment variable where set, into
 * *val. A bad default is a bug in the table (RG_ERR_INVALID); a bad variable
 * is the user's (RG_ERR_PARSE), and its message names variable and value. */
static rg_status_t rg__config_field_load(const rg_config_table_t *table,
                                         const rg_config_alias_t *aliases,
                                         const rg_config_field_t *field,
                                         rg__config_value_t *val, rg_err_t *err)
{
    char         env[RG__CONFIG_ENV_MAX];
    const char  *text;
    rg_err_t     inner;
    rg_status_t  status;

    status = rg__config_field_env(table, aliases, field, env, sizeof(env), &text, err);
    if (status != RG_OK) {
        return status;
    }
    if (field->dflt == NULL) {
        return rg_err_set(err, RG_ERR_INVALID, "setting %s has no default", env);
    }
    /* Zeroed so that the bytes after a string are defined when copied. */
    memset(val, 0, sizeof(*val));
    rg_err_clear(&inner);
    status = rg__config_parse_value(field, field->dflt, val, &inner);
    if (status != RG_OK) {
        return rg_err_set(err, RG_ERR_INVALID, "default of %s is invalid: %s",
                          env, inner.msg);
    }
    if (text == NULL) {
        return RG_OK;
    }
    status = rg__config_parse_value(field, text, val, &inner);
    if (status != RG_OK) {
        return rg_err_set(err, status, "environment variable %s='%s': %s",
                          env, text, inner.msg);
    }
    return RG_OK;
}

rg_status_t rg_config_load(const rg_config_table_t *table, void *base, rg_err_t *err)
{
    return rg_config_load_aliased(table, NULL, base, err);
}

rg_status_t rg_config_load_aliased(const rg_config_table_t *table,
                                   const rg_config_alias_t *aliases, void *base,
                                   rg_err_t *err)
{
    const rg_config_field_t *field;
    rg__config_value_t       val;
    rg_status_t              status;

    if (table == NULL || table->fields == NULL || base == NULL) {
        return rg_err_set(err, RG_ERR_INVALID, "rg_config_load: %s is NULL",
                          (table == NULL) ? "table" :
                          (table->fields == NULL) ? "table->fields" : "base");
    }
    /* Every field is checked before any is stored, so that a bad value
     * leaves the whole struct as it was rather than half loaded. */
    for (field = table->fields; field->name != NULL; field++) {
        status = rg__config_field_load(table, aliases, field, &val, err);
        if (status != RG_OK) {
            return status;
        }
    }
    /* The second pass parses the same texts again and cannot fail unless
     * another thread changes the environment in between. */
    for (field = table->fields; field->name != NULL; field++) {
        status = rg__config_field_load(table, aliases, field, &val, err);
        if (status != RG_OK) {
            return status;
        }
        memcpy((char *)base + field->offset, &val, rg__config_type_size(field->type));
    }
    return RG_OK;
}

/* Writes a size in the largest binary unit that divides it exactly, in a
 * form rg_parse_size() reads back. */
static void rg__config_format_size(size_t v, char *buf, size_t len)
{
    if (v != 0 && v % 1073741824u == 0) {
        snprintf(buf, len, "%zuGiB", v / 1073741824u);
    } else if (v != 0 && v % 1048576u == 0) {
        snprintf(buf, len, "%zuMiB", v / 1048576u);
    } else if (v != 0 && v % 1024u == 0) {
        snprintf(buf, len, "%zuKiB", v / 1024u);
    } else {
        snprintf(buf, len, "%zu", v);
    }
}

/* Writes a time in the largest unit in which it is at least 1. */
static void rg__config_format_time(double ns, char *buf, size_t len)
{
    if (ns >= 1e9) {
        snprintf(buf, len, "%.15gs", ns / 1e9);
    } else if (ns >= 1e6) {
        snprintf(buf, len, "%.15gms", ns / 1e6);
    } else if (ns >= 1e3) {
        snprintf(buf, len, "%.15gus", ns / 1e3);
    } else {
        snprintf(buf, len, "%.15gns", ns);
    }
}

/* Formats the field's current value, or its default text where base is
 * NULL (to list the settings without a struct, e.g. for documentation). */
static void rg__config_format(const rg_config_field_t *field, const void *base,
                              char *buf, size_t len)
{
    const char *p;

    if (base == NULL) {
        snprintf(buf, len, "%s", (field->dflt != NULL) ? field->dflt : "");
    } else {
        p = (const char *)base + field->offset;
        switch (field->type) {
        case RG_CONFIG_SIZE: {
            size_t v;

            memcpy(&v, p, sizeof(v));
            rg__config_format_size(v, buf, len);
            break;
        }
        case RG_CONFIG_INT: {
            int v;

            memcpy(&v, p, sizeof(v));
            snprintf(buf, len, "%d", v);
            break;
        }
        case RG_CONFIG_DOUBLE:
        case RG_CONFIG_TIME_NS: {
            double v;

            memcpy(&v, p, sizeof(v));
            if (field->type == RG_CONFIG_TIME_NS) {
                rg__config_format_time(v, buf, len);
            } else {
                snprintf(buf, len, "%.15g", v);
            }
            break;
        }
        case RG_CONFIG_STRING:
        case RG_CONFIG_PATH:
            snprintf(buf, len, "%.*s", (int)rg__config_type_size(field->type) - 1, p);
            break;
        default:
            snprintf(buf, len, "?");
            break;
        }
    }
    /* An empty value would leave a gap that reads as a missing column. */
    if (buf[0] == '\0') {
        snprintf(buf, len, "\"\"");
    }
}

/* "(formerly A, still read)", or "(formerly A, B, still read)", for a field
 * with aliases; "" for one without. */
static void rg__config_alias_note(const rg_config_alias_t *aliases,
                                  const rg_config_field_t *field, char *buf, size_t len)
{
    const rg_config_alias_t *a;
    size_t                   used = 0;
    int                      n;

    buf[0] = '\0';
    for (a = aliases; a != NULL && a->name != NULL && used < len; a++) {
        if (strcmp(a->name, field->name) == 0 && a->env != NULL) {
            n = snprintf(buf + used, len - used, "%s%s",
                         used == 0 ? "(formerly " : ", ", a->env);
            used += n > 0 ? (size_t)n : 0;
        }
    }
    if (used > 0 && used < len) {
        snprintf(buf + used, len - used, ", still read)");
    }
}

void rg_config_print(const rg_config_table_t *table, const void *base, FILE *out)
{
    rg_config_print_aliased(table, NULL, base, out);
}

void rg_config_print_aliased(const rg_config_table_t *table, const rg_config_alias_t *aliases,
                             const void *base, FILE *out)
{
    const rg_config_field_t *field;
    char                     env[RG__CONFIG_ENV_MAX];
    char                     value[RG_CONFIG_PATH_MAX + 8];
    char                     dflt[RG_CONFIG_STRING_MAX + 16];
    char                     note[2 * RG__CONFIG_ENV_MAX];
    const char              *help;
    size_t                   w_env = 0, w_value = 0, w_dflt = 0, n;
    int                      pass;

    if (table == NULL || table->fields == NULL || out == NULL) {
        return;
    }
    /* The first pass finds the column widths, the second prints, so that
     * the columns line up however long the names and values are. */
    for (pass = 0; pass < 2; pass++) {
        for (field = table->fields; field->name != NULL; field++) {
            if (rg__config_env_name(table, field, env, sizeof(env), NULL) != RG_OK) {
                continue;
            }
            rg__config_format(field, base, value, sizeof(value));
            snprintf(dflt, sizeof(dflt), "(default %s)",
                     (field->dflt != NULL && field->dflt[0] != '\0') ?
                     field->dflt : "\"\"");
            rg__config_alias_note(aliases, field, note, sizeof(note));
            help = field->help != NULL ? field->help : "";
            if (pass == 0) {
                n = strlen(env);
                w_env = (n > w_env) ? n : w_env;
                n = strlen(value);
                w_value = (n > w_value) ? n : w_value;
                n = strlen(dflt);
                w_dflt = (n > w_dflt) ? n : w_dflt;
            } else if (help[0] != '\0' || note[0] != '\0') {
                fprintf(out, "%-*s  %-*s  %-*s  %s%s%s\n", (int)w_env, env,
                        (int)w_value, value, (int)w_dflt, dflt, help,
                        help[0] != '\0' && note[0] != '\0' ? " " : "", note);
            } else {
                /* No padding after the last column: no trailing blanks. */
                fprintf(out, "%-*s  %-*s  %s\n", (int)w_env, env,
                        (int)w_value, value, dflt);
            }
        }
    }
}

rg_status_t rg_config_source(const rg_config_table_t *table, const rg_config_alias_t *aliases,
                             const char *name, char *out, size_t cap, rg_err_t *err)
{
    const rg_config_field_t *field;
    char                     env[RG__CONFIG_ENV_MAX];
    const char              *text;
    rg_status_t              status;

    if (table == NULL || table->fields == NULL || name == NULL || out == NULL) {
        return rg_err_set(err, RG_ERR_INVALID, "rg_config_source: an argument is NULL");
    }
    for (field = table->fields; field->name != NULL; field++) {
        if (strcmp(field->name, name) == 0) {
            break;
        }
    }
    if (field->name == NULL) {
        return rg_err_set(err, RG_ERR_NOT_FOUND, "no setting %s in the table of %s", name,
                          table->prefix != NULL ? table->prefix : "");
    }
    status = rg__config_field_env(table, aliases, field, env, sizeof(env), &text, err);
    if (status != RG_OK) {
        return status;
    }
    if (strlen(env) >= cap) {
        return rg_err_set(err, RG_ERR_RANGE, "%s does not fit %zu bytes", env, cap);
    }
    snprintf(out, cap, "%s", env);
    return RG_OK;
}

int rg_config_given(const rg_config_table_t *table, const rg_config_alias_t *aliases,
                    const char *name)
{
    const rg_config_field_t *field;
    char                     env[RG__CONFIG_ENV_MAX];
    const char              *text = NULL;
    rg_err_t                 err;

    if (table == NULL || table->fields == NULL || name == NULL) {
        return 0;
    }
    for (field = table->fields; field->name != NULL; field++) {
        if (strcmp(field->name, name) == 0) {
            return rg__config_field_env(table, aliases, field, env, sizeof(env), &text,
                                        &err) == RG_OK && text != NULL;
        }
    }
    return 0;
}
