/*
 * railgauge-bench: command line, set-up and tear-down around the patterns.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/config.h"
#include "base/timer.h"
#include "bench.h"
#include "pmpi_config.h"
#include "proto/proto.h"
#include "rails/rails.h"

static void rg__bench_usage(FILE *f)
{
    fprintf(f,
        "usage: railgauge-bench PATTERN [options]\n"
        "\n"
        "Patterns:\n"
        "  prtt       PRTT(1,0,s), PRTT(n,0,s) and PRTT(n,d,s) over a size sweep (LogGP)\n"
        "  pingpong   round-trip time of one message of each size\n"
        "  onen       1:n and n:1 round trips to p = 1 .. ranks-1 peers, with the posting\n"
        "             overheads o_s(p), o_r(p), per posting mode (LoP; docs/lop.md)\n"
        "  bw         streaming bandwidth between ranks 0 and 1, one way or both (--bidir;\n"
        "             railgauge-bench bw --help)\n"
        "  msgrate    message rate of ranks paired 0->1, 2->3, ... (osu_mbw_mr; --window W;\n"
        "             railgauge-bench msgrate --help)\n"
        "  bcast      broadcast latency from a root, binomial tree or flat (osu_bcast;\n"
        "             railgauge-bench bcast --help)\n"
        "  alltoall   all-to-all by pairwise exchange: latency and bandwidth (osu_alltoall;\n"
        "             railgauge-bench alltoall --help)\n"
        "  barrier    latency of a barrier of coll/ (--algorithm linear|binomial|recdbl|\n"
        "             dissem|nway --n N|ring|kdissem:K|recexch:K; railgauge-bench barrier\n"
        "             --help; docs/coll.md)\n"
        "  flagprtt   PRTT round trips of signals over the barrier's shared-memory flags\n"
        "             (the flag model; railgauge-bench flagprtt --help; docs/coll.md)\n"
        "  rxwin      workloads over the shared receive window (--pattern alltoall|halo2d|\n"
        "             halo3d|incast|mix; railgauge-bench rxwin --help; docs/rxwin.md)\n"
        "\n"
        "Options:\n"
        "  --transport T      shm, tcp, ofi:<provider> (ofi:tcp, ofi:shm, ofi:udp,\n"
        "                     ofi:verbs, ...) or mpi (ranks started by mpirun.openmpi\n"
        "                     or mpiexec.mpich) (default: $RG_TRANSPORT, else shm)\n"
        "  --out FILE         JSON Lines output (default: standard output)\n"
        "  --sizes LIST       comma-separated sizes, units allowed (1,8,4KiB,1MiB);\n"
        "                     onen's default is 8\n"
        "  --min-size S       smallest size of the sweep (default 1)\n"
        "  --max-size S       largest size of the sweep (default 1MiB)\n"
        "  --per-octave K     sizes per doubling in the sweep (default 2)\n"
        "  --n N              successive messages of PRTT(n,*,s) (default 16)\n"
        "  --target-rel X     stop a point when its median's 95%% CI half-width is\n"
        "                     below X times the median (default 0.01; onen 0.02)\n"
        "  --min-reps N       repetitions at least (default 20)\n"
        "  --max-reps N       repetitions at most (default 20000)\n"
        "  --point-budget S   seconds one point may take at most (default 0.25)\n"
        "  --point-min S      onen: seconds a point runs at least, stable or not, so\n"
        "                     that its rounds span many scheduler periods (default 0.1)\n"
        "  --budget S         seconds the whole run may take (default 0: no limit)\n"
        "  --warmup S         warm-up seconds before each size (default 0.002)\n"
        "  --passes P         prtt: sweep the sizes P times (1..9, default 1; above 1\n"
        "                     each pass in its own shuffled order), each with 1/P of\n"
        "                     the repetitions and budget; a point pools the samples of its\n"
        "                     passes but those disturbed (see --pass-tol)\n"
        "  --pass-tol X       prtt: a pass whose interquartile mean exceeds the point's\n"
        "                     fastest pass by more than X times is left out (default 0.1)\n"
        "  --order-seed N     prtt: seed of the passes' shuffled orders (default 1)\n"
        "  --confirm K        prtt with --passes: up to K more passes over the points whose\n"
        "                     fastest pass no other pass confirms within --pass-tol,\n"
        "                     in the last 15%% of --budget (default 0; passes + K <= 9)\n"
        "  --state-ref US     prtt with --passes: the run's reference state is given, the\n"
        "                     band about this probe (1.25x wide for PRTT(n,0,1), 1.6x for\n"
        "                     c2c; the state_mid_us of another run with the same probe: a\n"
        "                     refinement keeps the state of its sweep), not chosen from\n"
        "                     this run's probes\n"
        "  --state-probe P    prtt with --passes: what probes the host's state: c2c, a\n"
        "                     cache line bounced between the two ranks (one host only),\n"
        "                     prtt, PRTT(n,0,1), or auto (default): c2c where the ranks\n"
        "                     share a host, else prtt\n"
        "  --max-p P          onen: peers up to P (default: ranks - 1)\n"
        "  --modes LIST       onen: of single, list, inject, rma (default: all that the\n"
        "                     transport has; the others are reported as unsupported)\n"
        "  --directions LIST  onen: of 1:n, n:1 (default: both)\n"
        "  --monotonic-timer  use clock_gettime instead of the TSC\n"
        "  --print-config     list every RG_* setting with its value and exit\n"
        "  -h, --help         this text\n");
}

/* One table loaded from the environment now (its former names too) and
 * listed; RG_BENCH_EXIT_USAGE where a value is bad. */
