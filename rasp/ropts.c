/*
** ropts.c -- the command-line parser and help of every program of the
** package, over the tables of ropts.h.
**
** The parser goes once through argv.  Each argument is an operand, or
** names a row: "--opt" or "--opt=VALUE" by its name or alias, a short
** "-n10" by its alias with the value attached.  A row of the command is
** taken; a row only of other commands is refused naming them (a mistyped
** command line never runs with an option silently ignored), none at all is
** "unknown".  A typed row's value is converted and range-checked here, so
** its message is the same whichever program has it.  The help fills each
** row's paragraph to 79 columns, so the table's help strings need no line
** breaks of their own.
*/
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rasp.h" /* RASP_VERSION */
#include "rmem.h"
#include "ropts.h"

/* "verify" or "layers, draw and compile": the commands in bits, after
** "prog ". */
static void commands_text(const raspU_table *t, unsigned bits, char *buf, size_t size) {
  size_t used = 0;
  int n = 0, total = 0;
  buf[0] = '\0';
  for (unsigned b = 1; b && b <= bits; b <<= 1) total += (bits & b) != 0;
  for (unsigned b = 1; b && b <= bits && used + 32 < size; b <<= 1) {
    if (!(bits & b)) continue;
    n++;
    used += (size_t)snprintf(buf + used, size - used, "%s%s",
                             n == 1 ? "" : n == total ? " and " : ", ", t->command_name(b));
  }
}

static int same(const char *name, const char *text, size_t len) {
  return name && strlen(name) == len && strncmp(name, text, len) == 0;
}

/* The row of option text (len characters, without any "=VALUE") for cmd;
** NULL when none.  *other gets the commands that have an option of that
** name (0: none). */
static const raspU_option *find(const raspU_table *t, unsigned cmd, const char *text, size_t len,
                                unsigned *other) {
  *other = 0;
  for (int k = 0; k < t->nrows; k++) {
    const raspU_option *o = &t->rows[k];
    if (!same(o->name, text, len) && !same(o->alias, text, len)) continue;
    if (o->sets & cmd) return o;
    *other |= o->sets;
  }
  return NULL;
}

/* A short option with its value attached ("-n10", "-oFILE"): its row. */
static const raspU_option *find_attached(const raspU_table *t, unsigned cmd, const char *a) {
  unsigned other;
  if (a[0] != '-' || a[1] == '-' || !a[1] || !a[2]) return NULL;
  const raspU_option *o = find(t, cmd, a, 2, &other);
  return o && o->arg ? o : NULL;
}

/* "expected a, b or c" for a row's choices. */
static void choices_text(const raspU_option *o, char *buf, size_t size) {
  size_t at = 0;
  buf[0] = '\0';
  for (const raspU_choice *c = o->choices; c->name && at < size; c++)
    at += (size_t)snprintf(buf + at, size - at, "%s%s",
                           !at ? "expected " : c[1].name ? ", " : " or ", c->name);
}

/* Stores text v of typed row o into base: 1, or 0 after a message. */
static int store(const char *who, const raspU_option *o, const char *v, void *base) {
  char *p = (char *)base + o->off, why[160], *e;
  errno = 0;
  switch (o->kind) {
  case RASPU_INT:
  case RASPU_LONG:
  case RASPU_U64: {
    long long x = strtoll(v, &e, 10);
    if (!*v || *e || errno || (double)x < o->lo || (double)x > o->hi) {
      snprintf(why, sizeof why, "expected an integer in %.0f..%.0f", o->lo, o->hi);
      break;
    }
    if (o->kind == RASPU_INT) *(int *)p = (int)x;
    else if (o->kind == RASPU_LONG) *(long *)p = (long)x;
    else *(uint64_t *)p = (uint64_t)x;
    return 1;
  }
  case RASPU_FLOAT:
  case RASPU_DOUBLE: {
    double x = strtod(v, &e);
    if (!*v || *e || errno || !(x >= o->lo && x <= o->hi) || (o->hi_open && x >= o->hi)) {
      snprintf(why, sizeof why, "expected a number in [%g, %g%s", o->lo, o->hi,
               o->hi_open ? ")" : "]");
      break;
    }
    if (o->kind == RASPU_FLOAT) *(float *)p = (float)x;
    else *(double *)p = x;
    return 1;
  }
  case RASPU_CHOICE:
    for (const raspU_choice *c = o->choices; c->name; c++)
      if (!strcmp(c->name, v)) {
        *(int *)p = c->value;
        return 1;
      }
    choices_text(o, why, sizeof why);
    break;
  case RASPU_FLAG: *(int *)p = o->choices[0].value; return 1;
  case RASPU_STRING: *(const char **)p = v; return 1;
  case RASPU_TEXT: return 1;
  }
  fprintf(stderr, "%s: bad value '%s' for %s: %s\n", who, v, o->name, why);
  return 0;
}

