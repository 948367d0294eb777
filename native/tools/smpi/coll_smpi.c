/*
 * coll_smpi: one MPI collective under SMPI, timed from the common start of all
 * ranks to the last rank's end: the makespan that railgauge-sim reports for
 * the same schedule. Built with smpicc by tests/test_export_simgrid.py, not by
 * CMake. The collective's algorithm is SMPI's to choose unless pinned with
 * --cfg=smpi/barrier:ompi_bruck (the dissemination barrier: round k sends to
 * rank + 2^k and receives from rank - 2^k) or --cfg=smpi/alltoall:pair (the
 * pairwise exchange: step i exchanges with rank XOR i).
 *
 * Usage: coll_smpi barrier | coll_smpi alltoall SIZE
 * Output: {"op":"barrier","P":P,"s":0,"makespan_us":T} on rank 0's stdout.
 */
#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    int    rank, size, is_barrier, rc = 0;
    long   s = 0;
    char  *sbuf = NULL, *rbuf = NULL;
    double t0, mine, last;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    is_barrier = argc == 2 && strcmp(argv[1], "barrier") == 0;
    if (!is_barrier) {
        char *end = NULL;
        if (argc != 3 || strcmp(argv[1], "alltoall") != 0 ||
            (s = strtol(argv[2], &end, 10)) < 1 || *end != '\0') {
            if (rank == 0) {
                fprintf(stderr, "coll_smpi: usage: coll_smpi barrier | coll_smpi alltoall SIZE\n");
            }
            MPI_Finalize();
            return 2;
        }
        sbuf = calloc((size_t)s * (size_t)size, 1);
        rbuf = calloc((size_t)s * (size_t)size, 1);
        if (sbuf == NULL || rbuf == NULL) {
            fprintf(stderr, "coll_smpi: cannot allocate 2 x %ld x %d bytes\n", s, size);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
    /* Every rank starts at the same simulated time (0): no barrier before. */
    t0 = MPI_Wtime();
    if (is_barrier) {
        MPI_Barrier(MPI_COMM_WORLD);
    } else {
        MPI_Alltoall(sbuf, (int)s, MPI_BYTE, rbuf, (int)s, MPI_BYTE, MPI_COMM_WORLD);
    }
    mine = MPI_Wtime();
    MPI_Reduce(&mine, &last, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("{\"op\":\"%s\",\"P\":%d,\"s\":%ld,\"makespan_us\":%.9g}\n",
               is_barrier ? "barrier" : "alltoall", size, s, (last - t0) * 1e6);
    }
    free(sbuf);
    free(rbuf);
    MPI_Finalize();
    return rc;
}
