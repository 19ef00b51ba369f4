/*
** rmpi.h -- `rasp verify` across MPI ranks: the transport of rwork.h.
**
** Only the rasp binary of a `./configure --with-mpi` build has this module
** (librasp and the default build have no MPI symbols).  `mpirun -np K rasp
** verify ...` (or `srun`) starts K copies; each traces the programs itself
** and the ranks share each cell's inputs out in ranges (rwork.h), rank 0
** handing them out and printing.  The other ranks' stdout and stderr go to
** /dev/null: they follow the same path with the same merged results, so
** what they would print is what rank 0 prints.
**
** MPI is started only under a launcher (OMPI_COMM_WORLD_SIZE, PMIX_RANK or
** PMI_RANK in the environment): a plain `rasp verify` of an MPI build runs
** as one process, without MPI_Init.  Ranks that are not at the same point
** (one could not read a file that the others read) are caught where each
** cell starts and the run is aborted with a message, not left hanging.
** Messages are raw bytes: the ranks must run the same build on machines of
** one architecture, as on any cluster.
*/
#ifndef RASP_RMPI_H
#define RASP_RMPI_H

/* 1 when launched by mpirun or srun: MPI is running and rwork.h's
** transport installed; 0 otherwise (nothing was done). */
int raspP_start(void);
/* After raspP_start: checks that every rank has ended, shuts MPI down and
** returns status. */
int raspP_finish(int status);

#endif
