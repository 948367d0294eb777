/*
 * railgauge: librailgauge-pmpi-<flavour>.so, MPI_Barrier replaced through the
 * MPI profiling interface by a barrier of coll/ (docs/coll.md).
 *
 *   RG_PMPI_BARRIER=nway:3 LD_PRELOAD=$(railgauge pmpi --print-path --mpi openmpi) \
 *       mpirun.openmpi -n 16 ./app
 *
 * One library per MPI flavour (Open MPI and MPICH are not ABI-compatible),
 * each built with that flavour's mpicc. The first MPI_Barrier on a
 * communicator duplicates it (so the barrier's messages never meet the
 * application's) and computes the rank's plan; both are cached on the
 * communicator as an attribute, freed with it. Where every rank of the
 * communicator shares one node (MPI_Comm_split_type, MPI_COMM_TYPE_SHARED),
 * a barrier runs the plan on flags in an MPI shared window (coll/flags.h,
 * the runtime barrier's shared-memory engine): no message at all. Otherwise
 * it is the plan's rounds as zero-byte MPI_Irecv/MPI_Isend and one
 * MPI_Waitall per round.
 *
 * Settings, read at MPI_Init through a config table (pmpi_config.c, listed by
 * railgauge-bench --print-config); each one's former name, RAILGAUGE_BARRIER,
 * RAILGAUGE_MODEL, RAILGAUGE_BARRIER_SHM or RAILGAUGE_PMPI_VERBOSE, is still
 * read where the RG_PMPI_ name is unset, and messages name the variable that
 * was read:
 *   RG_PMPI_BARRIER    the algorithm for every communicator: linear, binomial,
 *                      recdbl, dissem, nway:N, or one of the stacks' own: ring
 *                      (Open MPI's double ring), kdissem:K, recexch:K (MPICH's);
 *   RG_PMPI_MODEL      a model file (model-loggp.json or model-flags.json of
 *                      `railgauge gauge`) for every communicator, or the
 *                      gauge's report directory: its model-flags.json for
 *                      communicators on flags, its model-loggp.json for those
 *                      on messages. Each communicator gets the barrier that
 *                      LogP with the model's L, o and g for small messages
 *                      predicts fastest for its size (rg__pmpi_predict).
 *                      `railgauge tune barrier` simulates the same choice in
 *                      full (and under LoP);
 *   neither            the tuned choice still: on flags from the built-in
 *                      flag model (rg__pmpi_flags_default); on messages,
 *                      whose costs only a measurement of the network knows,
 *                      dissemination;
 *   RG_PMPI_BARRIER_SHM  auto (default): flags in shared memory where the
 *                      ranks share a node; 0: always messages;
 *   RG_PMPI_VERBOSE=1  rank 0 of each communicator says, at its first
 *                      barrier, which barrier it got, on which engine, why.
 * RG_PMPI_BARRIER wins over RG_PMPI_MODEL. The model files are read by base's
 * JSON reader (base/json_read.h), as JSON whatever their spacing. Rank 0's
 * choice is its communicator's (broadcast when the communicator is set up),
 * so ranks whose settings or files differ still run one schedule;
 * RG_PMPI_BARRIER_SHM=0
 * on any rank is taken by all (agreed at MPI_Init). A bad setting on any rank
 * makes MPI_Init (and every MPI_Barrier after it) return MPI_ERR_ARG on every
 * rank, with one line on stderr from the lowest such rank; nothing aborts,
 * nothing hangs.
 * Intercommunicators keep the library's own barrier.
 */
#include <errno.h>
#include <math.h>
#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/json_read.h"
#include "coll/flags.h"
#include "coll/sched.h"
#include "pmpi_config.h"

#define RG_PMPI_EXPORT __attribute__((visibility("default")))

typedef struct rg_pmpi_comm {
    MPI_Comm       dup;
    rg_coll_plan_t plan;
    /* Shared memory (win != MPI_WIN_NULL): the flags and the barriers run. */
    MPI_Win         win;
    rg_coll_flags_t flags;
    uint64_t        epoch;
    MPI_Request   *reqs;
    /* Statuses, not MPI_STATUSES_IGNORE: GCC's -Wstringop-overflow takes
     * MPICH's (MPI_Status *)1 for an empty array. */
    MPI_Status    *stats;
} rg_pmpi_comm_t;

