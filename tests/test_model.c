/*
** test_model.c -- transformer weights (rmodel.c): layout, file round trip,
** rejection of bad files (also files that claim sizes they do not hold:
** refused before anything of that size is allocated, under an address
** space limit), a compiled model's recorded task (layout.task), and the
** reference forward pass against a hand computation.
*/
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rmem.h"
#include "rmodel.h"
#include "rmodel_task.h"

#include "check_main.h"

/* ---- helpers ------------------------------------------------------------ */

static char tmpdir[256];

static void setup_dir(void) {
  snprintf(tmpdir, sizeof tmpdir, "/tmp/test_model.XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void teardown_dir(void) {
  char cmd[512];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
  ck_assert_int_eq(system(cmd), 0);
}

static char *path(const char *name) {
  static char buf[4][512];
  static int k;
  k = (k + 1) % 4;
  snprintf(buf[k], sizeof buf[k], "%s/%s", tmpdir, name);
  return buf[k];
}

static rasp_model_config small_cfg(void) {
  rasp_model_config c = {.vocab_size = 7, .max_len = 5, .d_model = 4,
                         .n_layers = 2, .n_heads = 2, .d_head = 3, .d_mlp = 6,
                         .n_out = 5, .causal = 1, .layer_norm = 1,
                         .pos_embedding = 1, .gelu = 0, .bos_token = -1};
  return c;
}

static void fill_random(rasp_model *m, unsigned seed) {
  srand(seed);
  for (size_t i = 0; i < m->nparams; i++)
    m->params[i] = (float)rand() / RAND_MAX - 0.5f;
}

static unsigned char *slurp(const char *p, size_t *n) {
  FILE *f = fopen(p, "rb");
  ck_assert_ptr_nonnull(f);
  fseek(f, 0, SEEK_END);
  long sz = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *b = raspM_alloc((size_t)sz + 1);
  ck_assert_int_eq(fread(b, 1, (size_t)sz, f), (size_t)sz);
  fclose(f);
  *n = (size_t)sz;
  return b;
}

static void spit(const char *p, const void *b, size_t n) {
  FILE *f = fopen(p, "wb");
  ck_assert_ptr_nonnull(f);
  ck_assert_int_eq(fwrite(b, 1, n, f), n);
  fclose(f);
}

/* Loading stem must fail with a message naming file (a substring). */
static void expect_bad(const char *stem, const char *file, const char *what) {
  rasp_model m;
  rasp_error err = {0};
  int rc = raspN_load(&m, stem, &err);
  ck_assert_msg(rc == 0, "loading %s should fail (%s)", stem, what);
  ck_assert_msg(err.set, "no error set");
  ck_assert_msg(strstr(err.msg, file) != NULL, "message '%s' does not name '%s'",
                err.msg, file);
  if (what) ck_assert_msg(strstr(err.msg, what) != NULL,
                          "message '%s' does not say '%s'", err.msg, what);
}

/* ---- layout ------------------------------------------------------------- */

START_TEST(test_layout) {
  rasp_model_config c = small_cfg();
  rasp_model m;
  rasp_error err = {0};
  ck_assert_int_eq(raspN_init(&m, &c, &err), 1);
  /* tok 7*4 + pos 5*4 + per layer (ln 8 + qkv 3*2*4*3 + b 3*6 + wo 2*3*4 +
  ** bo 4 + ln 8 + win 24 + bin 6 + wout 24 + bout 4) + lnf 8 + U 20 + b 5 */
  size_t layer = 8 + 72 + 18 + 24 + 4 + 8 + 24 + 6 + 24 + 4;
  ck_assert_uint_eq(m.nparams, 28 + 20 + 2 * layer + 8 + 20 + 5);
  ck_assert_str_eq(m.tensors[0].name, "tok_emb");
  ck_assert_str_eq(m.tensors[1].name, "pos_emb");
  ck_assert_str_eq(m.tensors[2].name, "layers.0.ln1.weight");
  ck_assert_str_eq(m.tensors[m.ntensors - 1].name, "unembed_b");
  size_t off = 0;
  for (int i = 0; i < m.ntensors; i++) {
    ck_assert_uint_eq(m.tensors[i].offset, off);
    off += m.tensors[i].size;
  }
  ck_assert_uint_eq(off, m.nparams);
  rasp_tensor *t = raspN_tensor(&m, "layers.1.attn.w_o");
  ck_assert_ptr_nonnull(t);
  ck_assert_int_eq(t->ndim, 3);
  ck_assert_int_eq(t->shape[0], 2);
  ck_assert_int_eq(t->shape[1], 3);
  ck_assert_int_eq(t->shape[2], 4);
  ck_assert_ptr_null(raspN_tensor(&m, "layers.2.attn.w_o"));
  for (size_t i = 0; i < m.nparams; i++) ck_assert(m.params[i] == 0.0f);
  raspN_free(&m);

  c.layer_norm = 0;
  c.pos_embedding = 0;
  ck_assert_int_eq(raspN_init(&m, &c, &err), 1);
  ck_assert_ptr_null(raspN_tensor(&m, "pos_emb"));
  ck_assert_ptr_null(raspN_tensor(&m, "ln_f.weight"));
  ck_assert_str_eq(m.tensors[1].name, "layers.0.attn.w_q");
  raspN_free(&m);

  c = small_cfg();
  c.d_model = 0;
  ck_assert_int_eq(raspN_init(&m, &c, &err), 0);
  ck_assert_ptr_nonnull(strstr(err.msg, "d_model"));
  c = small_cfg();
  c.bos_token = 7;
  ck_assert_int_eq(raspN_init(&m, &c, &err), 0);
  c = small_cfg();
  c.causal = 2;
  ck_assert_int_eq(raspN_init(&m, &c, &err), 0);
}
END_TEST

/* ---- files -------------------------------------------------------------- */

/* Two configs equal field by field (not as bytes: the padding before
** norm_eps is whatever the struct's initialiser left there). */
static void assert_cfg_eq(const rasp_model_config *a, const rasp_model_config *b) {
#define F(f) ck_assert_msg(a->f == b->f, "config field " #f " differs");
  F(vocab_size) F(max_len) F(d_model) F(n_layers) F(n_heads) F(d_head) F(d_mlp) F(n_out)
  F(causal) F(layer_norm) F(pos_embedding) F(gelu) F(bos_token) F(norm_eps)
#undef F
}

START_TEST(test_round_trip) {
  rasp_model_config c = small_cfg();
  c.bos_token = 3;
  c.gelu = 1;
  c.norm_eps = 0x1p78; /* (not the default: written, and read back) */
  rasp_model m, r;
  rasp_error err = {0};
  ck_assert_int_eq(raspN_init(&m, &c, &err), 1);
  fill_random(&m, 1);
  m.json_extra = raspM_strdup("{\"dims\": [\"a\", \"b\\n\"], \"x\": {\"y\": null}}");
  ck_assert_int_eq(raspN_save(&m, path("m"), &err), 1);
  ck_assert_int_eq(raspN_load(&r, path("m"), &err), 1);
  assert_cfg_eq(&r.cfg, &m.cfg);
  ck_assert_uint_eq(r.nparams, m.nparams);
  ck_assert_mem_eq(r.params, m.params, m.nparams * sizeof(float));
  ck_assert_str_eq(r.json_extra, m.json_extra);
  raspN_free(&r);
  /* the stem may be given with either extension */
  ck_assert_int_eq(raspN_load(&r, path("m.safetensors"), &err), 1);
  raspN_free(&r);
  /* overwrite in place, without layout: no temporary files left behind */
  raspM_free(m.json_extra);
  m.json_extra = NULL;
  m.params[0] = 42;
  ck_assert_int_eq(raspN_save(&m, path("m"), &err), 1);
  ck_assert_int_eq(raspN_load(&r, path("m"), &err), 1);
  ck_assert(r.params[0] == 42.0f);
  ck_assert_ptr_null(r.json_extra);
  raspN_free(&r);
  char cmd[600];
  snprintf(cmd, sizeof cmd, "test $(ls '%s' | wc -l) -eq 2", tmpdir);
  ck_assert_int_eq(system(cmd), 0);

  /* the header is well-formed safetensors: 8-byte length, JSON, data */
  size_t n;
  unsigned char *b = slurp(path("m.safetensors"), &n);
  uint64_t hn = 0;
  for (int i = 0; i < 8; i++) hn |= (uint64_t)b[i] << (8 * i);
  ck_assert_uint_eq(8 + hn + m.nparams * 4, n);
  ck_assert_int_eq(hn % 8, 0);
  ck_assert_int_eq(b[8], '{');
  ck_assert_ptr_nonnull(strstr((char *)b + 8, "\"tok_emb\":{\"dtype\":\"F32\",\"shape\":[7,4],\"data_offsets\":[0,112]}"));
  ck_assert_ptr_nonnull(strstr((char *)b + 8, "\"__metadata__\":{\"format\":\"rasp\"}"));
  raspM_free(b);

  /* a pair of files that are not one model: the tensors of another save
  ** of the same shape (as a kill between the two renames would leave) */
  ck_assert_int_eq(raspN_save(&m, path("p1"), &err), 1);
  m.params[0] = 7;
  ck_assert_int_eq(raspN_save(&m, path("p2"), &err), 1);
  char mv[900];
  snprintf(mv, sizeof mv, "cp '%s' '%s'", path("p2.safetensors"), path("p1.safetensors"));
  ck_assert_int_eq(system(mv), 0);
  ck_assert_int_eq(raspN_load(&r, path("p1"), &err), 0);
  ck_assert_ptr_nonnull(strstr(err.msg, "are not one model"));
  ck_assert_int_eq(raspN_load(&r, path("p2"), &err), 1);
  raspN_free(&r);
  raspN_free(&m);

  /* unwritable destination */
  ck_assert_int_eq(raspN_init(&m, &c, &err), 1);
  ck_assert_int_eq(raspN_save(&m, "/nonexistent-dir/x", &err), 0);
  ck_assert_ptr_nonnull(strstr(err.msg, "/nonexistent-dir/x.safetensors"));
  raspN_free(&m);
}
END_TEST

static void save_cfg(const char *stem, rasp_model_config c) {
  rasp_model m;
  rasp_error err = {0};
  ck_assert_int_eq(raspN_init(&m, &c, &err), 1);
  fill_random(&m, 2);
  ck_assert_int_eq(raspN_save(&m, stem, &err), 1);
  raspN_free(&m);
}

START_TEST(test_bad_files) {
  rasp_model_config c = small_cfg();
  save_cfg(path("good"), c);
  size_t n, nj;
  unsigned char *b = slurp(path("good.safetensors"), &n);
  unsigned char *j = slurp(path("good.json"), &nj);
  char st[512], js[512];
  snprintf(st, sizeof st, "%s", path("bad.safetensors"));
  snprintf(js, sizeof js, "%s", path("bad.json"));

  /* missing files */
  expect_bad(path("nothing"), "nothing.json", NULL);
  spit(js, j, nj);
  expect_bad(path("bad"), "bad.safetensors", NULL);

  /* truncated at many points */
  size_t cuts[] = {0, 3, 7, 8, 9, 20, 100, n / 2, n - 4, n - 1};
  for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
    spit(st, b, cuts[i]);
    expect_bad(path("bad"), "bad.safetensors", NULL);
  }
  spit(st, b, n - 1);
  expect_bad(path("bad"), "bad.safetensors", "truncated");

  /* not a safetensors file */
  const char *text = "hello, this is certainly not a model file at all\n";
  spit(st, text, strlen(text));
  expect_bad(path("bad"), "bad.safetensors", "not a safetensors file");

  /* every header byte flipped in turn: a clean error or (rarely, e.g. in the
  ** padding) a valid model, never a crash */
  uint64_t hn = 0;
  for (int i = 0; i < 8; i++) hn |= (uint64_t)b[i] << (8 * i);
  for (size_t i = 0; i < 8 + hn; i++) {
    unsigned char *c2 = raspM_alloc(n);
    memcpy(c2, b, n);
    c2[i] ^= (i % 3 == 0) ? 0xFF : (i % 3 == 1 ? 0x01 : 0x20);
    spit(st, c2, n);
    rasp_model m;
    rasp_error err = {0};
    if (raspN_load(&m, path("bad"), &err)) {
      raspN_free(&m);
    } else {
      ck_assert_ptr_nonnull(strstr(err.msg, "bad.safetensors"));
    }
    raspM_free(c2);
  }

  /* wrong dtype: same length, so only the dtype check can catch it */
  {
    unsigned char *c2 = raspM_alloc(n);
    memcpy(c2, b, n);
    char *p = strstr((char *)c2 + 8, "F32");
    ck_assert_ptr_nonnull(p);
    p[1] = '1';
    p[2] = '6';
    spit(st, c2, n);
    expect_bad(path("bad"), "bad.safetensors", "dtype");
    raspM_free(c2);
  }

  /* wrong shapes: tensors of another config under this config */
  rasp_model_config c2 = c;
  c2.n_out = 4;
  save_cfg(path("other"), c2);
  char cmd[1200];
  snprintf(cmd, sizeof cmd, "cp '%s' '%s'", path("other.safetensors"), st);
  ck_assert_int_eq(system(cmd), 0);
  spit(js, j, nj);
  expect_bad(path("bad"), "bad.safetensors", "unembed");
  /* missing tensor (the file lacks pos_emb) */
  c2 = c;
  c2.pos_embedding = 0;
  save_cfg(path("other"), c2);
  ck_assert_int_eq(system(cmd), 0);
  expect_bad(path("bad"), "bad.safetensors", "pos_emb");
  /* unexpected tensor (the file has layer norms the config does not) */
  save_cfg(path("other"), c);
  ck_assert_int_eq(system(cmd), 0);
  c2 = c;
  c2.layer_norm = 0;
  save_cfg(path("cfg2"), c2);
  snprintf(cmd, sizeof cmd, "cp '%s' '%s'", path("cfg2.json"), js);
  ck_assert_int_eq(system(cmd), 0);
  expect_bad(path("bad"), "bad.safetensors", "unexpected tensor");

  /* bad config files */
  spit(st, b, n);
  const char *bad_json[] = {
      "", "{", "[]", "null", "{\"config\": 3}", "{\"config\": {}}",
      "{\"config\": {\"vocab_size\": 1.5}}", "\"\\u12\"", "{\"a\" 1}",
      "{\"config\": {\"vocab_size\": 7}} trailing", "\x01\x02\x03\xff",
      "{\"config\":{\"vocab_size\":7,\"max_len\":5,\"d_model\":4,\"n_layers\":2,"
      "\"n_heads\":2,\"d_head\":3,\"d_mlp\":6,\"n_out\":5,\"causal\":1,"
      "\"layer_norm\":1,\"pos_embedding\":1,\"gelu\":0,\"bos_token\":99}}",
      "{\"config\":{\"vocab_size\":-7}}",
      "{\"config\":{\"vocab_size\":1e300}}",
  };
  for (size_t i = 0; i < sizeof bad_json / sizeof bad_json[0]; i++) {
    spit(js, bad_json[i], strlen(bad_json[i]));
    expect_bad(path("bad"), "bad.json", NULL);
  }
  /* a config field this build does not know (a newer rasp's): refused by
  ** name, not ignored; the good file with one field added */
  {
    const char *at = strstr((const char *)j, "\"config\": {");
    ck_assert_ptr_nonnull(at);
    size_t pre = (size_t)(at - (const char *)j) + strlen("\"config\": {");
    const char *add = "\n    \"norm_kind\": 3,";
    size_t xn = nj + strlen(add);
    char *x = raspM_alloc(xn + 1);
    memcpy(x, j, pre);
    memcpy(x + pre, add, strlen(add));
    memcpy(x + pre + strlen(add), j + pre, nj - pre);
    spit(js, x, xn);
    expect_bad(path("bad"), "bad.json", "config field \"norm_kind\" is not one this build");
    raspM_free(x);
  }
  /* deep nesting is refused, not a stack overflow */
  size_t deep = 100000;
  char *d = raspM_alloc(deep + 1);
  memset(d, '[', deep);
  spit(js, d, deep);
  expect_bad(path("bad"), "bad.json", "deep");
  raspM_free(d);
  /* random mutations of the good config: error or success, never a crash */
  srand(5);
  for (int it = 0; it < 500; it++) {
    unsigned char *c3 = raspM_alloc(nj);
    memcpy(c3, j, nj);
    int k = 1 + rand() % 4;
    for (int q = 0; q < k; q++) c3[rand() % nj] = (unsigned char)rand();
    size_t len = (it % 5 == 0) ? (size_t)rand() % nj : nj;
    spit(js, c3, len);
    rasp_model m;
    rasp_error err = {0};
    if (raspN_load(&m, path("bad"), &err)) raspN_free(&m);
    raspM_free(c3);
  }
  raspM_free(b);
  raspM_free(j);
}
END_TEST

