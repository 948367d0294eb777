/*
 * railgauge: tests of the shared receive window's policy (proto/rxwin.c):
 * the paper's growth W = min(2^nlimit * W_init, W_max), the next limit at
 * W/2, the settings and reclaiming.
 */
#include <string.h>

#include "proto/rxwin.h"
#include "task.h"

TEST_IMPL(rxwin_size)
{
    ASSERT_INT_EQ(rg_rxwin_size(8, 4096, 0), 8);
    ASSERT_INT_EQ(rg_rxwin_size(8, 4096, 1), 16);
    ASSERT_INT_EQ(rg_rxwin_size(8, 4096, 5), 256);
    ASSERT_INT_EQ(rg_rxwin_size(8, 4096, 9), 4096);
    ASSERT_INT_EQ(rg_rxwin_size(8, 4096, 10), 4096);
    /* No overflow for any exponent. */
    ASSERT_INT_EQ(rg_rxwin_size(8, 4096, 1000000), 4096);
    ASSERT_INT_EQ(rg_rxwin_size(3, 100, 5), 96);
    ASSERT_INT_EQ(rg_rxwin_size(3, 100, 6), 100);
    ASSERT_INT_EQ(rg_rxwin_size(1, 1, 7), 1);
    return 0;
}

TEST_IMPL(rxwin_growth)
{
    rg_rxwin_spec_t spec;
    rg_rxwin_t      w;
    rg_err_t        err;
    int             limit;

    ASSERT_OK(rg_rxwin_parse("adaptive:8:64", &spec, &err), &err);
    ASSERT_OK(rg_rxwin_parse_limit("auto", &spec, &limit, &err), &err);
    ASSERT_INT_EQ(limit, 4);
    ASSERT_OK(rg_rxwin_init(&w, &spec, 3, 0, &err), &err);
    ASSERT_INT_EQ(w.window, 8);
    ASSERT_INT_EQ(w.limit, 3);
    /* At or above the limit: no event. */
    ASSERT_INT_EQ(rg_rxwin_check(&w, 3), 0);
    ASSERT_INT_EQ(w.limit_events, 0);
    /* Below: nlimit 1, W = 16, next limit 8. */
    ASSERT_INT_EQ(rg_rxwin_check(&w, 2), 1);
    ASSERT_INT_EQ(w.window, 16);
    ASSERT_INT_EQ(w.limit, 8);
    ASSERT_INT_EQ(rg_rxwin_check(&w, 8), 0);
    ASSERT_INT_EQ(rg_rxwin_check(&w, 7), 1);
    ASSERT_INT_EQ(w.window, 32);
    ASSERT_INT_EQ(w.limit, 16);
    ASSERT_INT_EQ(rg_rxwin_check(&w, 0), 1);
    ASSERT_INT_EQ(w.window, 64);
    ASSERT_INT_EQ(w.limit, 32);
    /* At W_max: events are still counted, the window stays. */
    ASSERT_INT_EQ(rg_rxwin_check(&w, 1), 1);
    ASSERT_INT_EQ(w.window, 64);
    ASSERT_INT_EQ(w.limit, 32);
    ASSERT_INT_EQ(w.limit_events, 4);
    ASSERT_INT_EQ(w.nlimit, 3);

    /* Fixed: events counted, never a change. */
    ASSERT_OK(rg_rxwin_parse("fixed:512", &spec, &err), &err);
    ASSERT_INT_EQ(spec.w_init, 512);
    ASSERT_INT_EQ(spec.w_max, 512);
    ASSERT_OK(rg_rxwin_parse_limit(NULL, &spec, &limit, &err), &err);
    ASSERT_INT_EQ(limit, 256);
    ASSERT_OK(rg_rxwin_init(&w, &spec, limit, 0, &err), &err);
    ASSERT_INT_EQ(rg_rxwin_check(&w, 10), 1);
    ASSERT_INT_EQ(w.window, 512);
    ASSERT_INT_EQ(w.limit, 256);

    /* A window of 1: the limit is 1, an event when none is posted. */
    ASSERT_OK(rg_rxwin_parse("adaptive:1:4", &spec, &err), &err);
    ASSERT_OK(rg_rxwin_parse_limit("auto", &spec, &limit, &err), &err);
    ASSERT_INT_EQ(limit, 1);
    ASSERT_OK(rg_rxwin_init(&w, &spec, limit, 0, &err), &err);
    ASSERT_INT_EQ(rg_rxwin_check(&w, 1), 0);
    ASSERT_INT_EQ(rg_rxwin_check(&w, 0), 1);
    ASSERT_INT_EQ(w.window, 2);
    ASSERT_INT_EQ(w.limit, 1);
    return 0;
}

