/*
** rmpi.c -- rwork.h's transport over MPI (rmpi.h).
**
** Rank 0 keeps the ledger.  Another rank sends a request (tag REQ) that
** carries the result of its last range (count 0 at first) and waits for the
** reply (tag RANGE): the next range, or a count of 0 when nothing is left,
** after which it asks no more for this cell.  Rank 0 answers in serve(),
** which rwork.c calls between rank 0's own batches of inputs and, once the
** ledger is empty, until every rank has been told so.  A request is one
** part (about 2 KB, sent eagerly), so a rank waits on rank 0 for no longer
** than one of rank 0's batches.  The merged result goes to every rank with
** a broadcast.
**
** MPI is initialised with MPI_THREAD_FUNNELED: random runs check their
** range on --jobs threads, but only the main thread calls MPI (the
** progress callback runs there).
*/
#include "rmpi.h"

#include <mpi.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rmodel.h"
#include "rwork.h"

enum { TAG_REQ = 1, TAG_RANGE = 2 };

static FILE *err_out; /* stderr as it was: rank 0's, or a silenced rank's own */

static void fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fatal(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vfprintf(err_out, fmt, ap);
  va_end(ap);
  fflush(err_out);
  MPI_Abort(MPI_COMM_WORLD, 1);
  exit(1);
}

static void agree(const char *key) {
  uint64_t h = key ? raspN_fnv1a(RASPN_FNV0, key, strlen(key)) : 0, lo, hi;
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Allreduce(&h, &lo, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&h, &hi, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
  if (lo != hi)
    fatal("rasp verify: rank %d: the ranks are not at the same point of the run (this one is "
          "at %s); do they all read the same files?  One process (without mpirun) says why\n",
          rank, key ? key : "its end");
}

static void serve(raspW_ledger *L, int wait) {
  for (;;) {
    MPI_Status st;
    int flag = 0;
    if (wait) {
      MPI_Probe(MPI_ANY_SOURCE, TAG_REQ, MPI_COMM_WORLD, &st);
      flag = 1;
      wait = 0;
    } else {
      MPI_Iprobe(MPI_ANY_SOURCE, TAG_REQ, MPI_COMM_WORLD, &flag, &st);
    }
    if (!flag) return;
    raspW_part p;
    MPI_Recv(&p, (int)sizeof p, MPI_BYTE, st.MPI_SOURCE, TAG_REQ, MPI_COMM_WORLD,
             MPI_STATUS_IGNORE);
    rasp_error err = {0};
    raspW_record(L, &p, &err); /* a checkpoint that cannot be written stops the ledger */
    uint64_t r[2] = {0, 0};
    if (!raspW_take(L, &r[0], &r[1])) {
      r[1] = 0;
      L->retired++;
    }
    MPI_Send(r, 2, MPI_UINT64_T, st.MPI_SOURCE, TAG_RANGE, MPI_COMM_WORLD);
  }
}

static int request(const raspW_part *done, uint64_t *first, uint64_t *count) {
  uint64_t r[2];
  MPI_Send(done, (int)sizeof *done, MPI_BYTE, 0, TAG_REQ, MPI_COMM_WORLD);
  MPI_Recv(r, 2, MPI_UINT64_T, 0, TAG_RANGE, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  *first = r[0];
  *count = r[1];
  return r[1] != 0;
}

static void share(raspW_part *all) {
  MPI_Bcast(all, (int)sizeof *all, MPI_BYTE, 0, MPI_COMM_WORLD);
}

static raspW_transport mpi_transport = {0, 1, agree, serve, request, share};

int raspP_start(void) {
  if (!getenv("OMPI_COMM_WORLD_SIZE") && !getenv("PMIX_RANK") && !getenv("PMI_RANK")) return 0;
  int provided;
  MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &mpi_transport.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &mpi_transport.size);
  err_out = stderr;
  if (mpi_transport.rank != 0) {
    int fd = dup(2);
    FILE *own = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (own) err_out = own;
    if (!freopen("/dev/null", "w", stdout) || !freopen("/dev/null", "w", stderr))
      fatal("rasp verify: rank %d: cannot silence its output\n", mpi_transport.rank);
  }
  raspW_set_transport(&mpi_transport);
  return 1;
}

int raspP_finish(int status) {
  fflush(stdout);
  fflush(stderr);
  agree(NULL);
  raspW_set_transport(NULL);
  MPI_Finalize();
  if (err_out != stderr) fclose(err_out);
  return status;
}