/* The compiled layout is queried through the parser: keys, not text.  The
** decoys (a string "\"readout\"", a unit named "tokens" of another kind)
** are what searching the text would have taken. */
START_TEST(test_layout_query) {
  rasp_model_config c = small_cfg();
  rasp_model m;
  rasp_error err = {0};
  ck_assert_int_eq(raspN_init(&m, &c, &err), 1);
  ck_assert_int_eq(raspN_layout_has(&m, "readout"), 0);
  ck_assert_int_eq(raspN_layout_unit_dim(&m, "tokens"), -1);
  m.json_extra = raspM_strdup(
      "{\"note\": \"no \\\"readout\\\" here, \\\"dims\\\": [\\\"x\\\"]\","
      " \"units\": [{\"name\": \"tokens\", \"kind\": \"numerical\", \"dim\": 9},"
      " {\"kind\": \"tokens\", \"dim\": 3}],"
      " \"dims\": [\"is_bos\", \"tokens=\\u0041\"],"
      " \"out\": {\"readout\": {\"values\": [\"1\", 2]}}}");
  ck_assert_int_eq(raspN_layout_has(&m, "readout"), 0);
  ck_assert_int_eq(raspN_layout_has(&m, "out.readout.values"), 1);
  int n = -1;
  char **v = raspN_layout_strings(&m, "dims", &n);
  ck_assert_int_eq(n, 2);
  ck_assert_str_eq(v[1], "tokens=A");
  raspN_free_strings(v, n);
  /* not all strings: none */
  ck_assert_ptr_null(raspN_layout_strings(&m, "out.readout.values", &n));
  ck_assert_int_eq(n, 0);
  ck_assert_ptr_null(raspN_layout_strings(&m, "dims.x", &n));
  ck_assert_int_eq(raspN_layout_unit_dim(&m, "tokens"), 3);
  ck_assert_int_eq(raspN_layout_unit_dim(&m, "numerical"), 9);
  ck_assert_int_eq(raspN_layout_unit_dim(&m, "categorical"), -1);
  raspN_free(&m);
}
END_TEST