static int rg__bench_print_table(const rg_config_table_t *t, const rg_config_alias_t *aliases,
                                 void *scratch, size_t size)
{
    rg_err_t err;

    memset(scratch, 0, size);
    if (rg_config_load_aliased(t, aliases, scratch, &err) != RG_OK) {
        fprintf(stderr, "railgauge-bench: %s\n", rg_err_message(&err));
        return RG_BENCH_EXIT_USAGE;
    }
    printf("[%s]\n", t->prefix);
    rg_config_print_aliased(t, aliases, scratch, stdout);
    return 0;
}

/* Every setting of the layers below, as loaded from the environment now. */
static int rg__bench_print_config(void)
{
    const rg_config_table_t *const *t;
    /* Large and aligned enough for any settings struct of the tables. */
    _Alignas(16) unsigned char scratch[8192];
    rg_err_t                       err;
    int                            rc = 0;

    for (t = rg_xport_config_tables(); *t != NULL; t++) {
        memset(scratch, 0, sizeof(scratch));
        if (rg_config_load(*t, scratch, &err) != RG_OK) {
            fprintf(stderr, "railgauge-bench: %s\n", rg_err_message(&err));
            rc = RG_BENCH_EXIT_USAGE;
            continue;
        }
        printf("[%s]\n", (*t)->prefix[0] != '\0' ? (*t)->prefix : "RG");
        rg_config_print(*t, scratch, stdout);
    }
    /* The runtime's (the barrier and rxwin patterns run over it). */
    if (rg__bench_print_table(&rg_proto_config_table, NULL, scratch, sizeof(scratch)) != 0) {
        rc = RG_BENCH_EXIT_USAGE;
    }
    /* The PMPI library's (native/pmpi), read in the MPI programs it is
     * preloaded into, with the former names it still reads. */
    if (rg__bench_print_table(&rg_pmpi_config_table, rg_pmpi_config_aliases, scratch,
                              sizeof(scratch)) != 0) {
        rc = RG_BENCH_EXIT_USAGE;
    }
    return rc;
}

/* The command line of prtt, pingpong and onen, as it is read: the options
 * and what becomes of them only once all are read (the sweep). */
typedef struct rg__bench_cli {
    rg_bench_opts_t o;
    const char     *sizes_arg;
    size_t          min_size, max_size;
    int             per_octave;
    int             passes_given; /* an option of prtt's passes */
} rg__bench_cli_t;

