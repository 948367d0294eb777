/*
 * railgauge: tests of the status list and rg_err_t.
 */
#include <errno.h>

#include "base/error.h"
#include "base/status.h"
#include "task.h"

TEST_IMPL(status_names)
{
    static const rg_status_t all[] = {
#define RG__TEST_STATUS(name, value, text) RG_##name,
        RG_STATUS_MAP(RG__TEST_STATUS)
#undef RG__TEST_STATUS
    };
    size_t i, j;

    ASSERT_INT_EQ(RG_OK, 0);
    ASSERT_INT_EQ(RG_INPROGRESS, 1);
    ASSERT_STR_EQ(rg_status_name(RG_ERR_TRUNCATED), "RG_ERR_TRUNCATED");
    ASSERT_STR_EQ(rg_status_name(RG_OK), "RG_OK");
    ASSERT_STR_EQ(rg_status_name((rg_status_t)-999), "RG_UNKNOWN");
    ASSERT_STR_EQ(rg_status_string(RG_ERR_PARSE), "malformed input");
    ASSERT(rg_status_string((rg_status_t)-999) != NULL);

    /* Every error is negative, has its own value, a name and a sentence. */
    for (i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
        ASSERT(all[i] <= RG_INPROGRESS);
        ASSERT(strncmp(rg_status_name(all[i]), "RG_", 3) == 0);
        ASSERT(strcmp(rg_status_name(all[i]), "RG_UNKNOWN") != 0);
        ASSERT(strlen(rg_status_string(all[i])) > 0);
        for (j = i + 1; j < sizeof(all) / sizeof(all[0]); j++) {
            ASSERT(all[i] != all[j]);
        }
    }
    return 0;
}

TEST_IMPL(status_err_set)
{
    rg_err_t err;
    char     longtext[2 * RG_ERR_MSG_MAX];

    rg_err_clear(&err);
    ASSERT_INT_EQ(err.status, RG_OK);
    /* With no message recorded, the status text stands in. */
    ASSERT_STR_EQ(rg_err_message(&err), "success");

    ASSERT_INT_EQ(rg_err_set(&err, RG_ERR_IO, "cannot open %s", "x.json"), RG_ERR_IO);
    ASSERT_INT_EQ(err.status, RG_ERR_IO);
    ASSERT_STR_EQ(rg_err_message(&err), "cannot open x.json");

    /* A NULL err is allowed and the status still comes back. */
    ASSERT_INT_EQ(rg_err_set(NULL, RG_ERR_RANGE, "ignored"), RG_ERR_RANGE);
    ASSERT_STR_EQ(rg_err_message(NULL), "");

    /* A message longer than the buffer is cut, not overflowed. */
    memset(longtext, 'a', sizeof(longtext) - 1);
    longtext[sizeof(longtext) - 1] = '\0';
    rg_err_set(&err, RG_ERR_INVALID, "%s", longtext);
    ASSERT_INT_EQ(strlen(err.msg), RG_ERR_MSG_MAX - 1);
    return 0;
}

TEST_IMPL(status_err_errno)
{
    rg_err_t err;

    rg_err_clear(&err);
    ASSERT_INT_EQ(rg_err_set_errno(&err, RG_ERR_SYSTEM, ENOENT, "open(%s)", "/x"),
                  RG_ERR_SYSTEM);
    ASSERT_STR_EQ(err.msg, "open(/x): No such file or directory");
    ASSERT_INT_EQ(rg_err_set_errno(NULL, RG_ERR_IO, EIO, "x"), RG_ERR_IO);
    return 0;
}

TEST_IMPL(status_err_others)
{
    char buf[96], tiny[8];
    int  i;

    ASSERT_STR_EQ(rg_err_others(buf, sizeof(buf), 2, 0), "rank 1");
    ASSERT_STR_EQ(rg_err_others(buf, sizeof(buf), 2, 1), "rank 0");
    ASSERT_STR_EQ(rg_err_others(buf, sizeof(buf), 4, 1), "ranks 0, 2, 3");
    ASSERT_STR_EQ(rg_err_others(buf, sizeof(buf), 12, 0),
                  "ranks 1, 2, 3, 4, 5, 6, 7, 8, ...");
    ASSERT_STR_EQ(rg_err_others(buf, sizeof(buf), 3, -1), "ranks 0, 1, 2");
    /* A buffer too small is cut, never overrun, and stays a string. */
    for (i = 0; i < (int)sizeof(tiny); i++) {
        tiny[i] = 'x';
    }
    rg_err_others(tiny, sizeof(tiny), 5, 0);
    ASSERT_INT_EQ(strlen(tiny), sizeof(tiny) - 1);
    ASSERT_STR_EQ(tiny, "ranks 1");
    ASSERT(rg_err_others(NULL, 0, 3, 0) == NULL);
    return 0;
}