/* layout.task: written into a layout, compared setting by setting, read
** back from STEM.json alone (raspN_load_config); none without a layout. */
START_TEST(test_layout_task) {
  rasp_model_config c = small_cfg();
  rasp_model m, r;
  rasp_error err = {0};
  ck_assert_int_eq(raspN_init(&m, &c, &err), 1);
  rasp_task_opts o;
  raspT_opts_default(&o);
  o.markers = 2;
  o.st_names = 1;
  raspN_task_diff d[RASPN_TASK_NKEYS];
  ck_assert_int_eq(raspN_layout_set_task(&m, &o, 0), 0); /* no layout */
  ck_assert_int_eq(raspN_layout_task_diff(&m, &o, 0, d), -1);
  m.json_extra = raspM_strdup("{\"n\": 3}\n");
  ck_assert_int_eq(raspN_layout_task_diff(&m, &o, 0, d), -1); /* an older file */
  ck_assert_int_eq(raspN_layout_set_task(&m, &o, 1), 1);
  ck_assert_str_eq(m.json_extra,
                   "{\"n\": 3, \"task\": {\"D\": 2, \"M\": 5, \"V\": 100, \"order\": "
                   "\"edge\", \"q\": \"start\", \"answer\": \"forward\", \"bos\": true, "
                   "\"eos\": true, \"markers\": 2, \"st_names\": true, \"model\": "
                   "\"encoder\"}}");
  ck_assert_int_eq(raspN_save(&m, path("t"), &err), 1);
  ck_assert_int_eq(raspN_load_config(&r, path("t"), &err), 1);
  ck_assert_ptr_null(r.params);
  assert_cfg_eq(&r.cfg, &m.cfg);
  ck_assert_int_eq(raspN_layout_task_diff(&r, &o, 1, d), 0);
  rasp_task_opts p = o;
  p.markers = 1;
  p.D = 3;
  p.q = RASP_Q_END;
  ck_assert_int_eq(raspN_layout_task_diff(&r, &p, 0, d), 4);
  ck_assert_str_eq(d[0].key, "D");
  ck_assert_str_eq(d[0].model, "2");
  ck_assert_str_eq(d[0].ours, "3");
  ck_assert_str_eq(d[1].key, "q");
  ck_assert_str_eq(d[1].model, "start");
  ck_assert_str_eq(d[1].ours, "end");
  ck_assert_str_eq(d[2].key, "markers");
  ck_assert_str_eq(d[3].key, "model");
  ck_assert_str_eq(d[3].ours, "decoder");
  ck_assert_int_eq(raspN_layout_task_diff(&r, &p, -1, d), 3); /* model not compared */
  raspN_free(&r);
  /* a value of the wrong type, or none, differs from every setting */
  raspM_free(m.json_extra);
  m.json_extra = raspM_strdup("{\"task\": {\"D\": \"2\", \"M\": 5, \"V\": 100, \"order\": "
                              "\"edge\", \"q\": \"start\", \"answer\": \"forward\", "
                              "\"bos\": 1, \"eos\": true, \"st_names\": true}}");
  ck_assert_int_eq(raspN_layout_task_diff(&m, &o, -1, d), 3);
  ck_assert_str_eq(d[0].key, "D");
  ck_assert_str_eq(d[0].model, "(missing)");
  ck_assert_str_eq(d[1].key, "bos");
  ck_assert_str_eq(d[2].key, "markers");
  raspN_free(&m);
  /* no STEM.json */
  ck_assert_int_eq(raspN_load_config(&r, path("none"), &err), 0);
  ck_assert_ptr_nonnull(strstr(err.msg, "none.json"));
}
END_TEST