int raspU_parse(const raspU_table *t, unsigned cmd, const char *who, int argc, char **argv,
                void *base, raspU_arg **out) {
  raspU_arg *args = raspM_alloc(sizeof(raspU_arg) * (size_t)(argc > 0 ? argc : 1));
  int n = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (a[0] != '-' || !a[1]) { /* an operand ("-" too: standard input, for some) */
      args[n++] = (raspU_arg){0, NULL, a, NULL};
      continue;
    }
    const char *eq = a[1] == '-' ? strchr(a, '=') : NULL;
    size_t len = eq ? (size_t)(eq - a) : strlen(a);
    unsigned other;
    const raspU_option *o = find(t, cmd, a, len, &other);
    const char *val = NULL;
    if (!o && !other && (o = find_attached(t, cmd, a))) {
      val = a + 2;
    } else if (!o) {
      if (other && t->command_name) {
        char cmds[160];
        commands_text(t, other, cmds, sizeof cmds);
        fprintf(stderr, "%s: option '%.*s' is for %s %s; %s does not use it\n", who, (int)len,
                a, t->prog, cmds, t->command_name(cmd));
      } else {
        fprintf(stderr, "%s: unknown option '%.*s' (%s --help lists them)\n", who, (int)len, a,
                who);
      }
      raspM_free(args);
      return RASPU_BAD;
    } else if (!o->arg && eq) {
      fprintf(stderr, "%s: %s takes no value, got '%s'\n", who, o->name, eq + 1);
      raspM_free(args);
      return RASPU_BAD;
    } else if (o->arg) {
      if (eq) val = eq + 1;
      else if (i + 1 < argc) val = argv[++i];
      else {
        fprintf(stderr, "%s: %s needs a value (%s)\n", who, o->name, o->arg);
        raspM_free(args);
        return RASPU_BAD;
      }
    }
    if (!strcmp(o->name, "--help") || !strcmp(o->name, "--version")) {
      if (o->name[2] == 'h') t->usage(cmd, stdout);
      else printf("%s " RASP_VERSION "\n", who);
      raspM_free(args);
      return RASPU_DONE;
    }
    if (o->kind != RASPU_TEXT && base && !store(who, o, val ? val : "", base)) {
      raspM_free(args);
      return RASPU_BAD;
    }
    /* the spelling given, for messages ("-n: ..." after -n or -n10) */
    size_t alen = o->alias ? strlen(o->alias) : 0;
    int as_alias = o->alias && strncmp(a, o->alias, alen) == 0 &&
                   (len == alen || (val && val == a + alen));
    args[n++] = (raspU_arg){o->id, as_alias ? o->alias : o->name, val, o};
  }
  *out = args;
  return n;
}

const char *raspU_float_text(float f, char *buf, size_t size) {
  for (int d = 6; d <= 9; d++) {
    snprintf(buf, size, "%.*g", d, (double)f);
    if (strtof(buf, NULL) == f) break;
  }
  return buf;
}

int raspU_value_text(const raspU_option *o, const void *base, char *buf, size_t size) {
  const char *p = (const char *)base + o->off;
  buf[0] = '\0';
  switch (o->kind) {
  case RASPU_INT: snprintf(buf, size, "%d", *(const int *)p); return 1;
  case RASPU_LONG: snprintf(buf, size, "%ld", *(const long *)p); return 1;
  case RASPU_U64: snprintf(buf, size, "%llu", (unsigned long long)*(const uint64_t *)p); return 1;
  case RASPU_FLOAT: raspU_float_text(*(const float *)p, buf, size); return 1;
  case RASPU_DOUBLE:
    for (int d = 15; d <= 17; d++) {
      snprintf(buf, size, "%.*g", d, *(const double *)p);
      if (strtod(buf, NULL) == *(const double *)p) break;
    }
    return 1;
  case RASPU_CHOICE:
    for (const raspU_choice *c = o->choices; c->name; c++)
      if (c->value == *(const int *)p) {
        snprintf(buf, size, "%s", c->name);
        return 1;
      }
    return -1;
  case RASPU_STRING:
    if (!*(const char *const *)p) return -1;
    snprintf(buf, size, "%s", *(const char *const *)p);
    return 1;
  case RASPU_FLAG: return *(const int *)p == o->choices[0].value ? 0 : -1;
  case RASPU_TEXT: return -1;
  }
  return -1;
}

