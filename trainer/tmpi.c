/*
** tmpi.c -- tarm.h's transport over MPI (tmpi.h).
**
** Point-to-point messages and broadcasts of raw bytes on MPI_COMM_WORLD,
** cut into pieces of at most 1 GiB (MPI counts are ints).  The trainer
** sends in one fixed pattern (tarm.c: a chain from rank 0 to the last rank,
** then a broadcast from it), so one tag serves and messages between two
** ranks arrive in the order sent.  MPI is initialised with
** MPI_THREAD_FUNNELED: the OpenMP threads of tnet.c never call MPI.
*/
#include "tmpi.h"

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "tarm.h"

enum { TAG_SUM = 16 };
#define PIECE ((size_t)1 << 30)

static FILE *err_out; /* stderr as it was: rank 0's, or a silenced rank's own */

static void send_bytes(int to, const void *buf, size_t bytes) {
  const char *p = buf;
  do {
    size_t c = bytes < PIECE ? bytes : PIECE;
    MPI_Send(p, (int)c, MPI_BYTE, to, TAG_SUM, MPI_COMM_WORLD);
    p += c;
    bytes -= c;
  } while (bytes);
}

static void recv_bytes(int from, void *buf, size_t bytes) {
  char *p = buf;
  do {
    size_t c = bytes < PIECE ? bytes : PIECE;
    MPI_Recv(p, (int)c, MPI_BYTE, from, TAG_SUM, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    p += c;
    bytes -= c;
  } while (bytes);
}

static void bcast_bytes(int root, void *buf, size_t bytes) {
  char *p = buf;
  do {
    size_t c = bytes < PIECE ? bytes : PIECE;
    MPI_Bcast(p, (int)c, MPI_BYTE, root, MPI_COMM_WORLD);
    p += c;
    bytes -= c;
  } while (bytes);
}

static void agree(uint64_t v, const char *what);
static train_transport mpi_transport = {0, 1, send_bytes, recv_bytes, bcast_bytes, agree};
static int settled; /* every rank ends with the status train_mpi_agree gave */

static void agree(uint64_t v, const char *what) {
  uint64_t lo, hi;
  MPI_Allreduce(&v, &lo, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&v, &hi, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
  if (lo != hi) {
    fprintf(err_out, "rasp-train: rank %d: the ranks differ in %s (%llu here, %llu..%llu "
                     "among them); do they all run one command on the same files?\n",
            mpi_transport.rank, what, (unsigned long long)v, (unsigned long long)lo,
            (unsigned long long)hi);
    fflush(err_out);
    MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1);
  }
}

/* --help exits from the parser: MPI still ends cleanly */
static void end_at_exit(void) {
  int started = 0, ended = 0;
  MPI_Initialized(&started);
  MPI_Finalized(&ended);
  if (started && !ended) MPI_Finalize();
}

int train_mpi_start(void) {
  if (!getenv("OMPI_COMM_WORLD_SIZE") && !getenv("PMIX_RANK") && !getenv("PMI_RANK")) return 0;
  int provided;
  MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &mpi_transport.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &mpi_transport.size);
  atexit(end_at_exit);
  err_out = stderr;
  /* a launcher of another MPI starts K copies that each see only
  ** themselves: K one-process runs on one --out, not one run */
  const char *k = getenv("OMPI_COMM_WORLD_SIZE");
  if (!k) k = getenv("PMI_SIZE");
  if (k && atoi(k) != mpi_transport.size) {
    fprintf(stderr, "rasp-train: started as one of %s processes, but MPI counts %d: is "
                    "mpirun (or srun --mpi) the MPI this rasp-train was built with?\n",
            k, mpi_transport.size);
    MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1);
  }
  if (mpi_transport.rank != 0) {
    int fd = dup(2);
    FILE *own = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (own) err_out = own;
    if (!freopen("/dev/null", "w", stdout) || !freopen("/dev/null", "w", stderr)) {
      fprintf(err_out, "rasp-train: rank %d: cannot silence its output\n", mpi_transport.rank);
      MPI_Abort(MPI_COMM_WORLD, 1);
      exit(1);
    }
  }
  train_set_transport(&mpi_transport);
  return 1;
}

int train_mpi_agree(int status) {
  int all = status;
  MPI_Allreduce(&status, &all, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  settled = all != 0;
  return all;
}

int train_mpi_finish(int status) {
  fflush(stdout);
  fflush(stderr);
  if (status && !settled) {
    if (mpi_transport.rank != 0)
      fprintf(err_out, "rasp-train: rank %d of %d ended with status %d; its messages are "
                       "silenced (the same command without mpirun, on its machine, shows "
                       "them)\n",
              mpi_transport.rank, mpi_transport.size, status);
    fflush(err_out);
    MPI_Abort(MPI_COMM_WORLD, status);
    exit(status);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  train_set_transport(NULL);
  MPI_Finalize();
  if (err_out != stderr) fclose(err_out);
  return status;
}
