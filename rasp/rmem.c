/*
** rmem.c -- allocation wrapper and arena.
*/
#include "rmem.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void out_of_memory(size_t size) {
  fprintf(stderr, "rasp: out of memory (allocating %zu bytes)\n", size);
  abort();
}

void *raspM_alloc(size_t size) {
  void *p = calloc(1, size ? size : 1);
  if (!p) out_of_memory(size);
  return p;
}

void *raspM_realloc(void *ptr, size_t size) {
  void *p = realloc(ptr, size ? size : 1);
  if (!p) out_of_memory(size);
  return p;
}

void raspM_free(void *ptr) { free(ptr); }

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
    free(b);
    b = next;
  }
  a->head = NULL;
  a->total = 0;
}
