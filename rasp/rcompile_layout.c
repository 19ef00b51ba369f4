/*
** rcompile_layout.c -- STEM.json's layout of a compiled model.
**
** Which unit lives in which dimensions, which head in which slot, and the
** proof's verdicts (per unit, and layout.proof for the whole model: proven
** or not, and the premise it rests on), as JSON for the model file
** (doc/compiler.md).
*/
#include "rcompile_int.h"

/* ---- the layout as JSON ------------------------------------------------- */

typedef struct sbuf {
  char *s;
  size_t len, cap;
} sbuf;

static void sb_printf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(sbuf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int k = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (b->len + (size_t)k + 1 > b->cap) {
    b->cap = (b->len + (size_t)k + 1) * 2;
    b->s = raspM_realloc(b->s, b->cap);
  }
  va_start(ap, fmt);
  vsnprintf(b->s + b->len, (size_t)k + 1, fmt, ap);
  va_end(ap);
  b->len += (size_t)k;
}
static void sb_str(sbuf *b, const char *s) {
  sb_printf(b, "\"");
  for (; *s; s++) {
    if (*s == '"' || *s == '\\') sb_printf(b, "\\%c", *s);
    else if ((unsigned char)*s < 0x20) sb_printf(b, "\\u%04x", *s);
    else sb_printf(b, "%c", *s);
  }
  sb_printf(b, "\"");
}
static void sb_elem(sbuf *b, const rasp_ir *ir, rasp_elem e) {
  char buf[256];
  raspI_elem_format(ir, e, buf, sizeof buf);
  sb_str(b, buf);
}

const char *raspG_unit_name(gc *g, const unit *u, char *buf, size_t size) {
  if (u->kind == U_TOK) return "tokens";
  if (u->kind == U_IDX) return "indices";
  if (u->kind == U_ONE) return "one";
  const rasp_ir_node *nd = &g->ir->nodes[u->node];
  snprintf(buf, size, "%s%%%d%s%s", u->kind == U_MLP && u->mkind == M_DECODE ? "decode:" : "",
           u->node, nd->label ? ":" : "", nd->label ? nd->label : "");
  return buf;
}

/* layout.proof: whether the rounding proof covers every head, MLP unit and
** the readout (false only for an fp32 model compiled by size, `rasp
** compile --unproven`, with a unit the bound does not prove: the loaders
** warn), the first unit it does not, and the premise the proof rests on
** where the model moves a selected number the program averages without
** proving the selected values equal ("one key per query" with --moves
** one, "equal selected values" with assume; null where nothing is
** assumed), which --check tests. */
static void proof_json(sbuf *b, const raspG_model *m) {
  sb_printf(b, "\"proof\": {\"proven\": %s, \"units\": %d, \"not_proven\": %d, "
               "\"first_not_proven\": ", m->unproven ? "false" : "true", m->checked, m->unproven);
  if (m->unproven) sb_str(b, m->unproven_at);
  else sb_printf(b, "null");
  sb_printf(b, ", \"assumed_moves\": %d, \"premise\": ", m->moves_assumed);
  if (m->moves_assumed) {
    sb_str(b, m->moves_one ? "one key per query" : "equal selected values");
    sb_printf(b, ", \"first_assumed_move\": ");
    sb_str(b, m->moves_at);
  } else {
    sb_printf(b, "null, \"first_assumed_move\": null");
  }
  sb_printf(b, "}, ");
}

/* layout.arithmetic (fp32 models): the arithmetic the model is exact in.
** A quantized width (the residual holds 2^23 + qv fl(1/(w+1)), which only
** float32's grid of 1 there rounds to the integer its decode reads) needs
** float32 itself: ["float32"], and the loaders refuse to run it in another
** type.  Every other proven form is exact, or bounded by a rounding error
** that a wider type only shrinks: ["float32", "float64"]; but a pre-RMSNorm
** model whose norms are proven exact in float32 only (rcompile_rms.c). */
static void arithmetic_json(const gc *g, sbuf *b, const raspG_model *m) {
  if (m->precision != RASPG_FP32) return;
  int qw = 0;
  for (int i = 0; i < g->nu; i++) qw |= g->u[i].used && g->u[i].qw;
  /* (a pre-RMSNorm model whose constants are sized for float32 alone) */
  qw |= m->model.cfg.layer_norm == RASPN_LN_RMS && !m->ln_f64;
  sb_printf(b, "\"arithmetic\": [%s], ", qw ? "\"float32\"" : "\"float32\", \"float64\"");
}