static int rg__bench_set_size(const char *arg, size_t *out)
{
    rg_err_t err;

    if (rg_parse_size(arg, out, &err) != RG_OK) {
        return rg_bench_usage_error("%s", rg_err_message(&err));
    }
    if (*out > RG_BENCH_SIZE_LIMIT) {
        return rg_bench_usage_error("size %s is above the limit of 1 GiB", arg);
    }
    return 0;
}

static int rg__bench_set_min(void *cli, const char *arg, const char *prefix)
{
    (void)prefix;
    return rg__bench_set_size(arg, &((rg__bench_cli_t *)cli)->min_size);
}

static int rg__bench_set_max(void *cli, const char *arg, const char *prefix)
{
    (void)prefix;
    return rg__bench_set_size(arg, &((rg__bench_cli_t *)cli)->max_size);
}

static int rg__bench_set_modes(void *cli, const char *arg, const char *prefix)
{
    const char *bad;

    if (rg_bench_onen_parse_modes(arg, &((rg__bench_cli_t *)cli)->o.modes, &bad) != 0) {
        fprintf(stderr, "%s: --modes: unknown mode '%s' in '%s' (known: single, list, inject, "
                "rma)\n", prefix, bad, arg);
        return RG_BENCH_EXIT_USAGE;
    }
    return 0;
}

static int rg__bench_set_dirs(void *cli, const char *arg, const char *prefix)
{
    const char *bad;

    if (rg_bench_onen_parse_directions(arg, &((rg__bench_cli_t *)cli)->o.directions, &bad) != 0) {
        fprintf(stderr, "%s: --directions: unknown direction '%s' in '%s' (known: 1:n, n:1)\n",
                prefix, bad, arg);
        return RG_BENCH_EXIT_USAGE;
    }
    return 0;
}

#define RG__CLI rg__bench_cli_t
/* --state-probe, in the order of RG_BENCH_PROBE_*. */
static const char *const rg__state_probes[] = {"auto", "c2c", "prtt", NULL};
#define RG__CALL(name, fn, given) \
    {(name), RG_BOPT_CALL, 0, 0, 0, NULL, NULL, (fn), (given)}

static const rg_bench_optdef_t rg__bench_optdefs[] = {
    RG_BOPT("transport", NAME, RG__CLI, o.transport, 0, sizeof(((RG__CLI *)0)->o.transport),
            NULL),
    RG_BOPT("out", STRING, RG__CLI, o.out_path, 0, 0, NULL),
    RG_BOPT_G("sizes", STRING, RG__CLI, sizes_arg, 0, 0, NULL, o.sizes_given),
    RG__CALL("min-size", rg__bench_set_min, (long)offsetof(RG__CLI, o.sizes_given)),
    RG__CALL("max-size", rg__bench_set_max, (long)offsetof(RG__CLI, o.sizes_given)),
    RG_BOPT_G("per-octave", INT, RG__CLI, per_octave, 1, 16, "an integer 1..16", o.sizes_given),
    RG_BOPT("n", INT, RG__CLI, o.n, 2, 4096, "an integer 2..4096"),
    RG_BOPT_G("target-rel", DOUBLE, RG__CLI, o.target_rel, 1e-4, 1.0, "in [0.0001, 1]",
              o.target_given),
    RG_BOPT("min-reps", INT, RG__CLI, o.min_reps, 1, 100000000, "a positive integer"),
    RG_BOPT("max-reps", INT, RG__CLI, o.max_reps, 1, 100000000, "a positive integer"),
    RG_BOPT_G("point-budget", DOUBLE, RG__CLI, o.point_budget_s, 1e-4, 3600,
              "seconds in (0, 3600]", o.pbudget_given),
    RG_BOPT("budget", DOUBLE, RG__CLI, o.budget_s, 0, 86400, "seconds in [0, 86400]"),
    RG_BOPT("warmup", DOUBLE, RG__CLI, o.warmup_s, 0, 10, "seconds in [0, 10]"),
    RG_BOPT("monotonic-timer", FLAG, RG__CLI, o.force_monotonic, 0, 0, NULL),
    RG_BOPT("max-p", INT, RG__CLI, o.max_p, 1, 1 << 20, "a positive integer"),
    RG__CALL("modes", rg__bench_set_modes, -1),
    RG__CALL("directions", rg__bench_set_dirs, -1),
    RG_BOPT_G("point-min", DOUBLE, RG__CLI, o.point_min_s, 0, 3600, "seconds in [0, 3600]",
              o.pmin_given),
    RG_BOPT_G("passes", INT, RG__CLI, o.passes, 1, RG_BENCH_MAX_PASSES, "an integer 1..9",
              passes_given),
    RG_BOPT_G("pass-tol", DOUBLE, RG__CLI, o.pass_tol, 0.001, 10, "in [0.001, 10]",
              passes_given),
    RG_BOPT_G("confirm", INT, RG__CLI, o.confirm, 0, RG_BENCH_MAX_PASSES - 1, "an integer 0..8",
              passes_given),
    RG_BOPT_G("order-seed", UINT, RG__CLI, o.order_seed, 0, 4294967295.0,
              "an integer 0..4294967295", passes_given),
    RG_BOPT_G("state-ref", DOUBLE, RG__CLI, o.state_ref_us, 1e-3, 1e9,
              "microseconds in [0.001, 1e9]", passes_given),
    {"state-probe", RG_BOPT_CHOICE, offsetof(RG__CLI, o.state_probe), 0, 0, "auto, c2c or prtt",
     rg__state_probes, NULL, (long)offsetof(RG__CLI, passes_given)},
};

