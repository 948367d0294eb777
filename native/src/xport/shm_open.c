/*
 * railgauge: the "shm" transport's segment and its open and close: rank 0
 * creates the segment, the others map it, every rank agrees on each step,
 * and the single-copy (cross-memory attach) probe decides whether one-sided
 * operations are offered. See shm.c for the design; shm_int.h is the
 * private header.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/membarrier.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/json.h"
#include "xport/shm_int.h"
#include "xport/xport.h"

#define RG__SHM_MAGIC      0x3130306d68736772ULL  /* "rgshm001" */
#define RG__SHM_VERSION    1u
#define RG__SHM_RING_MIN   ((size_t)4096)
#define RG__SHM_RING_MAX   ((size_t)1 << 30)
#define RG__SHM_CHUNK_MIN  ((size_t)64)
#define RG__SHM_PREFIX     "railgauge-"

typedef struct rg__shm_config {
    size_t ring_size;
    size_t chunk;
    int    cma;
} rg__shm_config_t;

static const rg_config_field_t rg__shm_config_fields[] = {
    {"RING_SIZE", "64KiB",
     "bytes of each ring (one per ordered pair of ranks); a power of two from "
     "4KiB to 1GiB. Larger rings let more sends complete at post time",
     offsetof(rg__shm_config_t, ring_size), RG_CONFIG_SIZE},
    {"CHUNK", "8KiB",
     "bytes a side copies into or out of a ring before it publishes its index "
     "(64B to 1GiB; at most the ring size is used). A message larger than the "
     "ring then streams with both sides copying at once, whatever its size; "
     "a chunk of the whole ring lets the two sides take turns filling and "
     "draining it when the message is a multiple of the ring",
     offsetof(rg__shm_config_t, chunk), RG_CONFIG_SIZE},
    {"CMA", "1",
     "1: large messages of the protocol layer move in one copy, the receiver "
     "reading the sender's buffer with process_vm_readv (cross-memory attach), "
     "where every rank can (tested at open: ptrace rules or a seccomp filter "
     "can forbid it); 0: never, they stream through the rings",
     offsetof(rg__shm_config_t, cma), RG_CONFIG_INT},
    {NULL, NULL, NULL, 0, 0}
};

const rg_config_table_t rg_xport_shm_config_table = {"SHM", rg__shm_config_fields};

/* The segment header; rank 0 writes magic last. */
typedef struct rg__shm_seg_hdr {
    _Atomic uint64_t magic;
    uint32_t         version;
    uint32_t         nranks;
    uint64_t         ring_size;
    uint64_t         seg_size;
} rg__shm_seg_hdr_t;

/* Opens of this transport in this process (see rg__shm_open). */
static unsigned rg__shm_opens;

/* What a peer reads in the open-time test of process_vm_readv. */
static const uint64_t rg__shm_cma_word = 0x7267636d61707262ull;

/* Every rank reads its right neighbour's probe word; the transport offers
 * get only if all of them could, so that the ranks agree on the protocol. */
static rg_status_t rg__shm_cma_probe(rg__shm_t *shm, int want, rg_err_t *err)
{
    int         size = shm->super.size, rank = shm->super.rank;
    int         peer = (rank + 1) % size, e = 0, i;
    int32_t     mine = 0, *all;
    int         asym = 1;
    uint64_t    word = 0;
    rg__shm_peer_t *p = &shm->peers[peer];
    rg_status_t status;

    if (want && size > 1 &&
        rg__shm_cma((pid_t)atomic_load(&p->blk->pid), p->blk->cma_probe, &word,
                    sizeof(word), 0, &e) == RG_OK &&
        word == rg__shm_cma_word) {
        mine = 1;
    }
    /* Registration for the asymmetric fence of rg__shm_notify(). */
    if (syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED, 0, 0) == 0) {
        mine |= 2;
    }
    all = calloc((size_t)size, sizeof(*all));
    if (all == NULL) {
        return rg_err_set(err, RG_ERR_NOMEM, "cannot allocate %d flags", size);
    }
    status = rg_boot_allgather(shm->super.boot, &mine, sizeof(mine), all, err);
    shm->super.attr.can_get = status == RG_OK && size > 1;
    for (i = 0; i < size && status == RG_OK; i++) {
        if (!(all[i] & 1) && shm->super.attr.can_get) {
            shm->super.attr.can_get = 0;
            shm->cma_off_rank = want ? i : -1;
        }
        asym &= (all[i] & 2) != 0;
    }
    shm->asym_fence = status == RG_OK && asym;
    free(all);
    return status;
}