/* layout.attention: the gain (--attn-gain), the score scale it gave and
** the leak it allows (per key at the smallest margin, and the proven
** total); the score formulas the model is exact under: its own (the
** product, then 1/sqrt(d_head)), and PyTorch's scaled_dot_product_attention
** where d_head makes that one the same (doc/compiler.md, "Score formulas"). */
static void attention_json(sbuf *b, const raspG_model *m) {
  sb_printf(b, "\"attention\": {\"gain\": %.17g, \"score_scale\": %.17g, ", m->attn_gain,
            m->score_scale);
  if (m->attn_margin >= 0)
    sb_printf(b, "\"leak_per_key\": %.6g, \"leak\": %.6g, ", exp(-m->attn_margin), m->attn_leak);
  else
    sb_printf(b, "\"leak_per_key\": null, \"leak\": null, ");
  sb_printf(b, "\"formulas\": [\"product_first\"%s]}, ",
            raspN_sdpa_exact(m->model.cfg.d_head) ? ", \"sdpa\"" : "");
}

/* The name of residual dimension dim: every unit that holds it in the
** order they are written, " | " between them (a dead unit's dimensions are
** reused; in-place units share their operand's), each as unit=value. */
static void dim_json(gc *g, sbuf *b, int dim) {
  sbuf nm = {0};
  char nb[256];
  for (int i = 0; i < g->nu; i++) {
    unit *u = &g->u[i];
    if (!u->used || u->kind == U_ONE || u->alias >= 0) continue;
    int k = dim - u->dim;
    if (k < 0 || k >= usize(u)) continue;
    const char *name = raspG_unit_name(g, u, nb, sizeof nb);
    char eb[128];
    if (u->kind == U_TOK && u->cat && g->o->token_names && u->vals[k].num >= 0 &&
        u->vals[k].num <= g->o->nvocab && g->o->token_names[u->vals[k].num])
      snprintf(eb, sizeof eb, "%s", g->o->token_names[u->vals[k].num]);
    else if (u->cat)
      raspI_elem_format(g->ir, u->vals[k], eb, sizeof eb);
    else
      snprintf(eb, sizeof eb, "%s",
               u->sq ? (k ? "x^2" : "x") : u->hmode == H_WIDTH ? (u->qw ? "2^23+qv/(w+1)" : "1/(w+1)") : u->cw ? "w/(n+1)" : "mean");
    sb_printf(&nm, "%s%s=%s", nm.len ? " | " : "", name, eb);
  }
  sb_printf(b, ", ");
  sb_str(b, nm.s ? nm.s : "");
  raspM_free(nm.s);
}

/* layout.dims: dims[k] names residual dimension k: is_bos, one, then the
** units' (dim_json); past them --ln rms's padding and constants
** (rcompile_rms.c) or --ln pre's balance, padding and constants
** (rcompile_ln.c). */
static void dims_json(gc *g, sbuf *b, const raspG_model *m) {
  sb_printf(b, "\"dims\": [\"is_bos\", \"one\"");
  for (int dim = 2; dim < m->n_dims; dim++) dim_json(g, b, dim);
  for (int dim = m->n_dims; m->model.cfg.layer_norm == RASPN_LN_RMS && dim < m->model.cfg.d_model;
       dim++) {
    int kc = m->model.cfg.d_model - dim; /* 1..: from the last */
    if (kc > m->ln_nc) sb_printf(b, ", \"\"");
    else sb_printf(b, ", \"rms_const%d\"", m->ln_nc - kc);
  }
  for (int dim = m->n_dims; m->model.cfg.layer_norm == RASPN_LN_PRE && m->ln_stock &&
                            dim < m->model.cfg.d_model; dim++)
    sb_printf(b, dim == m->n_dims ? ", \"ln_balance\"" : ", \"ln_sink%d\"", dim - m->n_dims - 1);
  for (int dim = m->n_dims; m->model.cfg.layer_norm == RASPN_LN_PRE && !m->ln_stock &&
                            dim < m->model.cfg.d_model; dim++) {
    int kc = m->model.cfg.d_model - dim; /* 1..: from the last */
    int nc = m->ln_b ? 4 : 2;
    sb_printf(b, ", \"%s\"", dim == m->n_dims ? "ln_balance" : kc > nc ? "" :
              (const char *[]){"ln_-b", "ln_+b", "ln_-a", "ln_+a"}[kc - 1 + (nc == 2 ? 2 : 0)]);
  }
  sb_printf(b, "], ");
}