/* The default of typed row o, as text, from the defaulted struct d. */
static const char *default_text(const raspU_option *o, const void *d, char *buf, size_t size) {
  const char *p = (const char *)d + o->off;
  if (o->def) return o->def;
  switch (o->kind) {
  case RASPU_INT: snprintf(buf, size, "%d", *(const int *)p); break;
  case RASPU_LONG: snprintf(buf, size, "%ld", *(const long *)p); break;
  case RASPU_U64: snprintf(buf, size, "%llu", (unsigned long long)*(const uint64_t *)p); break;
  case RASPU_FLOAT: snprintf(buf, size, "%g", (double)*(const float *)p); break;
  case RASPU_DOUBLE: snprintf(buf, size, "%g", *(const double *)p); break;
  case RASPU_CHOICE:
    snprintf(buf, size, "?");
    for (const raspU_choice *c = o->choices; c->name; c++)
      if (c->value == *(const int *)p) { /* the first name: later ones are aliases */
        snprintf(buf, size, "%s", c->name);
        break;
      }
    break;
  case RASPU_STRING:
    snprintf(buf, size, "%s", *(const char *const *)p ? *(const char *const *)p : "none");
    break;
  case RASPU_FLAG: snprintf(buf, size, "off"); break;
  case RASPU_TEXT: buf[0] = '\0'; break;
  }
  return buf;
}

/* The range of a numeric row, as text ending "; " ("" for others). */
static const char *range_text(const raspU_option *o, char *buf, size_t size) {
  buf[0] = '\0';
  if (o->kind == RASPU_INT || o->kind == RASPU_LONG || o->kind == RASPU_U64)
    snprintf(buf, size, "%.0f..%.0f; ", o->lo, o->hi);
  else if ((o->kind == RASPU_FLOAT || o->kind == RASPU_DOUBLE) && o->hi_open)
    snprintf(buf, size, "%g <= %s < %g; ", o->lo, o->arg, o->hi);
  else if (o->kind == RASPU_FLOAT || o->kind == RASPU_DOUBLE)
    snprintf(buf, size, "%g..%g; ", o->lo, o->hi);
  return buf;
}

#define HELP_WIDTH 79

/* The words of text (spaces and newlines between them) from column col on,
** at least at column indent, wrapped at HELP_WIDTH; returns the column. */
static int fill(FILE *out, const char *text, int col, int indent) {
  for (const char *p = text; *p;) {
    while (*p == ' ' || *p == '\n') p++;
    size_t len = strcspn(p, " \n");
    if (!len) break;
    if (col > indent && col + 1 + (int)len > HELP_WIDTH) {
      fputc('\n', out);
      col = 0;
    }
    if (col < indent) col += fprintf(out, "%*s", indent - col, "");
    else col += fprintf(out, " ");
    col += fprintf(out, "%.*s", (int)len, p);
    p += len;
  }
  return col;
}

void raspU_help(const raspU_table *t, unsigned cmd, const void *defaults, FILE *out) {
  for (int k = 0; k < t->nrows; k++) {
    const raspU_option *o = &t->rows[k];
    if (!o->name) {
      fprintf(out, "%s:\n", o->help);
      continue;
    }
    if (!(o->sets & cmd)) continue;
    int col = fprintf(out, "  %s%s%s%s%s", o->name, o->alias ? ", " : "", o->alias ? o->alias : "",
                      o->arg ? " " : "", o->arg ? o->arg : "");
    if (col >= t->column - 1) { /* at least two spaces before the help */
      fputc('\n', out);
      col = 0;
    }
    if (o->mark && t->mark) col = fill(out, t->mark, col, t->column);
    col = fill(out, o->help, col, t->column);
    if (defaults && (o->kind != RASPU_TEXT || o->def)) {
      char text[256], range[96], def[96];
      snprintf(text, sizeof text, "(%sdefault %s)", range_text(o, range, sizeof range),
               default_text(o, defaults, def, sizeof def));
      fill(out, text, col, t->column);
    }
    fputc('\n', out);
  }
}