/* A model's small-message LogP (us), for choosing a barrier. */
typedef struct rg_pmpi_model {
    int    have;
    double L, o, g, duplex;
    char   src[96];                       /* where it came from, for RG_PMPI_VERBOSE */
} rg_pmpi_model_t;

/* The engines a communicator's barrier can run on. */
enum { RG_PMPI_MESSAGES = 0, RG_PMPI_FLAGS = 1 };

/* The built-in flag model: what `railgauge gauge` over shm measured of the
 * flags on its reference machine (docs/data/barrier-8/model-flags.json: L
 * one signal, o 0, g per further signal, duplex what a signal costs beyond
 * L while its receiver signals too), for communicators on one node
 * when RG_PMPI_MODEL names none. Messages have no built-in model: their
 * costs are the network's, which only a measurement knows. */
static const rg_pmpi_model_t rg__pmpi_flags_default = {
    1, 0.180, 0.0, 0.0086, 0.070, "the built-in flag model"};

/* The library's state: set at MPI_Init, read by every barrier. */
static struct {
    int                    keyval;
    int                    init_err;      /* an MPI error code, or MPI_SUCCESS */
    rg_coll_barrier_spec_t spec;
    int                    fixed;         /* RG_PMPI_BARRIER set: spec for every comm */
    unsigned long          barriers;      /* barriers run by the schedule */
    char                   choice[32];    /* the barrier of the last new communicator */
    rg_pmpi_model_t        model[2];      /* per engine (RG_PMPI_MESSAGES, RG_PMPI_FLAGS) */
    int                    shm;           /* RG_PMPI_BARRIER_SHM: 1 auto, 0 off */
    int                    verbose;       /* RG_PMPI_VERBOSE: each comm's choice */
    int                    last_shm;      /* the last new communicator got flags */
    char                   fixed_by[64];  /* the variable that set the fixed barrier */
} rg_pmpi = {MPI_KEYVAL_INVALID, MPI_SUCCESS, {RG_COLL_BARRIER_DISSEM, 1}, 0, 0, "",
             {{0, 0, 0, 0, 0, ""}, {0, 0, 0, 0, 0, ""}}, 1, 0, 0, ""};

/* ---- RG_PMPI_MODEL ----------------------------------------------------------- */

/* The number key of a model's range into *out where it is finite and >= 0
 * (the model writes non-finite values as null); -1 where not. */
static int rg__pmpi_param(const rg_json_val_t *range, const char *key, double *out)
{
    double v;

    if (!rg_json_as_double(rg_json_get(range, key), &v) || v < 0) {
        return -1;
    }
    *out = v;
    return 0;
}

/* L, o and g of a parsed model's first protocol range (small messages) into
 * *m; *flags 1 where it is a flag model ("engine": "flags"). */
static int rg__pmpi_model_doc(const rg_json_val_t *root, rg_pmpi_model_t *m, int *flags,
                              char *why, size_t cap)
{
    const rg_json_val_t *first = rg_json_at(rg_json_get(root, "ranges"), 0);

    if (!rg_json_string_is(rg_json_get(root, "model"), "loggp") || first == NULL) {
        snprintf(why, cap, "it is not a model-loggp.json or model-flags.json (`railgauge "
                 "gauge` writes them; for a LoP model use `railgauge tune barrier` and "
                 "RG_PMPI_BARRIER)");
        return -1;
    }
    if (rg__pmpi_param(first, "L_us", &m->L) != 0 || rg__pmpi_param(first, "o_us", &m->o) != 0 ||
        rg__pmpi_param(first, "g_us", &m->g) != 0) {
        snprintf(why, cap, "its first range has no finite L_us, o_us and g_us >= 0");
        return -1;
    }
    if (rg_json_get(first, "duplex_us") != NULL &&
        rg__pmpi_param(first, "duplex_us", &m->duplex) != 0) {
        snprintf(why, cap, "its duplex_us is not a finite number >= 0");
        return -1;
    }
    *flags = rg_json_string_is(rg_json_get(root, "engine"), "flags");
    return 0;
}

