/*
 * railgauge: tests of the config tables and value parsers.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "base/config.h"
#include "task.h"

typedef struct rg__test_cfg {
    size_t ring_size;
    int    count;
    double ratio;
    double delay_ns;
    char   name[RG_CONFIG_STRING_MAX];
} rg__test_cfg_t;

static const rg_config_field_t rg__test_fields[] = {
    {"RING_SIZE", "64k",   "Size of each ring.",
     offsetof(rg__test_cfg_t, ring_size), RG_CONFIG_SIZE},
    {"COUNT",     "8",     "Slots per ring.",
     offsetof(rg__test_cfg_t, count),     RG_CONFIG_INT},
    {"RATIO",     "0.5",   "Fill ratio.",
     offsetof(rg__test_cfg_t, ratio),     RG_CONFIG_DOUBLE},
    {"DELAY",     "1.5ms", "Delay between rounds.",
     offsetof(rg__test_cfg_t, delay_ns),  RG_CONFIG_TIME_NS},
    {"NAME",      "",      "Device name.",
     offsetof(rg__test_cfg_t, name),      RG_CONFIG_STRING},
    {NULL}
};

static const rg_config_table_t rg__test_table = {"UTEST", rg__test_fields};

static void rg__test_unset_all(void)
{
    unsetenv("RG_UTEST_RING_SIZE");
    unsetenv("RG_UTEST_COUNT");
    unsetenv("RG_UTEST_RATIO");
    unsetenv("RG_UTEST_DELAY");
    unsetenv("RG_UTEST_NAME");
}

TEST_IMPL(config_parse_size)
{
    static const struct {
        const char *text;
        size_t      value;
    } good[] = {
        {"4096", 4096},          {"0", 0},                {"4096b", 4096},
        {"4096B", 4096},         {"64k", 65536},          {"64K", 65536},
        {"64kB", 65536},         {"64KB", 65536},         {"64KiB", 65536},
        {"64kib", 65536},        {"1m", 1048576},         {"1MiB", 1048576},
        {"1MB", 1048576},        {"2g", 2147483648u},     {"2GiB", 2147483648u},
        {" 8k ", 8192},          {"8 KiB", 8192},         {"1.5k", 1536},
        {"0.5m", 524288},        {"1.0", 1},              {"007", 7},
        {"0.25KiB", 256},        {"16777216g", (size_t)1 << 54},
        {"18446744073709551615", SIZE_MAX},
    };
    static const char *bad[] = {
        "", " ", "-1", "-1k", "+1", "k", "KiB", "64x", "64kk", "64 k b",
        "1.1k", "0.5", "1.0000000001k", "18446744073709551616",
        "17179869184g", "99999999999999999999999", "1e3", "0x10", "abc",
        "64i", "1.2.3", ".", ".k", "64kibb", "1 2", "64\n k x",
    };
    rg_err_t err;
    size_t   i, v;

    for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        v = 12345;
        if (rg_parse_size(good[i].text, &v, &err) != RG_OK) {
            RG__TEST_FAIL("'%s' rejected: %s", good[i].text, err.msg);
        }
        if (v != good[i].value) {
            RG__TEST_FAIL("'%s' gave %zu, expected %zu", good[i].text, v,
                          good[i].value);
        }
    }
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char quoted[64];

        v = 12345;
        rg_err_clear(&err);
        if (rg_parse_size(bad[i], &v, &err) != RG_ERR_PARSE) {
            RG__TEST_FAIL("'%s' accepted as %zu", bad[i], v);
        }
        /* The message quotes the text, and the output is left alone. */
        snprintf(quoted, sizeof(quoted), "'%s'", bad[i]);
        ASSERT_STR_HAS(err.msg, quoted);
        ASSERT_INT_EQ(err.status, RG_ERR_PARSE);
        ASSERT_INT_EQ(v, 12345);
    }
    ASSERT_INT_EQ(rg_parse_size(NULL, &v, &err), RG_ERR_INVALID);
    ASSERT_INT_EQ(rg_parse_size("1", NULL, &err), RG_ERR_INVALID);
    ASSERT_INT_EQ(rg_parse_size("x", &v, NULL), RG_ERR_PARSE);
    return 0;
}

