/*
 * railgauge: which MPI launcher started this process, and loading the MPI
 * plugin of its flavour.
 *
 * The tools themselves are not linked with MPI: Open MPI and MPICH export the
 * same symbol names with different ABIs, so one binary can hold at most one
 * of them. Instead each flavour's code is a plugin, built with that flavour's
 * compiler wrapper, and the launcher's environment says which one to load:
 *
 *   mpirun.openmpi  sets OMPI_COMM_WORLD_SIZE (and _RANK)   -> openmpi
 *   mpiexec.mpich   sets PMI_SIZE and PMI_RANK (hydra, PMI-1) -> mpich
 *
 * The plugin is looked for beside the running executable (a build tree) and
 * in ../lib/railgauge/ from it (an installed tree: bin/ and lib/railgauge/),
 * unless RG_MPI_PLUGIN names it. It is loaded with RTLD_GLOBAL, because Open
 * MPI's own components, which libmpi loads in turn, resolve libmpi's symbols
 * from the global scope, and it is never unloaded: MPI libraries leave
 * threads and exit handlers behind.
 */
#include "boot/mpi_load.h"

#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "base/config.h"
#include "boot/boot.h"

typedef struct rg__mpi_config {
    char   flavour[RG_CONFIG_STRING_MAX];
    char   plugin[RG_CONFIG_STRING_MAX];
    size_t short_max;
} rg__mpi_config_t;

static const rg_config_field_t rg__mpi_config_fields[] = {
    {"FLAVOUR", "auto",
     "MPI plugin that ranks started by an MPI launcher load: auto (the launcher's "
     "own: OMPI_COMM_WORLD_SIZE in the environment means Open MPI, PMI_SIZE MPICH), "
     "openmpi or mpich",
     offsetof(rg__mpi_config_t, flavour), RG_CONFIG_STRING},
    {"PLUGIN", "",
     "path of the MPI plugin to load; empty: librailgauge-mpi-<flavour>.so beside "
     "the tool, else in ../lib/railgauge/ from it",
     offsetof(rg__mpi_config_t, plugin), RG_CONFIG_STRING},
    {"SHORT_MAX", "16KiB",
     "the mpi transport sends a message up to this size as one MPI message, a "
     "longer one as an 8-byte length message and then the payload (on a second "
     "communicator), so that every MPI receive is posted with room for what "
     "arrives (MPI itself would truncate); a receive smaller than this takes short "
     "messages through a bounce buffer of this size. The same on every rank",
     offsetof(rg__mpi_config_t, short_max), RG_CONFIG_SIZE},
    {NULL, NULL, NULL, 0, 0}
};

const rg_config_table_t rg_boot_mpi_config_table = {"MPI", rg__mpi_config_fields};

typedef struct rg__mpi_flavour {
    const char *name;
    const char *launcher;
    const char *size_var;   /* set by the launcher: the job size */
    const char *wrapper;    /* the compiler wrapper that builds its plugin */
    const char *packages;   /* Debian packages that bring the wrapper */
} rg__mpi_flavour_t;

static const rg__mpi_flavour_t rg__mpi_flavours[] = {
    {"openmpi", "mpirun.openmpi", "OMPI_COMM_WORLD_SIZE", "mpicc.openmpi",
     "openmpi-bin libopenmpi-dev"},
    {"mpich", "mpiexec.mpich", "PMI_SIZE", "mpicc.mpich", "mpich libmpich-dev"},
};
#define RG__MPI_NFLAVOURS (sizeof(rg__mpi_flavours) / sizeof(rg__mpi_flavours[0]))

static const rg__mpi_flavour_t *rg__mpi_flavour_find(const char *name)
{
    size_t i;

    for (i = 0; i < RG__MPI_NFLAVOURS; i++) {
        if (strcmp(rg__mpi_flavours[i].name, name) == 0) {
            return &rg__mpi_flavours[i];
        }
    }
    return NULL;
}

/*
 * These variables are the MPI launchers' contract with their processes, not
 * railgauge settings, which is why they are read here directly (as boot.c
 * reads the contract of railgauge's own launcher).
 */