/* A model file (model-loggp.json or model-flags.json) into *m; see
 * rg__pmpi_model_doc. */
static int rg__pmpi_read_model(const char *path, rg_pmpi_model_t *m, int *flags, char *why,
                               size_t cap)
{
    FILE         *f = fopen(path, "r");
    char         *text;
    rg_json_doc_t doc;
    long          n;
    int           rc = -1;

    if (f == NULL) {
        snprintf(why, cap, "cannot open it: %s", strerror(errno));
        return -1;
    }
    if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || n > (64L << 20) ||
        fseek(f, 0, SEEK_SET) != 0 || (text = malloc((size_t)n + 1)) == NULL) {
        fclose(f);
        snprintf(why, cap, "cannot read it");
        return -1;
    }
    if (fread(text, 1, (size_t)n, f) != (size_t)n) {
        snprintf(why, cap, "cannot read it");
    } else if (rg_json_parse(&doc, text, (size_t)n, NULL, NULL) != RG_OK) {
        snprintf(why, cap, "it is not a model-loggp.json or model-flags.json: not JSON (line "
                 "%u, column %u: %s)", doc.err_line, doc.err_col, doc.err_what);
    } else {
        if ((rc = rg__pmpi_model_doc(rg_json_root(&doc), m, flags, why, cap)) == 0) {
            m->have = 1;
            snprintf(m->src, sizeof(m->src), "%s", path);
        }
        rg_json_doc_fini(&doc);
    }
    free(text);
    fclose(f);
    return rc;
}

/* RG_PMPI_MODEL: a model file (for every communicator), or a directory
 * (the report of `railgauge gauge`): its model-flags.json for communicators
 * on flags, its model-loggp.json for those on messages (and on flags where
 * it has no flag model). */