/* ---- open and close --------------------------------------------------- */

/* Removes segments of earlier jobs whose launcher (the pid that starts the
 * job id) is gone: a job killed between creating and unlinking its segment
 * would otherwise leave it in /dev/shm until reboot. */
static void rg__shm_remove_stale(const char *own)
{
    struct dirent *e;
    DIR           *dir;
    char           path[300];
    char          *end;
    long           pid;

    dir = opendir("/dev/shm");
    if (dir == NULL) {
        return;
    }
    while ((e = readdir(dir)) != NULL) {
        if (strncmp(e->d_name, RG__SHM_PREFIX, strlen(RG__SHM_PREFIX)) != 0 ||
            strcmp(e->d_name, own + 1) == 0) {
            continue;
        }
        errno = 0;
        pid   = strtol(e->d_name + strlen(RG__SHM_PREFIX), &end, 10);
        if (errno != 0 || *end != '-' || pid <= 0 || pid > INT32_MAX) {
            continue;
        }
        if (rg_xport_pid_dead((pid_t)pid)) {
            snprintf(path, sizeof(path), "/%s", e->d_name);
            (void)shm_unlink(path);
        }
    }
    closedir(dir);
}

static rg_status_t rg__shm_layout(uint64_t nranks, uint64_t ring_size,
                                  uint64_t *rings_off_p, uint64_t *seg_size_p,
                                  rg_err_t *err)
{
    uint64_t rings_off, nrings, stride;

    rings_off = RG__SHM_PAGE +
                (nranks * RG__SHM_PAD + RG__SHM_PAGE - 1) / RG__SHM_PAGE * RG__SHM_PAGE;
    nrings    = nranks * (nranks - 1);
    stride    = RG__SHM_PAGE + ring_size;
    if (nrings > 0 && stride > ((uint64_t)INT64_MAX - rings_off) / nrings) {
        return rg_err_set(err, RG_ERR_RANGE,
                          "a shm segment for %llu ranks with %llu-byte rings is too large",
                          (unsigned long long)nranks, (unsigned long long)ring_size);
    }
    *rings_off_p = rings_off;
    *seg_size_p  = rings_off + nrings * stride;
    return RG_OK;
}

/* Rank 0: creates, sizes and initializes the segment. */
static rg_status_t rg__shm_create(rg__shm_t *shm, rg_err_t *err)
{
    rg__shm_seg_hdr_t *hdr;
    void              *map;
    int                fd, rc;
    rg_status_t        status;

    rg__shm_remove_stale(shm->name);
    fd = shm_open(shm->name, O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd < 0) {
        return rg_err_set_errno(err, RG_ERR_SYSTEM, errno,
                                "cannot create the shm segment %s", shm->name);
    }
    if (ftruncate(fd, (off_t)shm->seg_size) != 0) {
        status = rg_err_set_errno(err, RG_ERR_SYSTEM, errno,
                                  "cannot size the shm segment %s to %zu bytes",
                                  shm->name, shm->seg_size);
        goto err_unlink;
    }
    /* Reserving the memory now turns a full /dev/shm into an error here
     * instead of a SIGBUS on first touch. */
    rc = posix_fallocate(fd, 0, (off_t)shm->seg_size);
    if (rc != 0 && rc != EOPNOTSUPP && rc != EINVAL) {
        status = rg_err_set_errno(err, RG_ERR_NOMEM, rc,
                                  "cannot reserve %zu bytes in /dev/shm for %s",
                                  shm->seg_size, shm->name);
        goto err_unlink;
    }
    map = mmap(NULL, shm->seg_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) {
        status = rg_err_set_errno(err, RG_ERR_SYSTEM, errno,
                                  "cannot map the shm segment %s", shm->name);
        goto err_unlink;
    }
    close(fd);
    shm->seg       = map;
    hdr            = map;
    hdr->version   = RG__SHM_VERSION;
    hdr->nranks    = (uint32_t)shm->super.size;
    hdr->ring_size = shm->ring_size;
    hdr->seg_size  = shm->seg_size;
    atomic_store_explicit(&hdr->magic, RG__SHM_MAGIC, memory_order_release);
    return RG_OK;

err_unlink:
    shm_unlink(shm->name);
    close(fd);
    return status;
}