/* What holds only once every option is read: options of another pattern,
 * limits between options, onen's defaults, and the sweep. */
static int rg__bench_finish_args(rg__bench_cli_t *cli, rg_bench_opts_t *opts)
{
    int onen = strcmp(opts->pattern, "onen") == 0;

    if (opts->min_reps > opts->max_reps) {
        return rg_bench_usage_error("--min-reps is above --max-reps%s", "");
    }
    if (cli->passes_given && strcmp(opts->pattern, "prtt") != 0) {
        return rg_bench_usage_error("--passes, --pass-tol, --order-seed, --confirm, "
                                     "--state-ref and --state-probe are options of the prtt "
                                     "pattern, not of %s", opts->pattern);
    }
    if (opts->state_ref_us > 0 && opts->passes < 2) {
        return rg_bench_usage_error("--state-ref needs --passes 2 or more (the host's state "
                                     "is probed between passes)%s", "");
    }
    if (opts->state_probe != RG_BENCH_PROBE_AUTO && opts->passes < 2) {
        return rg_bench_usage_error("--state-probe needs --passes 2 or more (the host's state "
                                     "is probed between passes)%s", "");
    }
    if (opts->confirm > 0 && opts->passes < 2) {
        return rg_bench_usage_error("--confirm needs --passes 2 or more (a pass confirms "
                                     "another)%s", "");
    }
    if (opts->passes + opts->confirm > RG_BENCH_MAX_PASSES) {
        return rg_bench_usage_error("--passes plus --confirm: at most 9 passes in all%s", "");
    }
    if (!onen && (opts->max_p != 0 || opts->modes != 0 || opts->directions != 0 ||
                  opts->pmin_given)) {
        return rg_bench_usage_error("--max-p, --modes, --directions and --point-min are "
                                     "options of the onen pattern, not of %s", opts->pattern);
    }
    if (onen) {
        /* A round of onen is one small message per peer: 8 bytes unless told,
         * and a looser target, since rounds of many peers on few cores spread
         * more than a ping-pong. */
        if (!opts->target_given) {
            opts->target_rel = 0.02;
        }
        if (!opts->pmin_given) {
            opts->point_min_s = 0.1;
        }
        if (opts->point_min_s > opts->point_budget_s) {
            return rg_bench_usage_error("--point-min is above --point-budget%s",
                                         opts->pbudget_given || opts->pmin_given ? ""
                                         : " (0.25 s by default)");
        }
        if (!opts->sizes_given) {
            opts->sizes[0] = 8;
            opts->nsizes   = 1;
            return 0;
        }
    }
    if (cli->sizes_arg != NULL) {
        return rg_bench_parse_sizes(cli->sizes_arg, opts);
    }
    if (cli->min_size > cli->max_size) {
        return rg_bench_usage_error("--min-size is above --max-size%s", "");
    }
    return rg_bench_make_sweep(opts, cli->min_size, cli->max_size, cli->per_octave);
}

