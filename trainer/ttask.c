/*
** ttask.c -- the task of rasp-train held against the --init model's
** (ttask.h says why).  The comparison itself is rmodel's
** (raspN_layout_task_diff), shared with `rasp apply --program`; this file
** only knows which of rasp-train's options sets each setting.
*/
#include "ttask.h"

#include <stdio.h>
#include <string.h>

#include "rmem.h"
#include "rmodel_task.h"

/* The option that makes rasp-train's setting `key` the model's `val`, into
** buf; "" when no option can (an answer of 'none', markers not 1 or 2). */
static void fix_for(const char *key, const char *val, char *buf, size_t n) {
  int on = !strcmp(val, "true");
  if (!strcmp(key, "answer")) {
    const char *a = !strcmp(val, "forward") || !strcmp(val, "reverse") || !strcmp(val, "lead")
                        ? val
                        : NULL; /* the layout's words are the option's */
    if (a) snprintf(buf, n, "--answer %s", a);
    else snprintf(buf, n, "%s", "");
  } else if (!strcmp(key, "bos") || !strcmp(key, "eos")) {
    snprintf(buf, n, "%s--no-%s", on ? "leave out " : "", key);
  } else if (!strcmp(key, "st_names")) {
    snprintf(buf, n, "%s--st-names", on ? "" : "leave out ");
  } else if (!strcmp(key, "markers")) {
    snprintf(buf, n, "%s", ""); /* not 1 or 2: nothing to adopt */
  } else {
    snprintf(buf, n, "--%s %s", key, val); /* D M V order q model */
  }
}

int train_task_match(train_opts *o) {
  static int said; /* compare's arms check the same model again */
  rasp_model m;
  rasp_error err = {0};
  if (!raspN_load_config(&m, o->init, &err)) return 0;
  raspN_task_diff d[RASPN_TASK_NKEYS];
  /* not "model": the loader's own checks refuse a decoder as an encoder
  ** (no MASK: "rasp compile --encoder") and the reverse (not causal) */
  int n = raspN_layout_task_diff(&m, &o->task, -1, d), bad = 0;
  for (int i = 0; i < n; i++) {
    if (!strcmp(d[i].key, "markers") && (!strcmp(d[i].model, "1") || !strcmp(d[i].model, "2"))) {
      o->task.markers = d[i].model[0] - '0';
      if (!said++)
        fprintf(stderr, "rasp-train: '%s' was compiled for markers = %d; its samples get "
                        "that many '|' after each edge\n", o->init, o->task.markers);
      continue;
    }
    char fix[64];
    fix_for(d[i].key, d[i].model, fix, sizeof fix);
    fprintf(stderr, "rasp-train: --init '%s' was compiled for %s = %s, the options give %s = "
                    "%s (%s%s)\n",
            o->init, d[i].key, d[i].model, d[i].key, d[i].ours, *fix ? "fix: " : "",
            *fix ? fix : "rasp-train has no option for it");
    bad++;
  }
  raspN_free(&m);
  return bad ? 2 : 0;
}