/* ---- files that claim more than they hold -------------------------------- */

#if defined(__SANITIZE_ADDRESS__)
/* Under AddressSanitizer an address space limit cannot be used (its shadow
** memory is reserved up front); its own cap makes any allocation above
** 1 GiB abort the test instead. */
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "max_allocation_size_mb=1024"; }
#endif

/* Limits the address space to what the process has now plus 1 GiB (not
** under AddressSanitizer, see above); restore with the returned limit. */
static struct rlimit cap_memory(void) {
  struct rlimit old;
  ck_assert_int_eq(getrlimit(RLIMIT_AS, &old), 0);
#if !defined(__SANITIZE_ADDRESS__)
  FILE *f = fopen("/proc/self/statm", "r");
  unsigned long pages = 0;
  if (f) {
    ck_assert_int_eq(fscanf(f, "%lu", &pages), 1);
    fclose(f);
  }
  struct rlimit lim = old;
  lim.rlim_cur = (rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE) + ((rlim_t)1 << 30);
  if (old.rlim_cur == RLIM_INFINITY || lim.rlim_cur < old.rlim_cur)
    ck_assert_int_eq(setrlimit(RLIMIT_AS, &lim), 0);
#endif
  return old;
}

/* A STEM.json of a few hundred bytes whose config needs vocab_size *
** d_model = 2^30 floats (4 GiB) for tok_emb alone: refused, whether the
** .safetensors next to it is an honest small model, one whose header claims
** the same shapes, or one whose header length lies. */
START_TEST(test_huge_claims) {
  const char *huge =
      "{\"config\":{\"vocab_size\":1048576,\"max_len\":5,\"d_model\":1024,"
      "\"n_layers\":1,\"n_heads\":1,\"d_head\":1024,\"d_mlp\":1024,\"n_out\":5,"
      "\"causal\":1,\"layer_norm\":0,\"pos_embedding\":0,\"gelu\":0,"
      "\"bos_token\":-1}}";
  ck_assert_uint_lt(strlen(huge), 400);
  rasp_model_config small = small_cfg(); /* the same tensors, smaller */
  small.n_layers = 1;
  small.pos_embedding = small.layer_norm = 0;
  save_cfg(path("good"), small);
  size_t n;
  unsigned char *b = slurp(path("good.safetensors"), &n);
  char st[512], js[512];
  snprintf(st, sizeof st, "%s", path("bad.safetensors"));
  snprintf(js, sizeof js, "%s", path("bad.json"));
  struct rlimit old = cap_memory();

  /* an honest small tensor file */
  spit(js, huge, strlen(huge));
  spit(st, b, n);
  expect_bad(path("bad"), "bad.safetensors", "tok_emb' has the wrong shape (expected [1048576,1024])");
  /* a header that claims the shapes, with 400 bytes of data */
  char hdr[2048];
  int hl = snprintf(hdr, sizeof hdr,
                    "{\"tok_emb\":{\"dtype\":\"F32\",\"shape\":[1048576,1024],"
                    "\"data_offsets\":[0,4294967296]}}");
  unsigned char *f = raspM_alloc(8 + (size_t)hl + 400);
  for (int i = 0; i < 8; i++) f[i] = (unsigned char)((uint64_t)hl >> (8 * i));
  memcpy(f + 8, hdr, (size_t)hl);
  spit(st, f, 8 + (size_t)hl + 400);
  expect_bad(path("bad"), "bad.safetensors", "ends at byte 4294967296 of a 400-byte data section");
  /* header lengths: more than the file, more than any header may be */
  uint64_t lens[] = {(uint64_t)1 << 40, (uint64_t)hl + 401, UINT64_MAX, 1};
  const char *why[] = {"header length 1099511627776", "truncated (header of",
                       "header length 18446744073709551615", "header length 1 "};
  for (int k = 0; k < 4; k++) {
    for (int i = 0; i < 8; i++) f[i] = (unsigned char)(lens[k] >> (8 * i));
    spit(st, f, 8 + (size_t)hl + 400);
    expect_bad(path("bad"), "bad.safetensors", why[k]);
  }
  /* a header of 17 MiB that the file does hold (sparse): still refused */
  for (int i = 0; i < 8; i++) f[i] = (unsigned char)(((uint64_t)17 << 20) >> (8 * i));
  spit(st, f, 8 + (size_t)hl);
  ck_assert_int_eq(truncate(st, (off_t)(18 << 20)), 0);
  expect_bad(path("bad"), "bad.safetensors", "header length 17825792 is not in 2..16777216");
  raspM_free(f);

  /* a 4 GiB (sparse) .safetensors is not read whole: a bad header is
  ** refused at once, and a good one loads reading only its tensors */
  for (int good = 0; good < 2; good++) {
    spit(st, b, n);
    if (!good) {
      unsigned char junk = 'x';
      FILE *g = fopen(st, "r+b");
      ck_assert_ptr_nonnull(g);
      ck_assert_int_eq(fseek(g, 8, SEEK_SET), 0);
      ck_assert_int_eq(fwrite(&junk, 1, 1, g), 1);
      fclose(g);
    }
    ck_assert_int_eq(truncate(st, (off_t)4 << 30), 0);
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", path("good.json"), js);
    ck_assert_int_eq(system(cmd), 0);
    if (!good) {
      expect_bad(path("bad"), "bad.safetensors", "bad header");
    } else {
      rasp_model mm;
      rasp_error err = {0};
      ck_assert_msg(raspN_load(&mm, path("bad"), &err) == 1, "%s", err.msg);
      ck_assert_mem_eq(mm.params, b + n - mm.nparams * 4, mm.nparams * 4);
      raspN_free(&mm);
    }
  }
  ck_assert_int_eq(unlink(st), 0);

  /* the config's own limits: dimensions, layers, parameters */
  const char *over[][2] = {
      {"\"d_model\":1024", "\"d_model\":1048577"},
      {"\"n_layers\":1", "\"n_layers\":5000"},
      {"\"d_mlp\":1024", "\"d_mlp\":1048576"},
  };
  const char *overwhy[] = {"d_model = 1048577 is out of range",
                           "n_layers = 5000", "parameters is too many"};
  for (int k = 0; k < 3; k++) {
    char j2[1024];
    const char *at = strstr(huge, over[k][0]);
    ck_assert_ptr_nonnull(at);
    snprintf(j2, sizeof j2, "%.*s%s%s", (int)(at - huge), huge, over[k][1],
             at + strlen(over[k][0]));
    if (k == 2) { /* and many layers: 16 * 2^31 floats */
      char *l = strstr(j2, "\"n_layers\":1,");
      ck_assert_ptr_nonnull(l);
      memmove(l + 13, l + 12, strlen(l + 12) + 1);
      memcpy(l, "\"n_layers\":16", 13);
    }
    spit(js, j2, strlen(j2));
    expect_bad(path("bad"), "bad.json", overwhy[k]);
  }
  /* a config file of 100 MiB (sparse), a directory */
  spit(js, huge, strlen(huge));
  ck_assert_int_eq(truncate(js, (off_t)100 << 20), 0);
  expect_bad(path("bad"), "bad.json", "104857600 bytes; a model config has at most");
  /* 5M values in 10 MB: refused by count before the tree outgrows the cap */
  {
    size_t nv = 5u << 20;
    char *t = raspM_alloc(2 * nv + 2);
    t[0] = '[';
    for (size_t i = 0; i < nv; i++) {
      t[1 + 2 * i] = '0';
      t[2 + 2 * i] = i + 1 < nv ? ',' : ']';
    }
    spit(js, t, 2 * nv + 1);
    raspM_free(t);
    expect_bad(path("bad"), "bad.json", "too many values");
  }
  ck_assert_int_eq(unlink(js), 0);
  ck_assert_int_eq(mkdir(js, 0700), 0);
  expect_bad(path("bad"), "bad.json", "not a regular file");
  ck_assert_int_eq(rmdir(js), 0);
  ck_assert_int_eq(setrlimit(RLIMIT_AS, &old), 0);
  raspM_free(b);
}
END_TEST

