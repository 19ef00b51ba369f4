/*
** ropts.h -- command-line options: the one table format, parser and help
** of the `rasp` commands (rasp/cli_opts.c) and of rasp-train
** (trainer/main.c).
**
** A program describes its options in a table of rows (raspU_option): the
** option's name and second spelling, the name of its value (none: a flag),
** the commands that take it (bits; a program without commands uses one),
** its help, and what becomes of its value.  A row of kind RASPU_TEXT hands
** the value to the caller as text, in order, every time it is given (the
** caller decides what it means; an option given twice is seen twice, so a
** repeatable option is one of these).  The other kinds store the value at
** an offset into the caller's struct, checked against the row's range or
** choices, so the row is all there is to such an option; the help states
** their range and the default read off a defaulted struct.
**
** The convention is the same for every program: --opt VALUE or
** --opt=VALUE (a short option also -oVALUE); --help (-h) and --version
** (rows of every table) print and end the parse; an option no command has
** is "unknown", one that only other commands take is refused naming them,
** a flag given a value (--json=1) and a value option at the end are
** refused: each with a message naming the option, for exit status 2.
** Anything not starting with '-' (and "-" alone) is an operand.
**
** Internal to the programs of this package (librasp-internal, not
** librasp).  raspU_parse returns a count or a negative RASPU_* status, as
** cli.h's parser always did.
*/
#ifndef RASP_ROPTS_H
#define RASP_ROPTS_H

#include <stddef.h>
#include <stdio.h>

typedef enum {
  RASPU_TEXT,   /* the value (NULL for a flag) is handed to the caller */
  RASPU_INT,    /* int in [lo, hi] */
  RASPU_LONG,   /* long in [lo, hi] */
  RASPU_U64,    /* uint64_t in [lo, hi] */
  RASPU_FLOAT,  /* float in [lo, hi], or [lo, hi) with hi_open */
  RASPU_DOUBLE, /* double, the same */
  RASPU_CHOICE, /* int: the value of the choice named */
  RASPU_FLAG,   /* int: choices[0].value; a flag (arg NULL) */
  RASPU_STRING  /* const char *: the text */
} raspU_kind;

/* A name and the value it stands for; a list ends with a NULL name. */
typedef struct raspU_choice {
  const char *name;
  int value;
} raspU_choice;

typedef struct raspU_option {
  const char *name;  /* "--input"; NULL: a heading (help prints help + ":") */
  const char *arg;   /* the value's name in the help; NULL: a flag */
  raspU_kind kind;
  size_t off;        /* typed kinds: where the value goes (offsetof) */
  double lo, hi;     /* numbers: the range */
  int hi_open;       /* numbers: hi itself is refused */
  const raspU_choice *choices; /* RASPU_CHOICE, RASPU_FLAG */
  int mark;          /* the help starts with the table's mark */
  const char *help;  /* one paragraph: the printer fills its lines */
  const char *def;   /* typed rows: the default as text (NULL: the
                     ** value in the defaulted struct given to the help) */
  const char *alias; /* another spelling ("-n"), or NULL */
  unsigned sets;     /* the commands that take it (bits) */
  int id;            /* what raspU_parse hands back for it */
} raspU_option;

typedef struct raspU_table {
  const char *prog; /* "rasp", "rasp-train" */
  const raspU_option *rows;
  int nrows;
  /* the name of command bit cmd ("verify"); NULL: one command */
  const char *(*command_name)(unsigned cmd);
  /* the whole help of command cmd (--help prints it on stdout) */
  void (*usage)(unsigned cmd, FILE *out);
  int column;       /* help: the column where the options' help starts */
  const char *mark; /* help: what a marked row's help starts with */
} raspU_table;

/* One argument: an option (its row's id, its name as given -- the row's
** name or alias --, its value or NULL for a flag, its row) or an operand
** (id 0, name NULL, the text, row NULL). */
typedef struct raspU_arg {
  int id;
  const char *name, *val;
  const raspU_option *opt;
} raspU_arg;

#define RASPU_BAD (-1)  /* a message was printed: exit status 2 */
#define RASPU_DONE (-2) /* --help or --version was printed: exit status 0 */

/* Parses argv[1..] for command cmd (one bit) of table t into *args (free
** with raspM_free): the options and operands in order, values pointing into
** argv.  Typed rows' values are also stored into base (NULL: none may be
** given).  Messages start with who ("rasp run", "rasp-train").  Returns the
** count, RASPU_BAD or RASPU_DONE (*args unset). */
int raspU_parse(const raspU_table *t, unsigned cmd, const char *who, int argc, char **argv,
                void *base, raspU_arg **args);
/* The options of command cmd, one entry each: "  --name, -a ARG" and its
** help filled from t->column to 79 columns.  With defaults (a struct as
** the program defaults it) a typed row's help ends "(RANGE; default X)". */
void raspU_help(const raspU_table *t, unsigned cmd, const void *defaults, FILE *out);

/* The value typed row o holds in base, as the parser reads it back (a
** float or double in the shortest text that reads back exactly): 1 with
** the text in buf; 0 for a flag that is set (no text); -1 when there is
** nothing to write (a flag that is not set, a NULL string, a TEXT row). */
int raspU_value_text(const raspU_option *o, const void *base, char *buf, size_t size);
/* f in the shortest "%g" text (6 to 9 digits) that reads back as f; buf. */
const char *raspU_float_text(float f, char *buf, size_t size);

#endif