static int rg__pmpi_models(const char *path, char *why, size_t cap)
{
    static const char *const names[2] = {"model-loggp.json", "model-flags.json"};
    rg_pmpi_model_t m[2];
    struct stat     sb;
    char            file[4096], sub[200];
    int             i, flags = 0;

    memset(m, 0, sizeof(m));
    if (stat(path, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
        if (rg__pmpi_read_model(path, &m[0], &flags, why, cap) != 0) {
            return -1;
        }
        rg_pmpi.model[RG_PMPI_MESSAGES] = m[0];
        rg_pmpi.model[RG_PMPI_FLAGS]    = m[0];
        return 0;
    }
    for (i = 0; i < 2; i++) {
        if (snprintf(file, sizeof(file), "%s/%s", path, names[i]) >= (int)sizeof(file)) {
            snprintf(why, cap, "a directory name too long for its files' names");
            return -1;
        }
        if (stat(file, &sb) != 0) {
            continue;
        }
        if (rg__pmpi_read_model(file, &m[i], &flags, sub, sizeof(sub)) != 0) {
            snprintf(why, cap, "%s: %s", names[i], sub);
            return -1;
        }
        if (flags != i) {
            snprintf(why, cap, "%s is a model of %s", names[i], flags ? "flags" : "messages");
            return -1;
        }
    }
    if (!m[0].have && !m[1].have) {
        snprintf(why, cap, "a directory with neither model-loggp.json nor model-flags.json "
                 "(`railgauge gauge --out DIR` writes them)");
        return -1;
    }
    rg_pmpi.model[RG_PMPI_MESSAGES] = m[0];
    rg_pmpi.model[RG_PMPI_FLAGS]    = m[1].have ? m[1] : m[0];
    return 0;
}

/* The barrier's time under LogP, round by round: a rank that sends s and
 * receives k messages in a round is busy (s-1) max(o, g) + o sending, sees
 * its first message o + L after the round starts (o + L + duplex where it
 * sends in that round too: both ends at once, the flag model's exchange)
 * and handles each for o; a round lasts as long as its busiest rank. For
 * the symmetric schedules (dissemination, n-way) this is the closed form of
 * docs/coll.md. */
static double rg__pmpi_predict(const rg_pmpi_model_t *m, const rg_coll_barrier_spec_t *spec,
                               int P, rg_coll_plan_t *tmp)
{
    double   o = m->o, L = m->L, gap = m->g > o ? m->g : o;
    double   total = 0, *cost;
    uint32_t R = rg_coll_barrier_rounds(spec, P), r;
    rg_err_t err;
    int      q;

    cost = calloc(R ? R : 1, sizeof(*cost));
    if (cost == NULL) {
        return INFINITY;
    }
    for (q = 0; q < P; q++) {
        if (rg_coll_barrier_plan(tmp, spec, P, q, &err) != RG_OK) {
            free(cost);
            return INFINITY;
        }
        for (r = 0; r < tmp->nrounds && r < R; r++) {
            double s = tmp->rounds[r].nsend, k = tmp->rounds[r].nrecv, t;

            double first = o + L + (s > 0 ? m->duplex : 0);

            t = s > 0 ? (s - 1) * gap + o : 0;
            if (k > 0) {
                t = (t > first ? t : first) + k * o;
            }
            if (t > cost[r]) {
                cost[r] = t;
            }
        }
    }
    for (r = 0; r < R; r++) {
        total += cost[r];
    }
    free(cost);
    return total;
}

/* The fastest barrier for P ranks under the model (ties: the simpler). */
static rg_coll_barrier_spec_t rg__pmpi_choose(const rg_pmpi_model_t *m, int P)
{
    static const rg_coll_barrier_alg_t fixed[] = {
        RG_COLL_BARRIER_LINEAR, RG_COLL_BARRIER_BINOMIAL, RG_COLL_BARRIER_RECDBL,
        RG_COLL_BARRIER_DISSEM};
    rg_coll_barrier_spec_t best = {RG_COLL_BARRIER_DISSEM, 1}, c;
    rg_coll_plan_t         tmp;
    double                 t, tbest = INFINITY;
    int                    i;

    rg_coll_plan_init(&tmp);
    for (i = 0; i < 4 + 6; i++) {
        c.alg = i < 4 ? fixed[i] : RG_COLL_BARRIER_NWAY;
        c.n   = i < 4 ? (fixed[i] == RG_COLL_BARRIER_DISSEM ? 1 : 0) : i - 2;  /* 2 .. 7 */
        t     = rg__pmpi_predict(m, &c, P, &tmp);
        if (t < tbest) {
            tbest = t;
            best  = c;
        }
    }
    rg_coll_plan_fini(&tmp);
    return best;
}

/* The barrier (algorithm and n) the last communicator got (dlsym, tests). */
RG_PMPI_EXPORT const char *railgauge_pmpi_choice(void)
{
    return rg_pmpi.choice;
}

/* 1 where the last new communicator's barrier runs on shared-memory flags
 * (dlsym, tests and benchmarks). */
RG_PMPI_EXPORT int railgauge_pmpi_shm(void)
{
    return rg_pmpi.last_shm;
}

/* The number of barriers this library ran (tests look it up with dlsym). */
RG_PMPI_EXPORT unsigned long railgauge_pmpi_barriers(void)
{
    return rg_pmpi.barriers;
}

static int rg__pmpi_delete(MPI_Comm comm, int keyval, void *attr, void *extra)
{
    rg_pmpi_comm_t *c = attr;

    (void)comm;
    (void)keyval;
    (void)extra;
    if (c != NULL) {
        if (c->win != MPI_WIN_NULL) {
            PMPI_Win_free(&c->win);
        }
        rg_coll_flags_fini(&c->flags);
        if (c->dup != MPI_COMM_NULL) {
            PMPI_Comm_free(&c->dup);
        }
        rg_coll_plan_fini(&c->plan);
        free(c->reqs);
        free(c->stats);
        free(c);
    }
    return MPI_SUCCESS;
}

/* The variable that setting `name` of the table is read from now (its RG_
 * name, or its former name where only that is set), for messages. */
static const char *rg__pmpi_var(const char *name, char *buf, size_t cap)
{
    if (rg_config_source(&rg_pmpi_config_table, rg_pmpi_config_aliases, name, buf, cap,
                         NULL) != RG_OK) {
        snprintf(buf, cap, "RG_PMPI_%s", name);
    }
    return buf;
}

static void rg__pmpi_why(char *why, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The reason of a bad setting into why, cut short where it does not fit (a
 * model path can be as long as PATH_MAX; one line says enough). */
static void rg__pmpi_why(char *why, size_t cap, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(why, cap, fmt, ap);
    va_end(ap);
}

/* Reads this rank's settings: MPI_SUCCESS, or MPI_ERR_ARG with the reason in
 * why. */
static int rg__pmpi_settings(char *why, size_t cap)
{
    /* Static: some 5 KiB that the application's stack need not hold. */
    static rg_pmpi_config_t cfg;
    char                    sub[300], var[64];
    rg_err_t                err;

    rg_pmpi.fixed = 0;
    rg_pmpi.shm = 1;
    rg_pmpi.model[RG_PMPI_MESSAGES].have = 0;
    rg_pmpi.model[RG_PMPI_FLAGS] = rg__pmpi_flags_default;
    if (rg_config_load_aliased(&rg_pmpi_config_table, rg_pmpi_config_aliases, &cfg, &err) !=
        RG_OK) {
        snprintf(why, cap, "%s", rg_err_message(&err));
        return MPI_ERR_ARG;
    }
    rg_pmpi.verbose = cfg.verbose[0] != '\0' && strcmp(cfg.verbose, "0") != 0;
    if (cfg.barrier_shm[0] != '\0') {
        if (strcmp(cfg.barrier_shm, "0") == 0) {
            rg_pmpi.shm = 0;
        } else if (strcmp(cfg.barrier_shm, "auto") != 0 && strcmp(cfg.barrier_shm, "1") != 0) {
            snprintf(why, cap, "%s=%s: expected auto, 1 or 0",
                     rg__pmpi_var("BARRIER_SHM", var, sizeof(var)), cfg.barrier_shm);
            return MPI_ERR_ARG;
        }
    }
    if (cfg.model[0] != '\0' && cfg.barrier[0] == '\0' &&
        rg__pmpi_models(cfg.model, sub, sizeof(sub)) != 0) {
        rg__pmpi_why(why, cap, "%s=%s: %s", rg__pmpi_var("MODEL", var, sizeof(var)), cfg.model,
                     sub);
        return MPI_ERR_ARG;
    }
    if (cfg.barrier[0] != '\0') {
        rg__pmpi_var("BARRIER", rg_pmpi.fixed_by, sizeof(rg_pmpi.fixed_by));
        if (rg_coll_barrier_parse(cfg.barrier, 0, &rg_pmpi.spec, &err) != RG_OK) {
            snprintf(why, cap, "%s: %s", rg_pmpi.fixed_by, rg_err_message(&err));
            return MPI_ERR_ARG;
        }
        rg_pmpi.fixed = 1;
    }
    return MPI_SUCCESS;
}

/* The settings of every rank, or an error on every rank alike: a rank whose
 * settings are bad must not leave the others waiting in a barrier it will
 * never run. The lowest such rank says why, in one line. */
static int rg__pmpi_setup(void)
{
    char why[400] = "";
    int  rank = 0, size = 1, mine[2], all[2] = {0, 0}, first, rc;

    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &size);
    rg_pmpi.init_err = MPI_SUCCESS;
    /* The lowest rank with a bad setting, and whether every rank allows
     * flags (a rank with RG_PMPI_BARRIER_SHM=0 makes it 0 for all: the
     * engine's choice is collective). */
    mine[0] = rg__pmpi_settings(why, sizeof(why)) != MPI_SUCCESS ? rank : size;
    mine[1] = rg_pmpi.shm;
    rc = PMPI_Allreduce(mine, all, 2, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS) {
        rg_pmpi.init_err = rc;
        return rc;
    }
    first       = all[0];
    rg_pmpi.shm = all[1];
    if (first < size) {
        if (rank == first) {
            if (rank == 0) {
                fprintf(stderr, "railgauge-pmpi: %s\n", why);
            } else {
                fprintf(stderr, "railgauge-pmpi: rank %d: %s\n", rank, why);
            }
        }
        rg_pmpi.init_err = MPI_ERR_ARG;
        return rg_pmpi.init_err;
    }
    rc = PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, rg__pmpi_delete, &rg_pmpi.keyval, NULL);
    if (rc != MPI_SUCCESS) {
        rg_pmpi.init_err = rc;
    }
    return rc;
}