TEST_IMPL(config_parse_time)
{
    static const struct {
        const char *text;
        double      ns;
    } good[] = {
        {"500ns", 500.0},     {"10us", 10000.0},   {"1.5ms", 1.5e6},
        {"2s", 2e9},          {"750", 750.0},      {"0", 0.0},
        {"1e3", 1000.0},      {"2.5US", 2500.0},   {" 3 ms ", 3e6},
        {".5s", 5e8},         {"1e-3s", 1e6},      {"0.001", 0.001},
    };
    static const char *bad[] = {
        "", "-1ms", "+1ms", "1.5 min", "ms", "1h", "inf", "nan", "0x10",
        "1e", "1e999s", "1.5.5ms", "10 us s", "1,5ms",
    };
    rg_config_field_t field = {"DELAY", "0", "", 0, RG_CONFIG_TIME_NS};
    rg_err_t          err;
    double            v;
    size_t            i;

    for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        v = -1.0;
        if (rg_config_parse(&field, good[i].text, &v, &err) != RG_OK) {
            RG__TEST_FAIL("'%s' rejected: %s", good[i].text, err.msg);
        }
        if (fabs(v - good[i].ns) > 1e-9 * good[i].ns) {
            RG__TEST_FAIL("'%s' gave %.17g ns, expected %.17g", good[i].text,
                          v, good[i].ns);
        }
    }
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char quoted[64];

        v = -1.0;
        rg_err_clear(&err);
        if (rg_config_parse(&field, bad[i], &v, &err) != RG_ERR_PARSE) {
            RG__TEST_FAIL("'%s' accepted as %g ns", bad[i], v);
        }
        snprintf(quoted, sizeof(quoted), "'%s'", bad[i]);
        ASSERT_STR_HAS(err.msg, quoted);
        /* rg_config_parse() names the field. */
        ASSERT(strncmp(err.msg, "DELAY: ", 7) == 0);
        ASSERT(v == -1.0);
    }
    return 0;
}

TEST_IMPL(config_parse_types)
{
    rg__test_cfg_t cfg;
    rg_err_t       err;
    char           longtext[RG_CONFIG_STRING_MAX + 1];
    const rg_config_field_t *f_count = &rg__test_fields[1];
    const rg_config_field_t *f_ratio = &rg__test_fields[2];
    const rg_config_field_t *f_name  = &rg__test_fields[4];
    static const char *bad_int[] = {"4.5", "99999999999", "", " ", "x", "1k", "0x10"};
    static const char *bad_dbl[] = {"nan", "inf", "-inf", "1.5x", "", "1e999"};
    size_t i;

    memset(&cfg, 0, sizeof(cfg));
    ASSERT_OK(rg_config_parse(f_count, "42", &cfg, &err), &err);
    ASSERT_INT_EQ(cfg.count, 42);
    ASSERT_OK(rg_config_parse(f_count, " -7 ", &cfg, &err), &err);
    ASSERT_INT_EQ(cfg.count, -7);
    for (i = 0; i < sizeof(bad_int) / sizeof(bad_int[0]); i++) {
        rg_err_clear(&err);
        if (rg_config_parse(f_count, bad_int[i], &cfg, &err) != RG_ERR_PARSE) {
            RG__TEST_FAIL("int '%s' accepted as %d", bad_int[i], cfg.count);
        }
        ASSERT_STR_HAS(err.msg, "COUNT: ");
        ASSERT_INT_EQ(cfg.count, -7);
    }

    ASSERT_OK(rg_config_parse(f_ratio, "0.25", &cfg, &err), &err);
    ASSERT(cfg.ratio == 0.25);
    ASSERT_OK(rg_config_parse(f_ratio, "-1e-3", &cfg, &err), &err);
    ASSERT(cfg.ratio == -1e-3);
    for (i = 0; i < sizeof(bad_dbl) / sizeof(bad_dbl[0]); i++) {
        rg_err_clear(&err);
        if (rg_config_parse(f_ratio, bad_dbl[i], &cfg, &err) != RG_ERR_PARSE) {
            RG__TEST_FAIL("double '%s' accepted as %g", bad_dbl[i], cfg.ratio);
        }
        ASSERT(cfg.ratio == -1e-3);
    }

    ASSERT_OK(rg_config_parse(f_name, "mlx5_0", &cfg, &err), &err);
    ASSERT_STR_EQ(cfg.name, "mlx5_0");
    memset(longtext, 'x', sizeof(longtext) - 1);
    longtext[sizeof(longtext) - 1] = '\0';
    rg_err_clear(&err);
    ASSERT_INT_EQ(rg_config_parse(f_name, longtext, &cfg, &err), RG_ERR_PARSE);
    ASSERT_STR_HAS(err.msg, "longer than the limit");
    ASSERT_STR_EQ(cfg.name, "mlx5_0");
    /* The longest string that fits is kept whole. */
    longtext[RG_CONFIG_STRING_MAX - 1] = '\0';
    ASSERT_OK(rg_config_parse(f_name, longtext, &cfg, &err), &err);
    ASSERT_INT_EQ(strlen(cfg.name), RG_CONFIG_STRING_MAX - 1);

    ASSERT_INT_EQ(rg_config_parse(NULL, "1", &cfg, &err), RG_ERR_INVALID);
    ASSERT_INT_EQ(rg_config_parse(f_count, NULL, &cfg, &err), RG_ERR_INVALID);
    ASSERT_INT_EQ(rg_config_parse(f_count, "1", NULL, &err), RG_ERR_INVALID);
    return 0;
}

