/* The proof that an MPI library took the settings railgauge emitted: two ranks move 4 MiB
 * (so that every transport module is opened), then rank 0 prints, through the MPI tool
 * interface, the control variables whose names start with the prefixes given as arguments
 * ("cvar NAME=VALUE" lines); rank 1 prints whether the bytes arrived. tests/test_emit.py
 * builds it with the flavour's mpicc. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int wanted(const char *name, int argc, char **argv)
{
    for (int a = 1; a < argc; a++) {
        if (strncmp(name, argv[a], strlen(argv[a])) == 0) {
            return 1;
        }
    }
    return 0;
}

static void print_cvar(int i, int argc, char **argv)
{
    char name[256], desc[1024];
    int nl = sizeof name, dl = sizeof desc, verb, bind, scope, count;
    MPI_Datatype dt;
    MPI_T_enum en;
    MPI_T_cvar_handle h;

    if (MPI_T_cvar_get_info(i, name, &nl, &verb, &dt, &en, desc, &dl, &bind, &scope)
            != MPI_SUCCESS || !wanted(name, argc, argv)) {
        return;
    }
    if (MPI_T_cvar_handle_alloc(i, NULL, &h, &count) != MPI_SUCCESS) {
        return;
    }
    if (dt == MPI_UNSIGNED || dt == MPI_INT) {
        unsigned v = 0;
        MPI_T_cvar_read(h, &v);
        printf("cvar %s=%u\n", name, v);
    } else if (dt == MPI_CHAR && count < 4096) {
        char v[4096] = "";
        MPI_T_cvar_read(h, v);
        printf("cvar %s=%s\n", name, v);
    }
    MPI_T_cvar_handle_free(&h);
}

int main(int argc, char **argv)
{
    int provided, rank, n = 0;
    size_t len = (size_t)4 << 20;
    char *buf = malloc(len);

    MPI_Init(&argc, &argv);
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    memset(buf, rank + 1, len);
    if (rank == 0) {
        MPI_Send(buf, (int)len, MPI_CHAR, 1, 0, MPI_COMM_WORLD);
    } else if (rank == 1) {
        MPI_Recv(buf, (int)len, MPI_CHAR, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        printf("received %s\n", buf[0] == 1 && buf[len - 1] == 1 ? "ok" : "wrong");
    }
    MPI_T_cvar_get_num(&n);
    for (int i = 0; rank == 0 && i < n; i++) {
        print_cvar(i, argc, argv);
    }
    fflush(stdout);
    free(buf);
    MPI_T_finalize();
    MPI_Finalize();
    return 0;
}