/* ---- forward ------------------------------------------------------------ */

static void set(rasp_model *m, const char *name, const float *v) {
  rasp_tensor *t = raspN_tensor(m, name);
  ck_assert_ptr_nonnull(t);
  memcpy(m->params + t->offset, v, t->size * sizeof(float));
}

/* One layer, one head of width 1, one MLP unit, identity readout: small
** enough to compute by hand (see the comments for each step). */
static void hand_model(rasp_model *m, int causal) {
  rasp_model_config c = {.vocab_size = 3, .max_len = 2, .d_model = 2,
                         .n_layers = 1, .n_heads = 1, .d_head = 1, .d_mlp = 1,
                         .n_out = 2, .causal = causal, .layer_norm = 0,
                         .pos_embedding = 1, .gelu = 0, .bos_token = -1};
  rasp_error err = {0};
  ck_assert_int_eq(raspN_init(m, &c, &err), 1);
  set(m, "tok_emb", (float[]){1, 0, 0, 1, 1, 1});
  set(m, "pos_emb", (float[]){0, 0, 0.5f, 0});
  set(m, "layers.0.attn.w_q", (float[]){1, 0});  /* q = x[0] */
  set(m, "layers.0.attn.w_k", (float[]){0, 1});  /* k = x[1] */
  set(m, "layers.0.attn.w_v", (float[]){1, 1});  /* v = x[0] + x[1] */
  set(m, "layers.0.attn.w_o", (float[]){2, -1});
  set(m, "layers.0.attn.b_o", (float[]){0, 0.5f});
  set(m, "layers.0.mlp.w_in", (float[]){1, -1}); /* z = relu(x0 - x1) */
  set(m, "layers.0.mlp.w_out", (float[]){1, 1});
  set(m, "unembed", (float[]){1, 0, 0, 1});
  set(m, "unembed_b", (float[]){0, 0.25f});
}