TEST_IMPL(rxwin_reclaim)
{
    rg_rxwin_spec_t spec;
    rg_rxwin_t      w;
    rg_err_t        err;
    uint64_t        ms = 1000000;

    ASSERT_OK(rg_rxwin_parse("adaptive:8:100:reclaim", &spec, &err), &err);
    ASSERT_INT_EQ(spec.reclaim, 1);
    ASSERT_OK(rg_rxwin_init(&w, &spec, 4, 10 * ms, &err), &err);
    ASSERT_INT_EQ(rg_rxwin_check(&w, 0), 1);   /* 16 */
    ASSERT_INT_EQ(rg_rxwin_check(&w, 0), 1);   /* 32 */
    ASSERT_INT_EQ(rg_rxwin_check(&w, 0), 1);   /* 64 */
    ASSERT_INT_EQ(rg_rxwin_check(&w, 0), 1);   /* 100 (W_max caps 128) */
    ASSERT_INT_EQ(w.window, 100);
    /* The period starts at the first call; busy use (more than a quarter)
     * keeps the window. */
    ASSERT_INT_EQ(rg_rxwin_reclaim(&w, 1 * ms, 30), 0);
    ASSERT_INT_EQ(rg_rxwin_reclaim(&w, 12 * ms, 2), 0);
    ASSERT_INT_EQ(w.window, 100);
    /* A quiet period (peak 25 <= 100/4): one step down the formula, to 64. */
    ASSERT_INT_EQ(rg_rxwin_reclaim(&w, 13 * ms, 25), 0);
    ASSERT_INT_EQ(rg_rxwin_reclaim(&w, 23 * ms, 1), 1);
    ASSERT_INT_EQ(w.window, 64);
    ASSERT_INT_EQ(w.limit, 32);
    /* Within the next period: nothing, however idle. */
    ASSERT_INT_EQ(rg_rxwin_reclaim(&w, 24 * ms, 0), 0);
    ASSERT_INT_EQ(rg_rxwin_reclaim(&w, 34 * ms, 0), 1);
    ASSERT_INT_EQ(w.window, 32);
    /* A limit event restarts the period and grows again by the formula. */
    ASSERT_INT_EQ(rg_rxwin_check(&w, 0), 1);
    ASSERT_INT_EQ(w.window, 64);
    ASSERT_INT_EQ(rg_rxwin_reclaim(&w, 35 * ms, 0), 0);
    ASSERT_INT_EQ(rg_rxwin_reclaim(&w, 44 * ms, 0), 0);
    ASSERT_INT_EQ(rg_rxwin_reclaim(&w, 46 * ms, 0), 1);
    ASSERT_INT_EQ(w.window, 32);
    /* Never below W_init; the first limit comes back with it. */
    ASSERT_INT_EQ(rg_rxwin_reclaim(&w, 60 * ms, 0), 1);
    ASSERT_INT_EQ(rg_rxwin_reclaim(&w, 80 * ms, 0), 1);
    ASSERT_INT_EQ(w.window, 8);
    ASSERT_INT_EQ(w.limit, 4);
    ASSERT_INT_EQ(rg_rxwin_reclaim(&w, 100 * ms, 0), 0);
    ASSERT_INT_EQ(w.window, 8);
    ASSERT_INT_EQ(w.shrinks, 5);
    /* Without reclaim nothing shrinks. */
    ASSERT_OK(rg_rxwin_parse("adaptive:8:100", &spec, &err), &err);
    ASSERT_OK(rg_rxwin_init(&w, &spec, 4, 0, &err), &err);
    ASSERT_INT_EQ(rg_rxwin_check(&w, 0), 1);
    ASSERT_INT_EQ(rg_rxwin_reclaim(&w, 1 * ms, 0), 0);
    ASSERT_INT_EQ(rg_rxwin_reclaim(&w, 1000 * ms, 0), 0);
    ASSERT_INT_EQ(w.window, 16);
    return 0;
}

TEST_IMPL(rxwin_bad_settings)
{
    static const struct {
        const char *text, *part;
    } bad[] = {
        {"adaptive:64:8", "W_init 64 is above W_max 8"},
        {"fixed:0", "must be 1 to 65536"},
        {"fixed:70000", "must be 1 to 65536"},
        {"fixed:", "must be a number"},
        {"fixed:8:9", "fixed takes one number"},
        {"adaptive:8", "adaptive needs W_init and W_max"},
        {"adaptive:8:x", "W_max must be a number"},
        {"adaptive:8:64:shrink", "unknown option 'shrink'"},
        {"elastic:8", "must be fixed:N or adaptive"},
        {"", "must be fixed:N or adaptive"},
    };
    rg_rxwin_spec_t spec, ok;
    rg_rxwin_t      w;
    rg_err_t        err;
    size_t          i;
    int             limit = 99;

    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        memset(&err, 0, sizeof(err));
        ASSERT_INT_EQ(rg_rxwin_parse(bad[i].text, &spec, &err), RG_ERR_INVALID);
        ASSERT_STR_HAS(rg_err_message(&err), bad[i].part);
    }
    ASSERT_OK(rg_rxwin_parse("adaptive:8:64", &ok, &err), &err);
    ASSERT_INT_EQ(rg_rxwin_parse_limit("0", &ok, &limit, &err), RG_ERR_INVALID);
    ASSERT_STR_HAS(rg_err_message(&err), "RG_PROTO_RXWIN_LIMIT=0: must be 1 to the initial "
                                         "window (8)");
    ASSERT_INT_EQ(rg_rxwin_parse_limit("9", &ok, &limit, &err), RG_ERR_INVALID);
    ASSERT_INT_EQ(rg_rxwin_parse_limit("four", &ok, &limit, &err), RG_ERR_INVALID);
    ASSERT_INT_EQ(limit, 99);
    ASSERT_INT_EQ(rg_rxwin_init(&w, &ok, 0, 0, &err), RG_ERR_INVALID);
    ASSERT_OK(rg_rxwin_parse("adaptive:8:64:reclaim", &ok, &err), &err);
    ASSERT_INT_EQ(rg_rxwin_init(&w, &ok, 4, 0, &err), RG_ERR_INVALID);
    ASSERT_STR_HAS(rg_err_message(&err), "quiet period");
    return 0;
}
