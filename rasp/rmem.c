/*
** rmem.c -- allocation wrapper, arena, and the process's budgets.
**
** The bytes in use are counted with malloc_usable_size (what free will
** give back) in one atomic counter, since the verifier allocates from
** several threads.  GMP tells its allocation functions the sizes itself.
** That count misses what the allocator itself holds: a chunk's header,
** alignment, and freed memory it keeps for reuse, which for a program
** making millions of small values is as much again (a 200M budget peaked
** at 378 MB resident).  So after every 1/32 of the budget allocated, the
** allocator's own figure (mallinfo2: the bytes its arenas and mappings
** took from the system, every thread's arena) is read too, and the budget
** and the backstop hold against the larger of the two.
*/
#include "rmem.h"

#include <gmp.h>
#include <malloc.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Signed: blocks GMP made before a budget routed it here are freed
** through gmp_free, uncounted, and may take this below zero. */
static long long in_use;             /* atomic */
static long long since_check;        /* atomic: bytes allocated since mallinfo2 was read */
static size_t max_memory;            /* 0: no budget */
static volatile sig_atomic_t timed_out; /* 1: past the deadline */
volatile sig_atomic_t raspM_exhausted;
static char memory_msg[128], timeout_msg[64];

/* "rasp: msg" on stderr, from a signal handler or the allocator. */
static void say(const char *msg) {
  static const char pre[] = "rasp: ";
  (void)!write(2, pre, sizeof pre - 1);
  (void)!write(2, msg, strlen(msg));
  (void)!write(2, "\n", 1);
}

static _Noreturn void out_of_memory(size_t size) {
  fprintf(stderr, "rasp: out of memory (allocating %zu bytes)\n", size);
  _exit(1);
}

/* Over the budget: the polls stop the work; far over it, the backstop
** stops the process now (see rmem.h). */
static void over(long long now) {
  if (now <= (long long)max_memory) return;
  raspM_exhausted = 1;
  if (now > (long long)(max_memory + max_memory / 4)) {
    say(memory_msg);
    _exit(1);
  }
}

/* What the allocator holds from the system, read every budget/32 bytes of
** allocation (so a churn of allocations and frees is read too). */
static void check_allocator(size_t add) {
  long long step = (long long)(max_memory / 32 > (1u << 20) ? max_memory / 32 : (1u << 20));
  if (__atomic_add_fetch(&since_check, (long long)add, __ATOMIC_RELAXED) < step) return;
  __atomic_store_n(&since_check, 0, __ATOMIC_RELAXED);
  struct mallinfo2 mi = mallinfo2();
  over((long long)(mi.arena + mi.hblkhd));
}

static void count(size_t add, size_t sub) {
  if (!max_memory) return; /* no budget: nothing to count (set once, at start) */
  long long now = __atomic_add_fetch(&in_use, (long long)add - (long long)sub, __ATOMIC_RELAXED);
  if (add <= sub) return;
  over(now);
  check_allocator(add);
}

size_t raspM_room(void) {
  if (!max_memory) return SIZE_MAX;
  long long now = __atomic_load_n(&in_use, __ATOMIC_RELAXED);
  return now >= (long long)max_memory ? 0 : max_memory - (size_t)now;
}

void *raspM_alloc(size_t size) {
  void *p = calloc(1, size ? size : 1);
  if (!p) out_of_memory(size);
  count(malloc_usable_size(p), 0);
  return p;
}

void *raspM_realloc(void *ptr, size_t size) {
  size_t old = ptr ? malloc_usable_size(ptr) : 0;
  void *p = realloc(ptr, size ? size : 1);
  if (!p) out_of_memory(size);
  count(malloc_usable_size(p), old);
  return p;
}

void raspM_free(void *ptr) {
  if (!ptr) return;
  count(0, malloc_usable_size(ptr));
  free(ptr);
}

static void *gmp_alloc(size_t size) {
  void *p = malloc(size);
  if (!p) out_of_memory(size);
  count(size, 0);
  return p;
}

static void *gmp_realloc(void *ptr, size_t old, size_t size) {
  void *p = realloc(ptr, size);
  if (!p) out_of_memory(size);
  count(size, old);
  return p;
}

static void gmp_free(void *ptr, size_t size) {
  count(0, size);
  free(ptr);
}

void raspM_set_max_memory(size_t bytes) {
  max_memory = bytes;
  snprintf(memory_msg, sizeof memory_msg,
           "memory limit exceeded: more than %zu bytes in use (--max-memory)", bytes);
  mp_set_memory_functions(gmp_alloc, gmp_realloc, gmp_free);
}

/* The first alarm marks the deadline for the polls; the second, 2 s later,
** is the backstop. */
static void on_alarm(int sig) {
  (void)sig;
  if (!timed_out) {
    timed_out = 1;
    raspM_exhausted = 1;
    alarm(2);
    return;
  }
  say(timeout_msg);
  _exit(1);
}

void raspM_set_timeout(unsigned seconds) {
  timed_out = 0;
  snprintf(timeout_msg, sizeof timeout_msg, "timed out after %u s (--timeout)", seconds);
  if (!seconds) {
    alarm(0);
    return;
  }
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_alarm;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGALRM, &sa, NULL);
  alarm(seconds);
}

const char *raspM_over_budget(void) {
  if (!raspM_exhausted) return NULL;
  return timed_out ? timeout_msg : memory_msg;
}

char *raspM_strndup(const char *s, size_t n) {
  char *p = raspM_alloc(n + 1);
  memcpy(p, s, n);
  p[n] = '\0';
  return p;
}

char *raspM_strdup(const char *s) { return raspM_strndup(s, strlen(s)); }

struct rasp_arena_block {
  rasp_arena_block *next;
  size_t used, cap;
  _Alignas(16) unsigned char data[];
};

void raspM_arena_init(rasp_arena *a) {
  a->head = NULL;
  a->total = 0;
}

void *raspM_arena_alloc(rasp_arena *a, size_t size) {
  size = (size + 15) & ~(size_t)15;
  rasp_arena_block *b = a->head;
  if (!b || b->cap - b->used < size) {
    size_t cap = size > 65536 ? size : 65536;
    b = raspM_alloc(sizeof *b + cap);
    b->cap = cap;
    b->used = 0;
    b->next = a->head;
    a->head = b;
  }
  void *p = b->data + b->used;
  b->used += size;
  a->total += size;
  memset(p, 0, size);
  return p;
}

char *raspM_arena_strndup(rasp_arena *a, const char *s, size_t n) {
  char *p = raspM_arena_alloc(a, n + 1);
  memcpy(p, s, n);
  p[n] = '\0';
  return p;
}

void raspM_arena_free(rasp_arena *a) {
  rasp_arena_block *b = a->head;
  while (b) {
    rasp_arena_block *next = b->next;
    raspM_free(b);
    b = next;
  }
  a->head = NULL;
  a->total = 0;
}