int rg__boot_mpi_detect(rg_mpi_env_t *env)
{
    const char *text;
    char       *end;
    long        v;
    size_t      i;

    for (i = 0; i < RG__MPI_NFLAVOURS; i++) {
        text = getenv(rg__mpi_flavours[i].size_var);
        if (text == NULL || text[0] == '\0') {
            continue;
        }
        env->flavour  = rg__mpi_flavours[i].name;
        env->launcher = rg__mpi_flavours[i].launcher;
        env->variable = rg__mpi_flavours[i].size_var;
        errno = 0;
        v = strtol(text, &end, 10);
        env->size = (errno == 0 && *end == '\0' && v >= 1 && v <= (1L << 24)) ? (int)v : -1;
        return 1;
    }
    return 0;
}

/* RG_MPI_WATCH is part of the contract between railgauge's MPI launcher and
 * its ranks (as RG_BOOT_FD is for `railgauge run`), not a setting. */
int rg__boot_mpi_watch(void)
{
    struct sockaddr_un addr;
    const char        *path = getenv("RG_MPI_WATCH");
    int                fd;

    if (path == NULL || path[0] == '\0' || strlen(path) >= sizeof(addr.sun_path)) {
        return -1;
    }
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        return -1;
    }
    memset(&addr, 0, sizeof(addr));
    addr.sun_family = AF_UNIX;
    memcpy(addr.sun_path, path, strlen(path));
    if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* The directory of the running executable, from /proc/self/exe. */
static rg_status_t rg__mpi_exe_dir(char *dir, size_t cap, rg_err_t *err)
{
    ssize_t n;
    char   *slash;

    n = readlink("/proc/self/exe", dir, cap - 1);
    if (n < 0) {
        return rg_err_set_errno(err, RG_ERR_BOOTSTRAP, errno,
                                "cannot find the MPI plugin: readlink /proc/self/exe failed");
    }
    dir[n] = '\0';
    slash  = strrchr(dir, '/');
    if (slash == NULL) {
        return rg_err_set(err, RG_ERR_BOOTSTRAP,
                          "cannot find the MPI plugin: /proc/self/exe is '%s'", dir);
    }
    *slash = '\0';
    return RG_OK;
}

/* Checks that the plugin was built from this tree for the flavour asked. */
static rg_status_t rg__mpi_check(const rg_mpi_plugin_t *p, const char *path,
                                 const rg__mpi_flavour_t *fl, rg_err_t *err)
{
    if (p == NULL || p->abi != RG_MPI_PLUGIN_ABI || p->sizeof_err != sizeof(rg_err_t) ||
        p->sizeof_args != sizeof(rg_mpi_boot_args_t) ||
        p->version == NULL || strcmp(p->version, RG_VERSION) != 0) {
        return rg_err_set(err, RG_ERR_BOOTSTRAP,
                          "MPI plugin %s is from another railgauge build (plugin "
                          "interface %u, version %s; this tool: %u, %s); rebuild "
                          "railgauge so that tools and plugins match", path,
                          p != NULL ? p->abi : 0u,
                          p != NULL && p->version != NULL ? p->version : "?",
                          RG_MPI_PLUGIN_ABI, RG_VERSION);
    }
    if (p->flavour == NULL || strcmp(p->flavour, fl->name) != 0) {
        return rg_err_set(err, RG_ERR_BOOTSTRAP,
                          "MPI plugin %s is built for %s, but %s was asked for (the "
                          "launcher is %s; RG_MPI_FLAVOUR, RG_MPI_PLUGIN)", path,
                          p->flavour != NULL ? p->flavour : "?", fl->name, fl->launcher);
    }
    return RG_OK;
}