RG_PMPI_EXPORT int MPI_Init(int *argc, char ***argv)
{
    int rc = PMPI_Init(argc, argv);

    return rc != MPI_SUCCESS ? rc : rg__pmpi_setup();
}

RG_PMPI_EXPORT int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    int rc = PMPI_Init_thread(argc, argv, required, provided);

    return rc != MPI_SUCCESS ? rc : rg__pmpi_setup();
}

RG_PMPI_EXPORT int MPI_Finalize(void)
{
    /* The cached duplicates go before MPI does (those of communicators the
     * application freed went with them). */
    if (rg_pmpi.keyval != MPI_KEYVAL_INVALID) {
        MPI_Comm comms[2] = {MPI_COMM_WORLD, MPI_COMM_SELF};
        int      i, flag;
        void    *attr;
        for (i = 0; i < 2; i++) {
            /* Only where set: Open MPI treats deleting an absent attribute as
             * an error, and its default handler aborts. */
            flag = 0;
            if (PMPI_Comm_get_attr(comms[i], rg_pmpi.keyval, &attr, &flag) == MPI_SUCCESS &&
                flag) {
                PMPI_Comm_delete_attr(comms[i], rg_pmpi.keyval);
            }
        }
        PMPI_Comm_free_keyval(&rg_pmpi.keyval);
    }
    return PMPI_Finalize();
}