/* One unit of layout.units: where it lives, and the proof's verdict. */
static void unit_json(gc *g, sbuf *b, const raspG_model *m, unit *u) {
  static const char *kinds[] = {"tokens", "indices", "one", "head", "mlp"};
  char nb[256];
  sb_printf(b, "{\"name\": ");
  sb_str(b, raspG_unit_name(g, u, nb, sizeof nb));
  sb_printf(b, ", \"kind\": \"%s\", \"encoding\": \"%s\", \"dim\": %d, \"size\": %d, "
                "\"layer\": %d, \"erased_at_layer\": %d%s",
            kinds[u->kind], u->cat ? "categorical" : u->sq ? "numerical+square" : "numerical",
            u->dim, u->cat ? u->nvals : u->sq ? 2 : 1, u->kind >= U_HEAD ? u->layer : -1,
            u->erase ? u->erase / 2 - 1 : -1,
            u->alias >= 0 ? ", \"in_place\": true" : "");
  /* the proven margin (heads: score gap in logits; MLP units: distance
  ** from the hinge) and the rounding it absorbs at the precision */
  if (u->kind >= U_HEAD && u->margin >= 0 && u->margin < INFINITY && isfinite(u->need))
    sb_printf(b, ", \"margin\": %.6g, \"rounding\": %.6g", u->margin, u->need);
  else if (u->kind >= U_HEAD && u->margin >= 0 && u->margin < INFINITY) /* (no bound) */
    sb_printf(b, ", \"margin\": %.6g, \"rounding\": null", u->margin);
  else
    sb_printf(b, ", \"margin\": null");
  /* whether the rounding bound proves it (fp32 compiles it either way) */
  if (u->kind >= U_HEAD) sb_printf(b, ", \"proven\": %s", u->proven ? "true" : "false");
  /* a head that moves one selected number where the program averages:
  ** whether the premise (one value at the selected keys) is proven, and
  ** an assumed one's premise where --moves one made it one key */
  if (u->kind == U_HEAD && u->move)
    sb_printf(b, ", \"move\": \"%s\"%s", u->move == RASPF_MOVE_PROVEN ? "proven" : "assumed",
              u->move == RASPF_MOVE_ASSUMED && g->o->moves == RASPG_MOVES_ONE
                  ? ", \"premise\": \"one key\"" : "");
  /* a head the proof sharpened: its scores' factor beyond score_scale */
  if (u->kind == U_HEAD && head_gain(g, u) != 1) sb_printf(b, ", \"gain\": %g", head_gain(g, u));
  /* a table or one-hot where the proof wrote with no hinge on an integer
  ** (FORCE_STEEP) */
  if (u->kind == U_MLP && (u->mkind == M_PAIR || u->mkind == M_WHERE) && g->force && u->node >= 0 &&
      (g->force[u->node] & FORCE_STEEP))
    sb_printf(b, ", \"steep\": true");
  /* fp32, an integer unit proven: how far from its integers its
  ** dimensions (x and x^2) can be when it is written */
  if (u->kind >= U_HEAD && m->precision == RASPG_FP32 && u->kappa == 0 && u->proven &&
      u->ae[0] < 0.5 && u->ae[1] < 0.5)
  {
    sb_printf(b, ", \"deviation\": [%.20f, %.20f]", u->ae[0], u->sq ? u->ae[1] : u->ae[0]); /* (no exponents: the config reader takes plain decimals) */
    /* and exact wherever a dimension's value is nonzero (nz_exact) */
    if (u->nzx) sb_printf(b, ", \"exact_nonzero\": true");
  }
  sb_printf(b, "}");
}

/* The embeddings and layout.readout: the output node, its values, and
** how a reader decodes the logits. */
static void readout_json(gc *g, sbuf *b, const raspG_model *m, int root) {
  sb_printf(b, "\"token_embedding\": \"tokens one-hot (numerical+square: id, id^2); 'one' (dim 1) at every token "
               "but BOS; is_bos (dim 0) at BOS\", \"position_embedding\": \"indices one-hot "
               "of position p-1 at model position p >= 1\", \"readout\": {\"node\": %d, "
               "\"tokens\": %s, \"logit_scale\": %.17g, \"values\": [",
            root, raspF_is_symbolic(g->ir, root) ? "true" : "false", m->logit_scale);
  for (int j = 0; j < m->n_out; j++) {
    if (j) sb_printf(b, ", ");
    sb_elem(b, g->ir, m->out_vals[j]);
  }
  sb_printf(b, "], \"decode\": \"argmax of the logits at model position i+1 is the output at "
               "input position i\"}");
}

