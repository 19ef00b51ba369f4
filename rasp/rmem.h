/*
** rmem.h -- the one allocation wrapper and the arena.
**
** Every allocation in librasp goes through raspM_alloc/raspM_realloc, which
** end the process with a message on exhaustion (a library that cannot
** allocate a few bytes has no sane way to continue).  Short-lived structures
** that die together (a parse, a trace, an evaluation) come from an arena and
** are freed all at once, which keeps error paths (longjmp) free of leaks.
**
** Budgets.  The process can be given a memory budget and a deadline (the
** commands' --max-memory and --timeout).  The allocator counts the bytes in
** use (its own and, once a budget is set, GMP's), and the long-running loops
** (every interpreter step, every evaluator node, every batch of the
** verifier) poll raspM_over_budget and stop with an ordinary error, so the
** usual error path prints a located message and frees everything.  What
** the allocator itself holds (headers, freed memory kept for reuse) is read
** from it every 1/32 of the budget allocated and counts as well.  Polling
** cannot stop a single long operation, so there is a backstop: 25% over the
** memory budget, or 2 s past the deadline, the process prints the same
** message and exits with status 1 at once.
*/
#ifndef RASP_RMEM_H
#define RASP_RMEM_H

#include <signal.h>
#include <stddef.h>

void *raspM_alloc(size_t size);                 /* zeroed */
void *raspM_realloc(void *ptr, size_t size);
void raspM_free(void *ptr); /* only for raspM_alloc/raspM_realloc memory */
char *raspM_strdup(const char *s);
char *raspM_strndup(const char *s, size_t n);

/* Grow a dynamic array: ensures capacity for at least need elements. */
#define RASP_GROW(ptr, cap, need)                                              \
  do {                                                                         \
    if ((size_t)(need) > (size_t)(cap)) {                                      \
      size_t ncap_ = (cap) ? (size_t)(cap) * 2 : 8;                            \
      while (ncap_ < (size_t)(need)) ncap_ *= 2;                               \
      (ptr) = raspM_realloc((ptr), ncap_ * sizeof *(ptr));                     \
      (cap) = ncap_;                                                           \
    }                                                                          \
  } while (0)

/* Memory budget in bytes (0: none).  Also routes GMP's allocations here
** (counted, and failing with a message instead of GMP's abort): call it
** before anything uses GMP. */
void raspM_set_max_memory(size_t bytes);
/* Deadline in seconds from now (0: none).  Uses SIGALRM. */
void raspM_set_timeout(unsigned seconds);
/* NULL while within the budgets, else why not, as a message.  Once a
** budget is exceeded it stays so (the command is to end); the flag is
** what hot loops test before calling. */
const char *raspM_over_budget(void);
/* The bytes the memory budget leaves (SIZE_MAX: no budget): what a caller
** about to make one large allocation checks first, to refuse it with an
** ordinary error rather than meet the backstop. */
size_t raspM_room(void);
extern volatile sig_atomic_t raspM_exhausted;

typedef struct rasp_arena_block rasp_arena_block;
typedef struct rasp_arena {
  rasp_arena_block *head;
  size_t total; /* bytes handed out, for size limits */
} rasp_arena;

void raspM_arena_init(rasp_arena *a);
void *raspM_arena_alloc(rasp_arena *a, size_t size); /* zeroed, 16-aligned */
char *raspM_arena_strndup(rasp_arena *a, const char *s, size_t n);
void raspM_arena_free(rasp_arena *a);

#endif