/* *node: comm's ranks on this node (MPI_COMM_TYPE_SHARED, in comm's order);
 * *all 1 where that is every rank of comm on every rank (collective). */
static int rg__pmpi_one_node(MPI_Comm comm, int size, int rank, MPI_Comm *node, int *all)
{
    int rc, nsize = 0, nrank = -1, mine;

    *all = 0;
    rc = PMPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, node);
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    if ((rc = PMPI_Comm_size(*node, &nsize)) != MPI_SUCCESS ||
        (rc = PMPI_Comm_rank(*node, &nrank)) != MPI_SUCCESS) {
        PMPI_Comm_free(node);
        return rc;
    }
    mine = nsize == size && nrank == rank;
    rc = PMPI_Allreduce(&mine, all, 1, MPI_INT, MPI_LAND, comm);
    if (rc != MPI_SUCCESS || !*all) {
        *all = 0;
        PMPI_Comm_free(node);
    }
    return rc;
}

/* Flags in a shared window over node (every rank of comm; collective).
 * Leaves c->win MPI_WIN_NULL where the layout or the window cannot be had:
 * the barrier then uses messages, on every rank alike. */
static int rg__pmpi_shm(MPI_Comm comm, MPI_Comm node, rg_pmpi_comm_t *c, int size, int rank)
{
    MPI_Aint bytes, got = 0;
    rg_err_t err;
    void    *base = NULL;
    int      rc, unit, all = 0, mine;

    mine = rg_coll_flags_layout(&c->flags, &c->plan, &err) == RG_OK;
    rc = PMPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_LAND, comm);
    if (rc != MPI_SUCCESS || !all) {
        rg_coll_flags_fini(&c->flags);
        return rc;
    }
    bytes = (MPI_Aint)rg_coll_flags_bytes(&c->flags, size);
    rc = PMPI_Win_allocate_shared(rank == 0 ? (bytes ? bytes : 1) : 0, 1, MPI_INFO_NULL, node,
                                  &base, &c->win);
    if (rc == MPI_SUCCESS) {
        rc = PMPI_Win_shared_query(c->win, 0, &got, &unit, &base);
    }
    mine = rc == MPI_SUCCESS && got >= bytes && base != NULL;
    rc = PMPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_LAND, comm);
    if (rc != MPI_SUCCESS || !all) {
        if (c->win != MPI_WIN_NULL) {
            PMPI_Win_free(&c->win);
        }
        rg_coll_flags_fini(&c->flags);
        return rc;
    }
    if (rank == 0) {
        memset(base, 0, (size_t)bytes);
    }
    rg_coll_flags_attach(&c->flags, base, size);
    /* The zeroed lines visible to every rank before any barrier runs. */
    return PMPI_Barrier(comm);
}