static int rg__bench_parse_args(int argc, char **argv, rg_bench_opts_t *opts)
{
    rg__bench_cli_t cli;
    rg_err_t        err;
    int             rc;

    memset(&cli, 0, sizeof(cli));
    if (rg_xport_default_name(cli.o.transport, sizeof(cli.o.transport), &err) != RG_OK) {
        return rg_bench_usage_error("%s", rg_err_message(&err));
    }
    cli.o.n              = 16;
    cli.o.target_rel     = 0.01;
    cli.o.min_reps       = 20;
    cli.o.max_reps       = 20000;
    cli.o.point_budget_s = 0.25;
    cli.o.warmup_s       = 0.002;
    cli.o.passes         = 1;
    cli.o.pass_tol       = 0.1;
    cli.o.order_seed     = 1;
    cli.min_size         = 1;
    cli.max_size         = (size_t)1 << 20;
    cli.per_octave       = 2;

    if (argc >= 2 && strcmp(argv[1], "--print-config") == 0) {
        int prc = rg__bench_print_config();
        return prc != 0 ? prc : -1;
    }
    if (argc < 2 || argv[1][0] == '-') {
        if (argc >= 2 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
            rg__bench_usage(stdout);
            return -1;
        }
        rg__bench_usage(stderr);
        return RG_BENCH_EXIT_USAGE;
    }
    cli.o.pattern = argv[1];
    if (strcmp(cli.o.pattern, "prtt") != 0 && strcmp(cli.o.pattern, "pingpong") != 0 &&
        strcmp(cli.o.pattern, "onen") != 0) {
        return rg_bench_usage_error("unknown pattern '%s' (known: prtt, pingpong, onen, bw, "
                                     "msgrate, bcast, alltoall, barrier, flagprtt, rxwin)",
                                     cli.o.pattern);
    }
    rc = rg_bench_getopt(argc, argv, rg__bench_optdefs,
                         sizeof(rg__bench_optdefs) / sizeof(rg__bench_optdefs[0]), &cli,
                         "railgauge-bench", rg__bench_usage);
    if (rc != 0) {
        return rc;
    }
    rc = rg__bench_finish_args(&cli, &cli.o);
    *opts = cli.o;
    return rc;
}

/* The patterns with options and set-up of their own, each in its file:
 * argv[1] names one. prtt, pingpong and onen share this file's options. */
int rg_bench_barrier_main(int argc, char **argv);   /* barrier.c: over the runtime */
int rg_bench_rxwin_main(int argc, char **argv);     /* rxwin.c: over the runtime */
int rg_bench_flagprtt_main(int argc, char **argv);  /* flagprtt.c: the barrier's flags */
int rg_bench_bw_main(int argc, char **argv);        /* bw.c: streaming bandwidth */
int rg_bench_c2c_main(int argc, char **argv);       /* c2c.c: a cache line between CPUs */

static const struct {
    const char *name;
    int (*main)(int argc, char **argv);
} rg__bench_subcommands[] = {
    {"bw", rg_bench_bw_main},
    {"msgrate", rg_bench_coll_main},
    {"bcast", rg_bench_coll_main},
    {"alltoall", rg_bench_coll_main},
    {"barrier", rg_bench_barrier_main},
    {"flagprtt", rg_bench_flagprtt_main},
    {"rxwin", rg_bench_rxwin_main},
    {"c2c", rg_bench_c2c_main},
};