TEST_IMPL(config_load_defaults)
{
    rg__test_cfg_t cfg;
    rg_err_t       err;

    rg__test_unset_all();
    memset(&cfg, 0x7f, sizeof(cfg));
    ASSERT_OK(rg_config_load(&rg__test_table, &cfg, &err), &err);
    ASSERT_INT_EQ(cfg.ring_size, 65536);
    ASSERT_INT_EQ(cfg.count, 8);
    ASSERT(cfg.ratio == 0.5);
    ASSERT(cfg.delay_ns == 1.5e6);
    ASSERT_STR_EQ(cfg.name, "");
    return 0;
}

TEST_IMPL(config_env_override)
{
    rg__test_cfg_t cfg;
    rg_err_t       err;

    rg__test_unset_all();
    ASSERT(setenv("RG_UTEST_RING_SIZE", "1MiB", 1) == 0);
    ASSERT(setenv("RG_UTEST_DELAY", "10us", 1) == 0);
    ASSERT(setenv("RG_UTEST_NAME", "mlx5_0", 1) == 0);
    /* A variable of another table, or without the prefix, is not read. */
    ASSERT(setenv("RG_OTHER_COUNT", "99", 1) == 0);
    ASSERT(setenv("RG_COUNT", "99", 1) == 0);
    memset(&cfg, 0, sizeof(cfg));
    err.status = RG_OK;
    if (rg_config_load(&rg__test_table, &cfg, &err) != RG_OK) {
        rg__test_unset_all();
        RG__TEST_FAIL("load: %s", err.msg);
    }
    rg__test_unset_all();
    unsetenv("RG_OTHER_COUNT");
    unsetenv("RG_COUNT");
    ASSERT_INT_EQ(cfg.ring_size, 1048576);
    ASSERT(cfg.delay_ns == 10000.0);
    ASSERT_STR_EQ(cfg.name, "mlx5_0");
    ASSERT_INT_EQ(cfg.count, 8);
    ASSERT(cfg.ratio == 0.5);
    return 0;
}

TEST_IMPL(config_env_bad)
{
    rg__test_cfg_t cfg, before;
    rg_err_t       err;
    rg_status_t    status;

    rg__test_unset_all();
    ASSERT(setenv("RG_UTEST_RING_SIZE", "2m", 1) == 0);
    ASSERT(setenv("RG_UTEST_DELAY", "5 minutes", 1) == 0);
    memset(&cfg, 0x11, sizeof(cfg));
    before = cfg;
    rg_err_clear(&err);
    status = rg_config_load(&rg__test_table, &cfg, &err);
    rg__test_unset_all();
    ASSERT_INT_EQ(status, RG_ERR_PARSE);
    ASSERT_INT_EQ(err.status, RG_ERR_PARSE);
    /* The message names the variable and quotes its value... */
    ASSERT_STR_HAS(err.msg, "RG_UTEST_DELAY");
    ASSERT_STR_HAS(err.msg, "'5 minutes'");
    ASSERT_STR_HAS(err.msg, "unknown unit 'minutes'");
    /* ...and no field was stored, not even the good RING_SIZE before it. */
    ASSERT(memcmp(&cfg, &before, sizeof(cfg)) == 0);

    ASSERT(setenv("RG_UTEST_RING_SIZE", "-4k", 1) == 0);
    rg_err_clear(&err);
    status = rg_config_load(&rg__test_table, &cfg, &err);
    rg__test_unset_all();
    ASSERT_INT_EQ(status, RG_ERR_PARSE);
    ASSERT_STR_HAS(err.msg, "RG_UTEST_RING_SIZE='-4k'");

    /* Set but empty is a bad value, not "unset". */
    ASSERT(setenv("RG_UTEST_COUNT", "", 1) == 0);
    rg_err_clear(&err);
    status = rg_config_load(&rg__test_table, &cfg, &err);
    rg__test_unset_all();
    ASSERT_INT_EQ(status, RG_ERR_PARSE);
    ASSERT_STR_HAS(err.msg, "RG_UTEST_COUNT=''");
    return 0;
}