START_TEST(test_forward_hand) {
  for (int causal = 0; causal <= 1; causal++) {
    rasp_model m;
    hand_model(&m, causal);
    int tok[2] = {0, 1};
    float logits[4], res[3 * 4];
    rasp_error err = {0};
    ck_assert_int_eq(raspN_forward(&m, tok, 2, logits, res, &err), 1);
    /* embeddings: x0 = [1,0], x1 = [0,1] + [0.5,0] */
    double x[2][2] = {{1, 0}, {0.5, 1}};
    ck_assert(res[0] == 1 && res[1] == 0 && res[2] == 0.5f && res[3] == 1);
    double q[2] = {x[0][0], x[1][0]}, k[2] = {x[0][1], x[1][1]},
           v[2] = {x[0][0] + x[0][1], x[1][0] + x[1][1]};
    double xa[2][2];
    for (int i = 0; i < 2; i++) {
      int nk = causal ? i + 1 : 2;
      double s[2], mx = -1e30, sum = 0, hv = 0;
      for (int j = 0; j < nk; j++) {
        s[j] = q[i] * k[j]; /* scale 1/sqrt(1) */
        if (s[j] > mx) mx = s[j];
      }
      for (int j = 0; j < nk; j++) sum += exp(s[j] - mx);
      for (int j = 0; j < nk; j++) hv += exp(s[j] - mx) / sum * v[j];
      xa[i][0] = x[i][0] + 2 * hv;
      xa[i][1] = x[i][1] - hv + 0.5;
    }
    if (causal) { /* position 0 sees only itself: hv = v0 = 1 */
      ck_assert(fabs(xa[0][0] - 3) < 1e-12 && fabs(xa[0][1] + 0.5) < 1e-12);
    }
    for (int i = 0; i < 2; i++) {
      ck_assert_double_eq_tol(res[4 + i * 2], xa[i][0], 1e-6);
      ck_assert_double_eq_tol(res[4 + i * 2 + 1], xa[i][1], 1e-6);
      double z = xa[i][0] - xa[i][1];
      if (z < 0) z = 0;
      double out0 = xa[i][0] + z, out1 = xa[i][1] + z;
      ck_assert_double_eq_tol(res[8 + i * 2], out0, 1e-6);
      ck_assert_double_eq_tol(res[8 + i * 2 + 1], out1, 1e-6);
      ck_assert_double_eq_tol(logits[i * 2], out0, 1e-6);
      ck_assert_double_eq_tol(logits[i * 2 + 1], out1 + 0.25, 1e-6);
    }
    /* causal: position 0's output does not depend on position 1 */
    if (causal) {
      float l1[2];
      ck_assert_int_eq(raspN_forward(&m, tok, 1, l1, NULL, &err), 1);
      ck_assert(l1[0] == logits[0] && l1[1] == logits[1]);
    }
    /* bad inputs */
    ck_assert_int_eq(raspN_forward(&m, tok, 3, logits, NULL, &err), 0);
    ck_assert_ptr_nonnull(strstr(err.msg, "length"));
    int badtok[2] = {0, 3};
    ck_assert_int_eq(raspN_forward(&m, badtok, 2, logits, NULL, &err), 0);
    ck_assert_ptr_nonnull(strstr(err.msg, "token"));
    raspN_free(&m);
  }
}
END_TEST