/* The barrier of a communicator of size ranks on the engine: RG_PMPI_BARRIER,
 * else the model's choice for the engine, else dissemination. *why names the
 * source. */
static rg_coll_barrier_spec_t rg__pmpi_spec(int engine, int size, const char **why)
{
    static const rg_coll_barrier_spec_t dissem = {RG_COLL_BARRIER_DISSEM, 1};

    if (rg_pmpi.fixed) {
        *why = rg_pmpi.fixed_by;
        return rg_pmpi.spec;
    }
    if (rg_pmpi.model[engine].have) {
        *why = rg_pmpi.model[engine].src;
        return rg__pmpi_choose(&rg_pmpi.model[engine], size);
    }
    *why = "no model of the messages (RG_PMPI_MODEL): dissemination";
    return dissem;
}

/* The communicator's cached state, made on its first barrier (collective:
 * every rank of comm is in that barrier). The engine is settled first (flags
 * where every rank is on this node), then the barrier for it; rank 0's
 * choice is the communicator's, so that ranks whose settings or model files
 * differ still run one schedule. */
static int rg__pmpi_comm(MPI_Comm comm, rg_pmpi_comm_t **c_p)
{
    rg_pmpi_comm_t        *c;
    rg_coll_barrier_spec_t spec;
    rg_err_t               err;
    MPI_Comm               node = MPI_COMM_NULL;
    const char            *why = "";
    int                    flag = 0, rc, size, rank, one = 0, engine, wire[2];

    rc = PMPI_Comm_get_attr(comm, rg_pmpi.keyval, &c, &flag);
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    if (flag) {
        *c_p = c;
        return MPI_SUCCESS;
    }
    c = calloc(1, sizeof(*c));
    if (c == NULL) {
        return MPI_ERR_NO_MEM;
    }
    c->dup = MPI_COMM_NULL;
    c->win = MPI_WIN_NULL;
    rg_coll_plan_init(&c->plan);
    if ((rc = PMPI_Comm_size(comm, &size)) != MPI_SUCCESS ||
        (rc = PMPI_Comm_rank(comm, &rank)) != MPI_SUCCESS) {
        goto fail;
    }
    if (rg_pmpi.shm && size > 1 &&
        (rc = rg__pmpi_one_node(comm, size, rank, &node, &one)) != MPI_SUCCESS) {
        goto fail;
    }
    engine  = one ? RG_PMPI_FLAGS : RG_PMPI_MESSAGES;
    spec    = rg__pmpi_spec(engine, size, &why);
    wire[0] = (int)spec.alg;
    wire[1] = spec.n;
    if ((rc = PMPI_Bcast(wire, 2, MPI_INT, 0, comm)) != MPI_SUCCESS) {
        goto fail;
    }
    spec.alg = (rg_coll_barrier_alg_t)wire[0];
    spec.n   = wire[1];
    rg_coll_barrier_format(&spec, rg_pmpi.choice, sizeof(rg_pmpi.choice));
    if (rg_coll_barrier_plan(&c->plan, &spec, size, rank, &err) != RG_OK) {
        fprintf(stderr, "railgauge-pmpi: rank %d: %s\n", rank, rg_err_message(&err));
        rc = MPI_ERR_OTHER;
        goto fail;
    }
    c->reqs = malloc((c->plan.max_ops ? c->plan.max_ops : 1) * sizeof(*c->reqs));
    c->stats = malloc((c->plan.max_ops ? c->plan.max_ops : 1) * sizeof(*c->stats));
    if (c->reqs == NULL || c->stats == NULL) {
        rc = MPI_ERR_NO_MEM;
        goto fail;
    }
    if ((rc = PMPI_Comm_dup(comm, &c->dup)) != MPI_SUCCESS) {
        goto fail;
    }
    if (one && (rc = rg__pmpi_shm(comm, node, c, size, rank)) != MPI_SUCCESS) {
        goto fail;
    }
    rg_pmpi.last_shm = c->win != MPI_WIN_NULL;
    if (rg_pmpi.verbose && rank == 0) {
        fprintf(stderr, "railgauge-pmpi: a communicator of %d ranks%s: %s on %s (%s)\n", size,
                one ? " on one node" : "", rg_pmpi.choice,
                rg_pmpi.last_shm ? "shared-memory flags" : "MPI point-to-point", why);
    }
    if ((rc = PMPI_Comm_set_attr(comm, rg_pmpi.keyval, c)) != MPI_SUCCESS) {
        goto fail;
    }
    if (node != MPI_COMM_NULL) {
        PMPI_Comm_free(&node);
    }
    *c_p = c;
    return MPI_SUCCESS;
fail:
    if (node != MPI_COMM_NULL) {
        PMPI_Comm_free(&node);
    }
    rg__pmpi_delete(comm, rg_pmpi.keyval, c, NULL);
    return rc;
}