TEST_IMPL(config_bad_table)
{
    static const rg_config_field_t bad_default[] = {
        {"SIZE", "lots", "A size.", 0, RG_CONFIG_SIZE},
        {NULL}
    };
    static const rg_config_field_t bad_type[] = {
        {"THING", "1", "A thing.", 0, (rg_config_type_t)99},
        {NULL}
    };
    static const rg_config_field_t no_default[] = {
        {"THING", NULL, "A thing.", 0, RG_CONFIG_INT},
        {NULL}
    };
    rg_config_table_t table = {"UTEST2", bad_default};
    rg__test_cfg_t    cfg;
    rg_err_t          err;

    rg_err_clear(&err);
    ASSERT_INT_EQ(rg_config_load(&table, &cfg, &err), RG_ERR_INVALID);
    ASSERT_STR_HAS(err.msg, "default of RG_UTEST2_SIZE is invalid");
    ASSERT_STR_HAS(err.msg, "'lots'");

    table.fields = bad_type;
    rg_err_clear(&err);
    ASSERT_INT_EQ(rg_config_load(&table, &cfg, &err), RG_ERR_INVALID);
    ASSERT_STR_HAS(err.msg, "unknown setting type 99");

    table.fields = no_default;
    rg_err_clear(&err);
    ASSERT_INT_EQ(rg_config_load(&table, &cfg, &err), RG_ERR_INVALID);
    ASSERT_STR_HAS(err.msg, "RG_UTEST2_THING has no default");

    ASSERT_INT_EQ(rg_config_load(NULL, &cfg, &err), RG_ERR_INVALID);
    ASSERT_INT_EQ(rg_config_load(&rg__test_table, NULL, &err), RG_ERR_INVALID);
    table.fields = NULL;
    ASSERT_INT_EQ(rg_config_load(&table, &cfg, &err), RG_ERR_INVALID);
    return 0;
}

/* Prints the table (its aliases too, where not NULL) into a string with
 * open_memstream(); *text_p is freed by the caller. */
static int rg__test_print_table(const rg_config_table_t *table, const rg_config_alias_t *aliases,
                                const void *base, char **text_p)
{
    size_t len;
    FILE  *f = open_memstream(text_p, &len);

    ASSERT(f != NULL);
    if (aliases != NULL) {
        rg_config_print_aliased(table, aliases, base, f);
    } else {
        rg_config_print(table, base, f);
    }
    ASSERT(fclose(f) == 0);
    return 0;
}

static int rg__test_print(const void *base, char **text_p)
{
    return rg__test_print_table(&rg__test_table, NULL, base, text_p);
}

/* 0 where the table prints as expected, else 1 after showing what it
 * printed. */
static int rg__test_print_same(const rg_config_table_t *table, const rg_config_alias_t *aliases,
                               const void *base, const char *expected)
{
    char *text = NULL;
    int   same;

    ASSERT(rg__test_print_table(table, aliases, base, &text) == 0);
    same = text != NULL && strcmp(text, expected) == 0;
    if (!same) {
        fprintf(stderr, "printed:\n%s", text ? text : "(null)");
    }
    free(text);
    return same ? 0 : 1;
}