rg_status_t rg__boot_mpi_load(rg_mpi_env_t *env, rg_mpi_loaded_t *out, rg_err_t *err)
{
    const rg__mpi_flavour_t *fl;
    rg__mpi_config_t         cfg;
    rg_mpi_plugin_get_fn     get;
    rg_status_t              status;
    char                     dir[PATH_MAX];
    char                     tried[2][PATH_MAX];
    int                      ntried = 0, i;
    void                    *dl;
    void                    *sym;

    memset(out, 0, sizeof(*out));
    status = rg_config_load(&rg_boot_mpi_config_table, &cfg, err);
    if (status != RG_OK) {
        return status;
    }
    if (strcmp(cfg.flavour, "auto") != 0) {
        if (rg__mpi_flavour_find(cfg.flavour) == NULL) {
            return rg_err_set(err, RG_ERR_BOOTSTRAP,
                              "RG_MPI_FLAVOUR='%s' is not an MPI flavour railgauge knows "
                              "(auto, openmpi, mpich)", cfg.flavour);
        }
        env->flavour = rg__mpi_flavour_find(cfg.flavour)->name;
    }
    fl = rg__mpi_flavour_find(env->flavour);
    if (cfg.short_max < 8 || cfg.short_max > ((size_t)1 << 30)) {
        return rg_err_set(err, RG_ERR_RANGE,
                          "RG_MPI_SHORT_MAX=%zu: must be 8 B to 1 GiB (a length message "
                          "must fit)", cfg.short_max);
    }
    out->short_max = cfg.short_max;

    if (cfg.plugin[0] != '\0') {
        snprintf(tried[ntried++], PATH_MAX, "%s", cfg.plugin);
    } else {
        status = rg__mpi_exe_dir(dir, sizeof(dir), err);
        if (status != RG_OK) {
            return status;
        }
        snprintf(tried[ntried++], PATH_MAX, "%.3900s/" RG_MPI_PLUGIN_PREFIX "%s.so", dir,
                 fl->name);
        snprintf(tried[ntried++], PATH_MAX,
                 "%.3900s/../lib/railgauge/" RG_MPI_PLUGIN_PREFIX "%s.so", dir, fl->name);
    }
    for (i = 0; i < ntried; i++) {
        if (access(tried[i], F_OK) == 0) {
            break;
        }
    }
    if (i == ntried) {
        return rg_err_set(err, RG_ERR_BOOTSTRAP,
                          "started by %s (%s is set), but the %s plugin is missing: "
                          "no %s%s%s. Build it: install the compiler wrapper %s (apt-get "
                          "install %s) and "
                          "rebuild railgauge (cmake --build, or python3 -m pip install .); "
                          "CMake builds the plugin of each MPI whose compiler wrapper it "
                          "finds", env->launcher, env->variable, fl->name, tried[0],
                          ntried > 1 ? " nor " : "", ntried > 1 ? tried[1] : "",
                          fl->wrapper, fl->packages);
    }
    /* The canonical path, for messages and the measurement header. */
    if (realpath(tried[i], out->path) == NULL) {
        snprintf(out->path, sizeof(out->path), "%s", tried[i]);
    }

    dlerror();
    dl = dlopen(out->path, RTLD_NOW | RTLD_GLOBAL);
    if (dl == NULL) {
        const char *why = dlerror();
        return rg_err_set(err, RG_ERR_BOOTSTRAP,
                          "cannot load the %s plugin %s: %s (is the %s library "
                          "installed? apt-get install %s)", fl->name, out->path,
                          why != NULL ? why : "unknown error", fl->name, fl->packages);
    }
    sym = dlsym(dl, RG_MPI_PLUGIN_SYMBOL);
    if (sym == NULL) {
        dlclose(dl);
        return rg_err_set(err, RG_ERR_BOOTSTRAP, "%s is not a railgauge MPI plugin (no "
                          "symbol %s)", out->path, RG_MPI_PLUGIN_SYMBOL);
    }
    /* POSIX guarantees that a data pointer from dlsym converts to a function
     * pointer; ISO C does not, hence the copy. */
    memcpy(&get, &sym, sizeof(get));
    out->plugin = get();
    status = rg__mpi_check(out->plugin, out->path, fl, err);
    if (status != RG_OK) {
        /* MPI is not initialized yet, so unloading is safe here. */
        out->plugin = NULL;
        dlclose(dl);
        return status;
    }
    out->dl = dl;
    return RG_OK;
}