int main(int argc, char **argv)
{
    rg_bench_t bench;
    int        rc;
    size_t     i;

    /* The rails transport lives above xport and joins its registry here, for
     * every pattern and --print-config. */
    if (rg_rails_register() != RG_OK) {
        fprintf(stderr, "railgauge-bench: cannot register the rails transport\n");
        return RG_BENCH_EXIT_FAIL;
    }
    for (i = 0; argc >= 2 && i < sizeof(rg__bench_subcommands) / sizeof(rg__bench_subcommands[0]);
         i++) {
        if (strcmp(argv[1], rg__bench_subcommands[i].name) == 0) {
            return rg__bench_subcommands[i].main(argc, argv);
        }
    }
    memset(&bench, 0, sizeof(bench));
    rc = rg__bench_parse_args(argc, argv, &bench.opts);
    if (rc != 0) {
        return rc < 0 ? 0 : rc;
    }
    if (rg_xport_find(bench.opts.transport) == NULL) {
        const rg_xport_ops_t *const *t;
        fprintf(stderr, "railgauge-bench: unknown transport '%s' (known:", bench.opts.transport);
        for (t = rg_xport_registry(); *t != NULL; t++) {
            fprintf(stderr, " %s", (*t)->name);
        }
        fprintf(stderr, ")\n");
        return RG_BENCH_EXIT_USAGE;
    }

    rc = RG_BENCH_EXIT_FAIL;
    if (rg_timer_init(&bench.timer, bench.opts.force_monotonic, &bench.err) != RG_OK) {
        goto out;
    }
    if (rg_boot_init(&bench.boot, &bench.err) != RG_OK) {
        goto out;
    }
    bench.rank = rg_boot_rank(bench.boot);
    bench.size = rg_boot_size(bench.boot);
    if (bench.size < 2) {
        rg_err_set(&bench.err, RG_ERR_INVALID,
                   "pattern '%s' needs at least 2 ranks; start it with `railgauge run -n 2 -- "
                   "railgauge-bench %s` (or mpirun.openmpi -n 2 / mpiexec.mpich -n 2, which "
                   "the mpi transport needs)", bench.opts.pattern, bench.opts.pattern);
        rc = RG_BENCH_EXIT_USAGE;
        goto out;
    }
    if (rg_xport_open(bench.opts.transport, bench.boot, &bench.xp, &bench.err) != RG_OK) {
        goto out;
    }
    /* A measurement must never include a futex or poll wake-up: with the
     * delays of PRTT(n,d,s) (up to a few milliseconds at 1 MiB) the default
     * yield phase would run out and put the waiting rank to sleep, adding the
     * scheduler's wake-up latency to o and g. sched_yield() still lets other
     * runnable processes in, so an oversubscribed machine keeps working.
     * RG_XPORT_YIELD_NS, when set, wins. */
    if (!rg_xport_wait_given("YIELD_NS") && bench.xp->wait.yield_ns < 200e6) {
        bench.xp->wait.yield_ns = 200e6;
    }
    if (bench.rank == 0) {
        bench.out = stdout;
        if (bench.opts.out_path != NULL) {
            bench.out = fopen(bench.opts.out_path, "w");
            if (bench.out == NULL) {
                rg_err_set_errno(&bench.err, RG_ERR_IO, errno, "cannot open '%s' for writing",
                                 bench.opts.out_path);
                goto out;
            }
        }
    }
    if (strcmp(bench.opts.pattern, "prtt") == 0) {
        rc = rg_bench_prtt_run(&bench);
    } else if (strcmp(bench.opts.pattern, "onen") == 0) {
        rc = rg_bench_onen_run(&bench);
    } else {
        rc = rg_bench_pingpong_run(&bench);
    }

out:
    /* A user error found after the start (--max-p above the ranks) is the
     * same on every rank: one line, from rank 0. */
    if (rc == RG_BENCH_EXIT_USAGE && bench.rank != 0) {
        rc = -rc;
    }
    if (rc > RG_BENCH_EXIT_OK) {
        fprintf(stderr, "railgauge-bench: rank %d: %s\n", bench.rank, rg_err_message(&bench.err));
    }
    if (bench.out != NULL && bench.out != stdout) {
        fclose(bench.out);
    }
    free(bench.sbuf);
    free(bench.rbuf);
    free(bench.samples);
    rg_xport_close(bench.xp);
    rg_boot_fini(bench.boot);
    return rc < 0 ? -rc : rc;
}
