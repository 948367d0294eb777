/*
 * railgauge: tests of the rails layer's parts that need no network: its
 * registration with xport (rails/rails.h), the wire header (rails/wire.h)
 * and the policies' placement and weights (rails/policy.c). The transport
 * itself runs in tests/test_rails.py.
 */
#include <stdio.h>
#include <string.h>

#include "rails/rails_int.h"
#include "task.h"

static rg_status_t rg__test_open(const char *name, rg_boot_t *boot, rg_xport_t **xp_p,
                                 rg_err_t *err)
{
    (void)name;
    (void)boot;
    (void)xp_p;
    return rg_err_set(err, RG_ERR_UNSUPPORTED, "a test transport");
}

/* How many of the registry's transports are named name; *last_p: its last. */
static int rg__test_count(const char *name, const rg_xport_ops_t **last_p)
{
    const rg_xport_ops_t *const *t;
    int                         n = 0;

    for (t = rg_xport_registry(); *t != NULL; t++) {
        n += strcmp((*t)->name, name) == 0;
        *last_p = *t;
    }
    return n;
}

TEST_IMPL(rails_register)
{
    static const rg_xport_ops_t       other = {.name = "rails", .open = rg__test_open};
    static char                       names[RG__RAILS_MAX][16];
    static rg_xport_ops_t             fakes[RG__RAILS_MAX];
    const rg_config_table_t *const   *c;
    const rg_config_table_t          *last_table = NULL;
    const rg_xport_ops_t             *last = NULL;
    rg_status_t                       status = RG_OK;
    int                               i, tables = 0, rails_tables = 0;

    /* xport does not know the transport until it is registered. */
    ASSERT(rg_xport_find("rails") == NULL);
    ASSERT_INT_EQ(rg_rails_register(), RG_OK);
    ASSERT_INT_EQ(rg_rails_register(), RG_OK);  /* again: nothing changes */
    ASSERT(rg_xport_find("rails") == &rg_rails_ops);
    ASSERT_INT_EQ(rg__test_count("rails", &last), 1);
    ASSERT(last == &rg_rails_ops);  /* after xport's own */
    ASSERT(rg_xport_find("shm") == &rg_xport_shm_ops);
    for (c = rg_xport_config_tables(); *c != NULL; c++) {
        tables++;
        rails_tables += *c == &rg_rails_config_table;
        last_table = *c;
    }
    ASSERT_INT_EQ(rails_tables, 1);
    ASSERT(last_table == &rg_rails_config_table);  /* --print-config lists RAILS last */
    ASSERT(tables >= 3);
    ASSERT_STR_EQ(rg_rails_config_table.prefix, "RAILS");

    /* Refused: no ops, no open, a second transport of a name already there. */
    ASSERT_INT_EQ(rg_xport_register(NULL, NULL), RG_ERR_INVALID);
    ASSERT_INT_EQ(rg_xport_register(&fakes[0], NULL), RG_ERR_INVALID);
    ASSERT_INT_EQ(rg_xport_register(&other, NULL), RG_ERR_INVALID);
    ASSERT(rg_xport_find("rails") == &rg_rails_ops);

    /* A full registry says so and stays whole (16 slots in all). */
    for (i = 0; i < RG__RAILS_MAX && status == RG_OK; i++) {
        snprintf(names[i], sizeof(names[i]), "test%d", i);
        fakes[i].name = names[i];
        fakes[i].open = rg__test_open;
        status        = rg_xport_register(&fakes[i], NULL);
    }
    ASSERT_INT_EQ(status, RG_ERR_RANGE);
    ASSERT(rg_xport_find("rails") == &rg_rails_ops);
    ASSERT(rg_xport_find(names[0]) == &fakes[0]);
    ASSERT(rg_xport_find(names[i - 1]) == NULL);
    ASSERT_INT_EQ(rg__test_count(names[0], &last), 1);
    ASSERT(last == &fakes[i - 2]);
    return 0;
}

TEST_IMPL(rails_wire)
{
    unsigned char b[RG__RAILS_HDR];
    uint64_t      v[5];
    uint32_t      type;

    ASSERT_INT_EQ(RG__RAILS_HDR, 8 + 5 * sizeof(uint64_t));
    rg__rails_wire_put(b, RG__RAILS_T_STRIPE | RG__RAILS_T_ACKWANT, 7, 1u << 20, 65536, 4096,
                       (uint64_t)1 << 40);
    /* Little-endian on the wire: "RGRL", then the type. */
    ASSERT(memcmp(b, "RGRL", 4) == 0);
    ASSERT_INT_EQ(b[4], 2);
    ASSERT_INT_EQ(b[5], 1);
    ASSERT_INT_EQ(b[8], 7);
    ASSERT_INT_EQ(rg__rails_wire_get(b, &type, v), 1);
    ASSERT_INT_EQ(type, RG__RAILS_T_STRIPE | RG__RAILS_T_ACKWANT);
    ASSERT_INT_EQ(v[0], 7);
    ASSERT_INT_EQ(v[1], 1u << 20);
    ASSERT_INT_EQ(v[2], 65536);
    ASSERT_INT_EQ(v[3], 4096);
    ASSERT(v[4] == (uint64_t)1 << 40);
    b[0] ^= 1;
    ASSERT_INT_EQ(rg__rails_wire_get(b, &type, v), 0);

    ASSERT(!rg__rails_wire_control(RG__RAILS_T_INLINE));
    ASSERT(!rg__rails_wire_control(RG__RAILS_T_STRIPE));
    ASSERT(rg__rails_wire_control(RG__RAILS_T_RATE));
    ASSERT(rg__rails_wire_control(RG__RAILS_T_BYE));
    ASSERT(rg__rails_wire_control(RG__RAILS_T_ACK));
    ASSERT(rg__rails_wire_control(RG__RAILS_T_DOWN));
    ASSERT(rg__rails_wire_control(RG__RAILS_T_JOIN));
    ASSERT(!rg__rails_wire_control(0));
    ASSERT(!rg__rails_wire_control(RG__RAILS_T_JOIN + 1));
    return 0;
}

