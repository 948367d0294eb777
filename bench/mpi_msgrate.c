/*
 * mpi_msgrate: message rate and bandwidth between ranks 0 and 1 with windows
 * of non-blocking messages, acknowledged per window, the pattern of the OSU
 * bandwidth / message-rate tests and of `railgauge-proto-test --test rate|bw`,
 * so the rows compare like with like:
 *
 *   rank 0: W x MPI_Isend(size) to rank 1, MPI_Waitall, MPI_Recv(1 byte ack)
 *   rank 1: W x MPI_Irecv(size),          MPI_Waitall, MPI_Send(ack)
 *
 * Windows repeat for --seconds after 2 warm-up windows. With --distinct each
 * message of a window has a buffer of its own (as railgauge-proto-test's bw
 * does), else one buffer serves all (as the OSU tests do). Rank 0 prints one
 * JSON line:
 *
 *   {"impl":"openmpi","size":8,"window":64,"messages_per_s":..,"MBps":..,"windows":..}
 *
 *   mpirun -n 2 mpi_msgrate openmpi [--size 8] [--window 64] [--seconds 2] [--distinct]
 */
#define _GNU_SOURCE
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MR_MAX_WINDOW 1024

static int mr_usage(const char *what)
{
    fprintf(stderr, "mpi_msgrate: %s\nusage: mpi_msgrate IMPL [--size BYTES] [--window W] "
            "[--seconds S] [--distinct]\n", what);
    return 2;
}

int main(int argc, char **argv)
{
    const char   *impl;
    long          size = 8, window = 64, w;
    double        seconds = 2.0, t0 = 0, secs;
    int           distinct = 0, rank, nranks, a, stop = 0;
    long long     windows = 0, i;
    unsigned char ack = 0;
    char        **bufs;
    MPI_Request   reqs[MR_MAX_WINDOW];
    static MPI_Status stats[MR_MAX_WINDOW];

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    if (argc < 2) {
        MPI_Finalize();
        return mr_usage("missing the implementation name");
    }
    impl = argv[1];
    for (a = 2; a < argc; a++) {
        if (strcmp(argv[a], "--size") == 0 && a + 1 < argc) {
            size = strtol(argv[++a], NULL, 10);
        } else if (strcmp(argv[a], "--window") == 0 && a + 1 < argc) {
            window = strtol(argv[++a], NULL, 10);
        } else if (strcmp(argv[a], "--seconds") == 0 && a + 1 < argc) {
            seconds = strtod(argv[++a], NULL);
        } else if (strcmp(argv[a], "--distinct") == 0) {
            distinct = 1;
        } else {
            MPI_Finalize();
            return mr_usage(argv[a]);
        }
    }
    if (size < 0 || window < 1 || window > MR_MAX_WINDOW || !(seconds > 0) || nranks < 2) {
        MPI_Finalize();
        return mr_usage("size >= 0, window 1..1024, seconds > 0, 2 ranks or more");
    }
    bufs = calloc((size_t)window, sizeof(*bufs));
    for (w = 0; w < window; w++) {
        bufs[w] = (distinct || w == 0) ? malloc((size_t)size > 0 ? (size_t)size : 1) : bufs[0];
        if (bufs[w] == NULL) {
            fprintf(stderr, "mpi_msgrate: out of memory\n");
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        memset(bufs[w], (int)w, (size_t)size);
    }
    if (rank < 2) {
        for (i = 0;; i++) {
            if (i == 2) {
                t0 = MPI_Wtime();
            }
            for (w = 0; w < window; w++) {
                if (rank == 0) {
                    MPI_Isend(bufs[w], (int)size, MPI_BYTE, 1, 1, MPI_COMM_WORLD, &reqs[w]);
                } else {
                    MPI_Irecv(bufs[w], (int)size, MPI_BYTE, 0, 1, MPI_COMM_WORLD, &reqs[w]);
                }
            }
            MPI_Waitall((int)window, reqs, stats);
            if (rank == 0) {
                MPI_Recv(&ack, 1, MPI_BYTE, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else {
                ack = (unsigned char)(i >= 2 && MPI_Wtime() - t0 >= seconds);
                MPI_Send(&ack, 1, MPI_BYTE, 0, 2, MPI_COMM_WORLD);
            }
            stop = ack;
            windows += i >= 2;
            if (stop) {
                break;
            }
        }
        secs = MPI_Wtime() - t0;
        if (rank == 0) {
            printf("{\"impl\":\"%s\",\"size\":%ld,\"window\":%ld,\"messages_per_s\":%.1f,"
                   "\"MBps\":%.1f,\"windows\":%lld,\"distinct\":%d}\n",
                   impl, size, window, (double)(windows * window) / secs,
                   (double)(windows * window) * (double)size / secs * 1e-6, windows, distinct);
            fflush(stdout);
        }
    }
    for (w = 0; w < window; w++) {
        if (distinct || w == 0) {
            free(bufs[w]);
        }
    }
    free(bufs);
    MPI_Finalize();
    return 0;
}
