/*
** tmpi.h -- rasp-train across MPI ranks: the transport of tarm.h.
**
** Only the rasp-train binary of a `./configure --with-mpi` build has this
** module.  `mpirun -np K rasp-train ...` (or `srun`) starts K copies of one
** command; each makes the same data sets and model, and every optimiser
** step's micro-batches are shared out among the ranks (tarm.h), whose
** gradients are summed in micro-batch order: the run is the one-process
** run, bit for bit, for any K.  Rank 0 alone has --out (main.c): it locks
** the directory, writes the logs and checkpoints and resumes, and hands
** the resumed state to the others (train_arm_share).  The other ranks'
** stdout and stderr go to /dev/null: they compute what rank 0 computes.
**
** MPI is started only under a launcher (OMPI_COMM_WORLD_SIZE, PMIX_RANK or
** PMI_RANK in the environment): a plain rasp-train of an MPI build runs as
** one process, without MPI_Init.  Messages are raw bytes: the ranks must
** run the same build on machines of one architecture (and, for the bit
** identity, one CPU kind: tnet.c's loops pick their vector width from the
** CPU).
*/
#ifndef RASP_TMPI_H
#define RASP_TMPI_H

/* 1 when launched by mpirun or srun: MPI is running and tarm.h's transport
** installed; 0 otherwise (nothing was done). */
int train_mpi_start(void);
/* After train_mpi_start, once every rank has its exit status for the
** command line (parsed the same way everywhere): the highest, on every
** rank. */
int train_mpi_agree(int status);
/* After train_mpi_start: the run's exit status, returned.  0, or the
** status train_mpi_agree gave: waits for every rank and shuts MPI down;
** otherwise aborts the job (another rank may be waiting for this one),
** after saying which rank failed when it is not rank 0 (whose messages
** were printed). */
int train_mpi_finish(int status);

#endif