/* Layer norm and GELU, by hand: no layers, d_model 2, so LN_f maps [a, b]
** to +-(a-b)/2 / sqrt(((a-b)/2)^2 + 1e-5) (times weight, plus bias). */
START_TEST(test_forward_ln_gelu) {
  rasp_model_config c = {.vocab_size = 2, .max_len = 1, .d_model = 2,
                         .n_layers = 0, .n_heads = 1, .d_head = 1, .d_mlp = 1,
                         .n_out = 2, .causal = 1, .layer_norm = 1,
                         .pos_embedding = 0, .gelu = 1, .bos_token = 0};
  rasp_model m;
  rasp_error err = {0};
  ck_assert_int_eq(raspN_init(&m, &c, &err), 1);
  set(&m, "tok_emb", (float[]){3, 1, 0.001f, 0});
  set(&m, "ln_f.weight", (float[]){2, 1});
  set(&m, "ln_f.bias", (float[]){0, 1});
  set(&m, "unembed", (float[]){1, 0, 0, 1});
  for (int t = 0; t < 2; t++) {
    float lg[2];
    ck_assert_int_eq(raspN_forward(&m, &t, 1, lg, NULL, &err), 1);
    double a = t ? 0.001 : 3, b = t ? 0 : 1, h = (a - b) / 2;
    double y = h / sqrt(h * h + 1e-5);
    ck_assert_double_eq_tol(lg[0], 2 * y, 1e-5);
    ck_assert_double_eq_tol(lg[1], -y + 1, 1e-5);
  }
  raspN_free(&m);

  /* GELU in an MLP: one layer, attention zero, w_in picks x[0] */
  c.n_layers = 1;
  c.layer_norm = 0;
  ck_assert_int_eq(raspN_init(&m, &c, &err), 1);
  set(&m, "tok_emb", (float[]){-0.7f, 0, 1.3f, 0});
  set(&m, "layers.0.mlp.w_in", (float[]){1, 0});
  set(&m, "layers.0.mlp.w_out", (float[]){0, 1});
  set(&m, "unembed", (float[]){1, 0, 0, 1});
  for (int t = 0; t < 2; t++) {
    float lg[2];
    ck_assert_int_eq(raspN_forward(&m, &t, 1, lg, NULL, &err), 1);
    double x = t ? 1.3 : -0.7;
    double g = 0.5 * x * (1 + tanh(sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
    ck_assert_double_eq_tol(lg[0], x, 1e-6);
    ck_assert_double_eq_tol(lg[1], g, 1e-6);
  }
  raspN_free(&m);
}
END_TEST

/* Softmax stays finite for huge scores (numerically stable). */
START_TEST(test_forward_stable) {
  rasp_model m;
  hand_model(&m, 0);
  set(&m, "layers.0.attn.w_q", (float[]){1000, 0});
  set(&m, "layers.0.attn.w_k", (float[]){0, 1000});
  int tok[2] = {2, 2};
  float lg[4];
  rasp_error err = {0};
  ck_assert_int_eq(raspN_forward(&m, tok, 2, lg, NULL, &err), 1);
  for (int i = 0; i < 4; i++) ck_assert(isfinite(lg[i]));
  raspN_free(&m);
}
END_TEST

static Suite *model_suite(void) {
  Suite *s = suite_create("model");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 60);
  tcase_add_checked_fixture(tc, setup_dir, teardown_dir);
  tcase_add_test(tc, test_layout);
  tcase_add_test(tc, test_round_trip);
  tcase_add_test(tc, test_bad_files);
  tcase_add_test(tc, test_huge_claims);
  tcase_add_test(tc, test_layout_query);
  tcase_add_test(tc, test_layout_task);
  tcase_add_test(tc, test_forward_hand);
  tcase_add_test(tc, test_forward_ln_gelu);
  tcase_add_test(tc, test_forward_stable);
  suite_add_tcase(s, tc);
  return s;
}

RASP_CHECK_MAIN(model_suite())