/* Other ranks: maps the segment rank 0 made and checks it. */
static rg_status_t rg__shm_attach(rg__shm_t *shm, rg_err_t *err)
{
    rg__shm_seg_hdr_t *hdr;
    struct stat        st;
    uint64_t           rings_off, seg_size;
    void              *map;
    int                fd;
    rg_status_t        status;

    fd = shm_open(shm->name, O_RDWR, 0);
    if (fd < 0) {
        return rg_err_set_errno(err, RG_ERR_SYSTEM, errno,
                                "cannot open the shm segment %s", shm->name);
    }
    if (fstat(fd, &st) != 0 || (size_t)st.st_size < sizeof(rg__shm_seg_hdr_t)) {
        status = rg_err_set(err, RG_ERR_BOOTSTRAP,
                            "the shm segment %s is missing or too small", shm->name);
        goto err_close;
    }
    map = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) {
        status = rg_err_set_errno(err, RG_ERR_SYSTEM, errno,
                                  "cannot map the shm segment %s", shm->name);
        goto err_close;
    }
    close(fd);
    shm->seg      = map;
    shm->seg_size = (size_t)st.st_size;
    hdr           = map;
    /* Rank 0's ring size rules: the others follow the segment. */
    if (atomic_load_explicit(&hdr->magic, memory_order_acquire) != RG__SHM_MAGIC ||
        hdr->version != RG__SHM_VERSION || hdr->nranks != (uint32_t)shm->super.size ||
        hdr->seg_size != (uint64_t)st.st_size ||
        rg__shm_layout(hdr->nranks, hdr->ring_size, &rings_off, &seg_size, err) != RG_OK ||
        seg_size != hdr->seg_size) {
        return rg_err_set(err, RG_ERR_BOOTSTRAP,
                          "the shm segment %s does not match this job (%d ranks)",
                          shm->name, shm->super.size);
    }
    shm->ring_size = hdr->ring_size;
    shm->mask      = hdr->ring_size - 1;
    return RG_OK;

err_close:
    close(fd);
    return status;
}

/* Every rank contributes its step's status; a failure anywhere fails the
 * open on every rank, rather than leaving the others to hang. */
static rg_status_t rg__shm_agree(rg__shm_t *shm, rg_status_t mine, const char *step,
                                 rg_err_t *err)
{
    int32_t     code = (int32_t)mine;
    int32_t    *all;
    rg_status_t status;
    int         i;

    all = calloc((size_t)shm->super.size, sizeof(*all));
    if (all == NULL) {
        return rg_err_set(err, RG_ERR_NOMEM, "cannot allocate %d statuses",
                          shm->super.size);
    }
    status = rg_boot_allgather(shm->super.boot, &code, sizeof(code), all, err);
    if (status == RG_OK && mine == RG_OK) {
        for (i = 0; i < shm->super.size; i++) {
            if (all[i] != RG_OK) {
                status = rg_err_set(err, RG_ERR_BOOTSTRAP,
                                    "rank %d failed to %s the shm segment %s (%s)", i,
                                    step, shm->name, rg_status_name((rg_status_t)all[i]));
                break;
            }
        }
    }
    free(all);
    return mine != RG_OK ? mine : status;
}