/* The vocabulary, so that a reader can encode inputs: vocab[id] is the
** symbol of token id; "" (no symbol is empty) for 0, which is unused, and
** BOS, so that it stays a list of strings; then the symbols compiled as
** inputs (a numerical tokens unit has no dimension per symbol to name
** them). */
static void vocab_json(gc *g, sbuf *b) {
  sb_printf(b, ", \"vocab\": [\"\"");
  for (int t = 1; t <= g->o->nvocab; t++) {
    sb_printf(b, ", ");
    sb_str(b, g->o->token_names[t] ? g->o->token_names[t] : "");
  }
  sb_printf(b, ", \"\"]");
  sb_printf(b, ", \"input_symbols\": [");
  for (int k = 0; k < g->u[0].nvals; k++) {
    int64_t t = g->u[0].vals[k].num;
    sb_printf(b, "%s", k ? ", " : "");
    sb_str(b, t >= 1 && t <= g->o->nvocab && g->o->token_names[t] ? g->o->token_names[t] : "");
  }
  sb_printf(b, "]");
}

/* The plan: the model-wide facts, the dimensions, the units, the readout,
** the vocabulary and the layer norm's construction, in that order. */
char *raspG_layout_json(gc *g, const raspG_model *m, int root, const view *ov) {
  sbuf b = {0};
  sb_printf(&b, "{\"bos_token\": %d, \"input_offset\": 1, \"n\": %d, \"precision\": \"%s\", ",
            m->model.cfg.bos_token, g->n, raspG_precision_name(m->precision));
  proof_json(&b, m);
  arithmetic_json(g, &b, m);
  attention_json(&b, m);
  dims_json(g, &b, m);
  sb_printf(&b, "\"units\": [");
  int first = 1;
  for (int i = 0; i < g->nu; i++) {
    if (!g->u[i].used) continue;
    sb_printf(&b, "%s", first ? "" : ", ");
    first = 0;
    unit_json(g, &b, m, &g->u[i]);
  }
  sb_printf(&b, "], ");
  readout_json(g, &b, m, root);
  if (g->o->token_names) vocab_json(g, &b);
  if (m->model.cfg.layer_norm == RASPN_LN_RMS) {
    sb_printf(&b, ", \"layer_norm\": {\"kind\": \"rms\", \"construction\": \"exact identity\", "
                  "\"eps\": 1e-05, \"value_dims\": %d, \"constants\": [", m->n_dims);
    for (int k = 0; k < m->ln_nc; k++) sb_printf(&b, "%s%d", k ? ", " : "", m->ln_c[k]);
    sb_printf(&b, "], \"const_log2\": %d, \"weight_log2\": %d, \"exact_in\": [%s], "
                  "\"proven\": %s}", m->ln_q, m->ln_q,
              m->ln_f64 ? "\"float32\", \"float64\"" : "\"float32\"", m->ln_proven ? "true" : "false");
  } else if (m->model.cfg.layer_norm && m->ln_stock) {
    sb_printf(&b, ", \"layer_norm\": {\"kind\": \"pre\", \"construction\": \"stock\", "
                  "\"value_dims\": %d, \"balance_dim\": %d, \"sink_dims\": [", m->n_dims, m->n_dims);
    for (int k = 0; k < m->ln_ns; k++) sb_printf(&b, "%s%d", k ? ", " : "", m->n_dims + 1 + k);
    sb_printf(&b, "], \"eps_log2\": %d, \"weight_log2\": %d, \"mean_bound\": %.17g, ",
              2 * m->ln_q, m->ln_q, m->ln_M);
    if (m->ln_bos >= 0) sb_printf(&b, "\"bos_bound\": %.17g, ", m->ln_bos);
    else sb_printf(&b, "\"bos_bound\": null, ");
    sb_printf(&b, "\"scale_exact_in\": [%s], \"proven\": %s}",
              m->ln_f64 ? "\"float32\", \"float64\"" : "\"float32\"", m->ln_proven ? "true" : "false");
  } else if (m->model.cfg.layer_norm)
    sb_printf(&b, ", \"layer_norm\": {\"kind\": \"pre\", \"construction\": \"exact identity\", "
                  "\"value_dims\": %d, \"balance_dim\": %d, \"a\": %d, \"b\": %d, \"const_log2\": %d, "
                  "\"weight_log2\": %d, \"proven\": %s}", m->n_dims, m->n_dims, m->ln_a, m->ln_b, m->ln_s, m->ln_q,
              m->ln_proven ? "true" : "false");
  sb_printf(&b, "}");
  (void)ov;
  return b.s;
}