/* Two ranks (this one 0), two rails up, weights 1:3. */
static void rg__test_rails(rg__rails_t *rl, rg__rpeer_t *peers, int policy)
{
    static const double w[2] = {1.0, 3.0};

    memset(rl, 0, sizeof(*rl));
    memset(peers, 0, 2 * sizeof(*peers));
    rl->super.rank      = 0;
    rl->super.size      = 2;
    rl->nrails          = 2;
    rl->alive           = 3u;
    rl->peers           = peers;
    rl->policy          = policy;
    rl->cfg.stripe_min  = (size_t)256 << 10;
    rg__rails_weights_init(rl, w, 4.0);
}

TEST_IMPL(rails_policy)
{
    static rg__rails_t rl;
    rg__rpeer_t        peers[2];
    size_t             cut[RG__RAILS_MAX];

    ASSERT_INT_EQ(rg__rails_policy_find("binding"), RG__RAILS_P_BINDING);
    ASSERT_INT_EQ(rg__rails_policy_find("round-robin"), RG__RAILS_P_RR);
    ASSERT_INT_EQ(rg__rails_policy_find("even"), RG__RAILS_P_EVEN);
    ASSERT_INT_EQ(rg__rails_policy_find("weighted"), RG__RAILS_P_WEIGHTED);
    ASSERT_INT_EQ(rg__rails_policy_find("adaptive"), RG__RAILS_P_ADAPTIVE);
    ASSERT_INT_EQ(rg__rails_policy_find("fastest"), -1);

    /* Weighted: stripes of whole pages by the weights, the rest to the last. */
    rg__test_rails(&rl, peers, RG__RAILS_P_WEIGHTED);
    ASSERT_DBL_NEAR(peers[1].w[0], 0.25, 0);
    ASSERT_DBL_NEAR(peers[1].w[1], 0.75, 0);
    rg__rails_cut(&rl, 1, (size_t)1 << 20, cut);
    ASSERT_INT_EQ(cut[0], 262144);
    ASSERT_INT_EQ(cut[1], 786432);
    rg__rails_cut(&rl, 1, 1000000, cut);
    ASSERT_INT_EQ(cut[0], 249856);
    ASSERT_INT_EQ(cut[1], 1000000 - 249856);
    /* Below the stripe size: whole, on the best-weighted rail. */
    rg__rails_cut(&rl, 1, 1000, cut);
    ASSERT_INT_EQ(cut[0], 0);
    ASSERT_INT_EQ(cut[1], 1000);

    /* Rail 1 down: everything on rail 0; back: the weights of the open. */
    rl.alive = 1u;
    rg__rails_weights_down(&rl, &peers[1], 1, 1);
    ASSERT_DBL_NEAR(peers[1].w[0], 1.0, 0);
    ASSERT_DBL_NEAR(peers[1].w[1], 0.0, 0);
    rg__rails_cut(&rl, 1, (size_t)1 << 20, cut);
    ASSERT_INT_EQ(cut[0], (size_t)1 << 20);
    ASSERT_INT_EQ(cut[1], 0);
    rl.alive = 3u;
    rg__rails_weights_back(&rl, &peers[1], 1);
    ASSERT_DBL_NEAR(peers[1].w[0], 0.25, 1e-15);
    ASSERT_DBL_NEAR(peers[1].w[1], 0.75, 1e-15);

    /* Binding: the pair (0, 1) on rail (0 + 1) mod 2, whatever the size. */
    rg__test_rails(&rl, peers, RG__RAILS_P_BINDING);
    rg__rails_cut(&rl, 1, (size_t)4 << 20, cut);
    ASSERT_INT_EQ(cut[0], 0);
    ASSERT_INT_EQ(cut[1], (size_t)4 << 20);
    ASSERT_INT_EQ(rg__rails_one(&rl, 1), 1);

    /* Round-robin: whole messages on the rails in turn. */
    rg__test_rails(&rl, peers, RG__RAILS_P_RR);
    ASSERT_INT_EQ(rg__rails_one(&rl, 1), 0);
    ASSERT_INT_EQ(rg__rails_one(&rl, 1), 1);
    ASSERT_INT_EQ(rg__rails_one(&rl, 1), 0);
    return 0;
}