RG_PMPI_EXPORT int MPI_Barrier(MPI_Comm comm)
{
    rg_pmpi_comm_t *c;
    uint32_t        r, i, k;
    int             rc, inter = 0;

    if (rg_pmpi.init_err != MPI_SUCCESS) {
        return rg_pmpi.init_err;
    }
    if (rg_pmpi.keyval == MPI_KEYVAL_INVALID || comm == MPI_COMM_NULL) {
        return PMPI_Barrier(comm); /* before MPI_Init, or MPI's own error */
    }
    if ((rc = PMPI_Comm_test_inter(comm, &inter)) != MPI_SUCCESS) {
        return rc;
    }
    if (inter) {
        return PMPI_Barrier(comm);
    }
    if ((rc = rg__pmpi_comm(comm, &c)) != MPI_SUCCESS) {
        return rc;
    }
    if (c->win != MPI_WIN_NULL) {
        uint32_t round;
        int      peer;
        /* No timeout: MPI_Barrier waits as long as it takes. */
        if (rg_coll_flags_run(&c->flags, &c->plan, c->plan.nrounds, ++c->epoch, 0, &round,
                              &peer) != RG_OK) {
            return MPI_ERR_OTHER;
        }
        rg_pmpi.barriers++;
        return MPI_SUCCESS;
    }
    for (r = 0; r < c->plan.nrounds; r++) {
        const rg_coll_round_t *rd = &c->plan.rounds[r];
        k = 0;
        if (rd->nsend + rd->nrecv == 0) {
            continue; /* most rounds of the double ring */
        }
        /* Only this round's receives are posted and MPI matches a pair's
         * messages in order, so a pair that carries several messages
         * (coll/sched.h) meets each in its round. */
        for (i = 0; i < rd->nrecv; i++, k++) {
            rc = PMPI_Irecv(NULL, 0, MPI_BYTE, c->plan.peers[rd->recv_off + i], 0, c->dup,
                            &c->reqs[k]);
            if (rc != MPI_SUCCESS) {
                return rc;
            }
        }
        for (i = 0; i < rd->nsend; i++, k++) {
            rc = PMPI_Isend(NULL, 0, MPI_BYTE, c->plan.peers[rd->send_off + i], 0, c->dup,
                            &c->reqs[k]);
            if (rc != MPI_SUCCESS) {
                return rc;
            }
        }
        rc = PMPI_Waitall((int)k, c->reqs, c->stats);
        if (rc != MPI_SUCCESS) {
            return rc;
        }
    }
    rg_pmpi.barriers++;
    return MPI_SUCCESS;
}