TEST_IMPL(config_print)
{
    rg__test_cfg_t cfg;
    rg_err_t       err;
    char          *text = NULL;
    int            same;

    rg__test_unset_all();
    ASSERT_OK(rg_config_load(&rg__test_table, &cfg, &err), &err);
    cfg.ring_size = 3 * 1048576;
    cfg.delay_ns  = 2.5e9;
    ASSERT(rg__test_print_same(&rg__test_table, NULL, &cfg,
        "RG_UTEST_RING_SIZE  3MiB  (default 64k)    Size of each ring.\n"
        "RG_UTEST_COUNT      8     (default 8)      Slots per ring.\n"
        "RG_UTEST_RATIO      0.5   (default 0.5)    Fill ratio.\n"
        "RG_UTEST_DELAY      2.5s  (default 1.5ms)  Delay between rounds.\n"
        "RG_UTEST_NAME       \"\"    (default \"\")     Device name.\n") == 0);

    /* Without a struct, the defaults are listed as values. */
    text = NULL;
    ASSERT(rg__test_print(NULL, &text) == 0);
    same = text != NULL &&
           strstr(text, "RG_UTEST_DELAY      1.5ms  (default 1.5ms)") != NULL;
    if (!same) {
        fprintf(stderr, "printed:\n%s", text ? text : "(null)");
    }
    free(text);
    ASSERT(same);

    /* Every other value prints in a form that parses back to itself. */
    cfg.ring_size = 1000;
    cfg.delay_ns  = 1234.5;
    ASSERT(rg__test_print(&cfg, &text) == 0);
    same = text != NULL && strstr(text, " 1000 ") != NULL &&
           strstr(text, " 1.2345us ") != NULL;
    if (!same) {
        fprintf(stderr, "printed:\n%s", text ? text : "(null)");
    }
    free(text);
    ASSERT(same);
    return 0;
}

/* Former names (aliases): read where the RG_ name is unset, the RG_ name
 * winning where both are set (even set empty); a bad value named under the
 * name that gave it; listed after the help. And the PATH type's length. */
typedef struct rg__test_alias_cfg {
    char barrier[RG_CONFIG_STRING_MAX];
    char model[RG_CONFIG_PATH_MAX];
    int  count;
} rg__test_alias_cfg_t;

static const rg_config_field_t rg__test_alias_fields[] = {
    {"BARRIER", "", "The barrier.", offsetof(rg__test_alias_cfg_t, barrier), RG_CONFIG_STRING},
    {"MODEL", "", "A model file.", offsetof(rg__test_alias_cfg_t, model), RG_CONFIG_PATH},
    {"COUNT", "8", "", offsetof(rg__test_alias_cfg_t, count), RG_CONFIG_INT},
    {NULL}
};

static const rg_config_table_t rg__test_alias_table = {"UTALIAS", rg__test_alias_fields};

static const rg_config_alias_t rg__test_aliases[] = {
    {"BARRIER", "RGTEST_OLD_BARRIER"},
    {"COUNT", "RGTEST_OLD_COUNT"},
    {"COUNT", "RGTEST_OLDER_COUNT"},
    {NULL, NULL}
};

static void rg__test_alias_unset(void)
{
    unsetenv("RG_UTALIAS_BARRIER");
    unsetenv("RG_UTALIAS_MODEL");
    unsetenv("RG_UTALIAS_COUNT");
    unsetenv("RGTEST_OLD_BARRIER");
    unsetenv("RGTEST_OLD_COUNT");
    unsetenv("RGTEST_OLDER_COUNT");
}

/* Loads the alias table; 0 where it loaded. */
static int rg__test_alias_load(rg__test_alias_cfg_t *cfg, rg_err_t *err)
{
    memset(cfg, 0, sizeof(*cfg));
    rg_err_clear(err);
    return rg_config_load_aliased(&rg__test_alias_table, rg__test_aliases, cfg, err) != RG_OK;
}

