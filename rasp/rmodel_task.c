/*
** rmodel_task.c -- layout.task: a path-star task's settings written into a
** compiled model's layout and compared with a reader's (rmodel_task.h),
** through rmodel's settings objects, so that the model format itself
** knows nothing of the task.
*/
#include "rmodel_task.h"

#include <stdio.h>

/* layout.task's keys, in the order written, and their kinds. */
static const struct {
  const char *key;
  int kind;
} task_keys[RASPN_TASK_NKEYS] = {
    {"D", RASPN_SET_INT},        {"M", RASPN_SET_INT},       {"V", RASPN_SET_INT},
    {"order", RASPN_SET_STR},    {"q", RASPN_SET_STR},       {"answer", RASPN_SET_STR},
    {"bos", RASPN_SET_BOOL},     {"eos", RASPN_SET_BOOL},    {"markers", RASPN_SET_INT},
    {"st_names", RASPN_SET_BOOL}, {"model", RASPN_SET_STR},
};

/* Setting k of o (encoder for "model") as text, as layout.task's value
** reads back (strings unquoted). */
static void task_text(const rasp_task_opts *o, int encoder, int k, char *buf, size_t n) {
  static const char *const ans[] = {"none", "forward", "reverse", "lead"};
  int v = 0;
  const char *s = NULL;
  switch (k) {
  case 0: v = o->D; break;
  case 1: v = o->M; break;
  case 2: v = o->V; break;
  case 3: s = o->order == RASP_ORDER_ARM ? "arm" : "edge"; break;
  case 4: s = o->q == RASP_Q_END ? "end" : "start"; break;
  case 5: s = (unsigned)o->answer < 4 ? ans[o->answer] : "?"; break;
  case 6: v = o->bos != 0; break;
  case 7: v = o->eos != 0; break;
  case 8: v = o->markers; break;
  case 9: v = o->st_names != 0; break;
  default: s = encoder ? "encoder" : "decoder"; break;
  }
  if (s) snprintf(buf, n, "%s", s);
  else if (task_keys[k].kind == RASPN_SET_BOOL) snprintf(buf, n, "%s", v ? "true" : "false");
  else snprintf(buf, n, "%d", v);
}

/* The settings of o (encoder for "model"), all RASPN_TASK_NKEYS. */
static void task_settings(const rasp_task_opts *o, int encoder, raspN_setting *s) {
  for (int k = 0; k < RASPN_TASK_NKEYS; k++) {
    s[k].key = task_keys[k].key;
    s[k].kind = task_keys[k].kind;
    task_text(o, encoder, k, s[k].text, sizeof s[k].text);
  }
}

int raspN_layout_set_task(rasp_model *m, const rasp_task_opts *o, int encoder) {
  raspN_setting s[RASPN_TASK_NKEYS];
  task_settings(o, encoder, s);
  return raspN_layout_set_object(m, "task", s, RASPN_TASK_NKEYS);
}

int raspN_layout_task_diff(const rasp_model *m, const rasp_task_opts *o, int encoder,
                           raspN_task_diff *d) {
  raspN_setting s[RASPN_TASK_NKEYS];
  task_settings(o, encoder, s);
  /* "model" is the last key: encoder -1 leaves it out */
  return raspN_layout_object_diff(m, "task", s, encoder < 0 ? RASPN_TASK_NKEYS - 1 : RASPN_TASK_NKEYS,
                                  d);
}