void rg__shm_close(rg_xport_t *xp)
{
    rg__shm_t *shm = rg__shm(xp);

    if (shm->seg != NULL) {
        munmap(shm->seg, shm->seg_size);
    }
    free(shm->staged);
    free(shm->peers);
    free(shm);
}

rg_status_t rg__shm_open(const char *name, rg_boot_t *boot, rg_xport_t **xp_p,
                         rg_err_t *err)
{
    rg__shm_config_t cfg;
    rg__shm_t       *shm;
    rg__shm_peer_t  *p;
    unsigned char   *rings;
    uint64_t         rings_off, seg_size, stride;
    int              rank = rg_boot_rank(boot), size = rg_boot_size(boot);
    int              peer, created = 0;
    rg_status_t      status, mine = RG_OK;
    rg_err_t         mine_err;

    (void)name;  /* Always "shm": the transport has no variants. */
    status = rg_config_load(&rg_xport_shm_config_table, &cfg, err);
    if (status != RG_OK) {
        return status;
    }
    if (cfg.ring_size < RG__SHM_RING_MIN || cfg.ring_size > RG__SHM_RING_MAX ||
        (cfg.ring_size & (cfg.ring_size - 1)) != 0) {
        return rg_err_set(err, RG_ERR_INVALID,
                          "RG_SHM_RING_SIZE=%zu: must be a power of two from 4KiB to 1GiB",
                          cfg.ring_size);
    }
    if (cfg.chunk < RG__SHM_CHUNK_MIN || cfg.chunk > RG__SHM_RING_MAX) {
        return rg_err_set(err, RG_ERR_INVALID,
                          "RG_SHM_CHUNK=%zu: must be from 64B to 1GiB", cfg.chunk);
    }
    status = rg__shm_layout((uint64_t)size, cfg.ring_size, &rings_off, &seg_size, err);
    if (status != RG_OK) {
        return status;
    }
    shm   = calloc(1, sizeof(*shm));
    if (shm == NULL) {
        return rg_err_set(err, RG_ERR_NOMEM, "cannot allocate the shm transport");
    }
    shm->peers  = calloc((size_t)size, sizeof(*shm->peers));
    shm->staged = calloc((size_t)size, sizeof(*shm->staged));
    if (shm->peers == NULL || shm->staged == NULL) {
        status = rg_err_set(err, RG_ERR_NOMEM, "cannot allocate %d shm peers", size);
        goto err_free;
    }
    shm->super.ops            = &rg_xport_shm_ops;
    shm->super.attr.name      = "shm";
    shm->super.attr.same_host = 1;
    shm->super.attr.max_msg_size = SIZE_MAX;
    shm->super.boot           = boot;
    shm->super.rank           = rank;
    shm->super.size           = size;
    shm->ring_size            = cfg.ring_size;
    shm->mask                 = cfg.ring_size - 1;
    shm->seg_size             = (size_t)seg_size;
    /* Every rank opens the same transports in the same order, so the count
     * of opens names the same segment on all of them (the protocol layer
     * may open a second instance for bulk data). */
    snprintf(shm->name, sizeof(shm->name), "/" RG__SHM_PREFIX "%s-%u", rg_boot_job_id(boot),
             rg__shm_opens++);

    /* Step 1: rank 0 creates the segment; the others wait for it. */
    rg_err_clear(&mine_err);
    if (rank == 0) {
        mine    = rg__shm_create(shm, &mine_err);
        created = mine == RG_OK;
    }
    status = rg__shm_agree(shm, mine, "create", err);
    if (status != RG_OK) {
        if (mine != RG_OK && err != NULL) {
            *err = mine_err;
        }
        goto err_unlink;
    }

    /* Step 2: the others map it; every rank records its pid. Once all have
     * mapped it, rank 0 removes the name, so even a crash of every rank
     * cannot leave the segment behind. */
    if (rank != 0) {
        mine = rg__shm_attach(shm, &mine_err);
    }
    if (mine == RG_OK) {
        shm->me = (rg__shm_rank_blk_t *)(shm->seg + RG__SHM_PAGE) + rank;
        atomic_store(&shm->me->pid, (int32_t)getpid());
        shm->me->cma_probe = (uint64_t)(uintptr_t)&rg__shm_cma_word;
    }
    status = rg__shm_agree(shm, mine, "map", err);
    if (created) {
        shm_unlink(shm->name);
        created = 0;
    }
    if (status != RG_OK) {
        if (mine != RG_OK && err != NULL) {
            *err = mine_err;
        }
        goto err_unmap;
    }

    /* Rank 0's ring size rules (rg__shm_attach): the chunk fits the ring. */
    shm->chunk = cfg.chunk < shm->ring_size ? cfg.chunk : shm->ring_size;
    stride     = RG__SHM_PAGE + shm->ring_size;
    rings      = shm->seg + rings_off;
    for (peer = 0; peer < size; peer++) {
        uint64_t tx_index, rx_index;

        if (peer == rank) {
            continue;
        }
        p        = &shm->peers[peer];
        tx_index = (uint64_t)rank * (uint64_t)(size - 1) + (uint64_t)(peer < rank ? peer : peer - 1);
        rx_index = (uint64_t)peer * (uint64_t)(size - 1) + (uint64_t)(rank < peer ? rank : rank - 1);
        p->tx      = (rg__shm_ring_ctl_t *)(rings + tx_index * stride);
        p->tx_data = rings + tx_index * stride + RG__SHM_PAGE;
        p->rx      = (rg__shm_ring_ctl_t *)(rings + rx_index * stride);
        p->rx_data = rings + rx_index * stride + RG__SHM_PAGE;
        p->blk     = (rg__shm_rank_blk_t *)(shm->seg + RG__SHM_PAGE) + peer;
    }
    shm->cma_off_rank = -1;
    status = rg__shm_cma_probe(shm, cfg.cma != 0, err);
    if (status != RG_OK) {
        goto err_unmap;
    }
    /* A send of up to this many bytes completes at post when its ring has
     * room, which is the case unless the receiver lags. */
    shm->super.attr.inject_size = shm->ring_size - RG__SHM_HDR_LEN;
    /* Windows are written with process_vm_writev: where the probe failed on
     * some rank (ptrace rules, seccomp, RG_SHM_CMA=0), every rank lacks them. */
    if (!shm->super.attr.can_get) {
        shm->super.attr.why_not[RG_XPORT_OPT_WIN] =
            cfg.cma == 0 ? "one-sided writes use cross-memory attach (process_vm_writev), "
                           "which RG_SHM_CMA=0 turns off"
                         : "one-sided writes use cross-memory attach (process_vm_writev), "
                           "which a rank could not use here (ptrace rules or a seccomp "
                           "filter; see single_copy_failed_rank in the transport info)";
    }
    *xp_p = &shm->super;
    return RG_OK;

err_unlink:
    if (created) {
        shm_unlink(shm->name);
    }
err_unmap:
    if (shm->seg != NULL) {
        munmap(shm->seg, shm->seg_size);
    }
err_free:
    free(shm->staged);
    free(shm->peers);
    free(shm);
    return status;
}

rg_status_t rg__shm_info_json(rg_xport_t *xp, char *buf, size_t cap)
{
    rg__shm_t *shm = rg__shm(xp);
    rg_json_t  js;

    rg_json_init(&js, buf, cap);
    rg_json_object_begin(&js);
    rg_json_kv_uint(&js, "ring_size", shm->ring_size);
    rg_json_kv_uint(&js, "chunk", shm->chunk);
    rg_json_kv_uint(&js, "segment_size", shm->seg_size);
    rg_json_kv_string(&js, "segment", shm->name);
    rg_json_kv_bool(&js, "single_copy", xp->attr.can_get);
    rg_json_kv_bool(&js, "asymmetric_fence", shm->asym_fence);
    if (shm->cma_off_rank >= 0) {
        rg_json_kv_int(&js, "single_copy_failed_rank", shm->cma_off_rank);
    }
    rg_json_object_end(&js);
    return js.status;
}