TEST_IMPL(config_alias)
{
    rg__test_alias_cfg_t cfg;
    rg_err_t             err;
    char                 src[64], *longpath;
    int                  same;

    rg__test_alias_unset();
    /* The former name alone. */
    ASSERT(setenv("RGTEST_OLD_BARRIER", "nway:3", 1) == 0);
    ASSERT(setenv("RGTEST_OLDER_COUNT", "5", 1) == 0);
    ASSERT(rg__test_alias_load(&cfg, &err) == 0);
    ASSERT_STR_EQ(cfg.barrier, "nway:3");
    ASSERT_INT_EQ(cfg.count, 5); /* the second alias, the first being unset */
    ASSERT_OK(rg_config_source(&rg__test_alias_table, rg__test_aliases, "BARRIER", src,
                               sizeof(src), &err), &err);
    ASSERT_STR_EQ(src, "RGTEST_OLD_BARRIER");
    /* Without the aliases, only the RG_ names are read. */
    memset(&cfg, 0, sizeof(cfg));
    ASSERT_OK(rg_config_load(&rg__test_alias_table, &cfg, &err), &err);
    ASSERT_STR_EQ(cfg.barrier, "");
    ASSERT_INT_EQ(cfg.count, 8);
    /* Both: the RG_ name wins, even set empty; the first alias before the second. */
    ASSERT(setenv("RG_UTALIAS_BARRIER", "linear", 1) == 0);
    ASSERT(setenv("RGTEST_OLD_COUNT", "6", 1) == 0);
    ASSERT(rg__test_alias_load(&cfg, &err) == 0);
    ASSERT_STR_EQ(cfg.barrier, "linear");
    ASSERT_INT_EQ(cfg.count, 6);
    ASSERT_OK(rg_config_source(&rg__test_alias_table, rg__test_aliases, "BARRIER", src,
                               sizeof(src), &err), &err);
    ASSERT_STR_EQ(src, "RG_UTALIAS_BARRIER");
    ASSERT(setenv("RG_UTALIAS_BARRIER", "", 1) == 0);
    ASSERT(rg__test_alias_load(&cfg, &err) == 0);
    ASSERT_STR_EQ(cfg.barrier, "");
    /* A bad value is named under the variable that gave it. */
    ASSERT(setenv("RGTEST_OLD_COUNT", "six", 1) == 0);
    ASSERT(rg__test_alias_load(&cfg, &err) != 0);
    ASSERT_INT_EQ(err.status, RG_ERR_PARSE);
    ASSERT_STR_HAS(err.msg, "environment variable RGTEST_OLD_COUNT='six'");
    ASSERT(setenv("RG_UTALIAS_COUNT", "seven", 1) == 0);
    ASSERT(rg__test_alias_load(&cfg, &err) != 0);
    ASSERT_STR_HAS(err.msg, "environment variable RG_UTALIAS_COUNT='seven'");
    /* Given: by its RG_ name (set, even empty) or an alias; not by an alias not passed. */
    ASSERT(rg_config_given(&rg__test_alias_table, rg__test_aliases, "BARRIER"));
    ASSERT(rg_config_given(&rg__test_alias_table, rg__test_aliases, "COUNT"));
    ASSERT(!rg_config_given(&rg__test_alias_table, rg__test_aliases, "NOPE"));
    ASSERT(unsetenv("RG_UTALIAS_COUNT") == 0);
    ASSERT(rg_config_given(&rg__test_alias_table, rg__test_aliases, "COUNT"));
    ASSERT(!rg_config_given(&rg__test_alias_table, NULL, "COUNT"));
    /* No such setting; no room. */
    ASSERT_INT_EQ(rg_config_source(&rg__test_alias_table, rg__test_aliases, "NOPE", src,
                                   sizeof(src), &err), RG_ERR_NOT_FOUND);
    ASSERT_INT_EQ(rg_config_source(&rg__test_alias_table, rg__test_aliases, "BARRIER", src, 4,
                                   &err), RG_ERR_RANGE);
    rg__test_alias_unset();

    /* The listing names the former names after the help. */
    ASSERT(rg__test_print_same(&rg__test_alias_table, rg__test_aliases, NULL,
        "RG_UTALIAS_BARRIER  \"\"  (default \"\")  The barrier. (formerly RGTEST_OLD_BARRIER, "
        "still read)\n"
        "RG_UTALIAS_MODEL    \"\"  (default \"\")  A model file.\n"
        "RG_UTALIAS_COUNT    8   (default 8)   (formerly RGTEST_OLD_COUNT, RGTEST_OLDER_COUNT, "
        "still read)\n") == 0);

    /* A path may be as long as a file name on Linux; a string may not. */
    longpath = malloc(RG_CONFIG_PATH_MAX + 1);
    ASSERT(longpath != NULL);
    memset(longpath, 'p', RG_CONFIG_PATH_MAX);
    longpath[RG_CONFIG_PATH_MAX - 1] = '\0';
    same = rg_config_parse(&rg__test_alias_fields[1], longpath, &cfg, &err) == RG_OK &&
           strlen(cfg.model) == RG_CONFIG_PATH_MAX - 1 &&
           rg_config_parse(&rg__test_alias_fields[0], longpath, &cfg, &err) == RG_ERR_PARSE;
    longpath[RG_CONFIG_PATH_MAX - 1] = 'p';
    longpath[RG_CONFIG_PATH_MAX] = '\0';
    same = same && rg_config_parse(&rg__test_alias_fields[1], longpath, &cfg, &err) ==
                       RG_ERR_PARSE && strstr(err.msg, "longer than the limit of 4095") != NULL;
    free(longpath);
    ASSERT(same);
    return 0;
}
