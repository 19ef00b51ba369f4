/*
** rlayers.c -- scheduling live nodes onto transformer sublayers.
**
** The rule is in rlayers.h.  Nodes are in topological order, so one forward
** pass computes every node's earliest sublayer from its operands'.
** raspL_analyse_compiled asks the compiler's planner (rcompile.h) instead:
** one schedule, per node too, for `rasp layers`, `rasp draw`, the
** verifier's counterexamples and the compiled model.
*/
#include "rlayers.h"

#include <stdio.h>
#include <string.h>

#include "rcompile.h"

#include "rmem.h"

static int odd_after(int s) { return (s % 2) ? s + 2 : s + 1; }
static int even_from(int s) { return (s % 2) ? s + 1 : s; }

static void count_layers(rasp_layers *out) {
  out->attn_layers = out->mlp_layers = 0;
  for (int l = 0; l < out->nlayers; l++) {
    out->attn_layers += out->heads[l] > 0;
    out->mlp_layers += out->mlps[l] > 0;
  }
}

void raspL_analyse(const rasp_ir *ir, const int *roots, int nroots,
                   rasp_layers *out) {
  if (!roots) {
    roots = ir->outputs;
    nroots = ir->noutputs;
  }
  int nn = ir->nnodes;
  unsigned char *live = raspM_alloc((size_t)nn + 1);
  raspI_live(ir, roots, nroots, live);
  out->sublayer = raspM_alloc(((size_t)nn + 1) * sizeof *out->sublayer);
  int maxsub = 0;
  for (int i = 0; i < nn; i++) {
    out->sublayer[i] = -1;
    if (!live[i]) continue;
    const rasp_ir_node *nd = &ir->nodes[i];
    rasp_component comp = raspI_op_component(nd->op);
    int s = 0;
    switch (comp) {
    case RASP_COMP_EMBED:
    case RASP_COMP_CONST: s = 0; break;
    case RASP_COMP_SELECTOR:
      /* Not a sublayer: the sublayer at which its keys and queries are
         ready, which the head that uses it must come strictly after. */
      for (int j = 0; j < nd->nin; j++)
        if (out->sublayer[nd->in[j]] > s) s = out->sublayer[nd->in[j]];
      break;
    case RASP_COMP_ATTN: {
      int m = 0;
      for (int j = 0; j < nd->nin; j++)
        if (out->sublayer[nd->in[j]] > m) m = out->sublayer[nd->in[j]];
      s = odd_after(m);
      break;
    }
    case RASP_COMP_MLP: {
      int m = 2;
      for (int j = 0; j < nd->nin; j++) {
        int in = nd->in[j], t = out->sublayer[in];
        if (raspI_op_component(ir->nodes[in].op) == RASP_COMP_ATTN) t++;
        if (t > m) m = t;
      }
      s = even_from(m);
      break;
    }
    }
    out->sublayer[i] = s;
    if (comp == RASP_COMP_ATTN || comp == RASP_COMP_MLP)
      if (s > maxsub) maxsub = s;
  }
  out->nlayers = (maxsub + 1) / 2;
  out->heads = raspM_alloc(((size_t)out->nlayers + 1) * sizeof *out->heads);
  out->mlps = raspM_alloc(((size_t)out->nlayers + 1) * sizeof *out->mlps);
  out->total_heads = 0;
  for (int i = 0; i < nn; i++) {
    if (!live[i]) continue;
    rasp_component comp = raspI_op_component(ir->nodes[i].op);
    int s = out->sublayer[i];
    if (comp == RASP_COMP_ATTN) {
      out->heads[(s - 1) / 2]++;
      out->total_heads++;
    } else if (comp == RASP_COMP_MLP) {
      out->mlps[s / 2 - 1]++;
    }
  }
  out->written_heads = out->total_heads;
  out->ir_layers = out->nlayers;
  out->compiled = out->decodes = out->chained = 0;
  out->why[0] = 0;
  count_layers(out);
  raspM_free(live);
}

void raspL_analyse_compiled(const rasp_ir *ir, int root, const int64_t *ids, int nids,
                            int nvocab, rasp_layers *out) {
  raspL_analyse(ir, &root, 1, out);
  /* the planner alone (by size: cheap), not `rasp compile`'s proof-driven
  ** compile, which would write and prove every model the verifier's cells
  ** count: the proof's forms (steep tests, exact erasers, quantized
  ** widths, sharper heads) change widths and dimensions, not layers or
  ** heads; only a node the proof makes one-hot can (layers_compiled.sh
  ** holds the two to the same counts on programs/ and examples/) */
  raspG_opts o = {ids, nids, nvocab, NULL, 0, RASPG_FP32, RASPG_ENC_AUTO, 1, RASPG_MOVES_ASSUME, 0, 0, 0};
  raspG_sched s;
  rasp_error err = {0};
  if (!raspG_schedule(ir, &o, &s, &err)) {
    static const char pre[] = "the compiler refuses: ";
    size_t k = strlen(err.msg);
    if (k >= sizeof out->why - sizeof pre) k = sizeof out->why - sizeof pre; /* cut */
    memcpy(out->why, pre, sizeof pre - 1);
    memcpy(out->why + sizeof pre - 1, err.msg, k);
    out->why[sizeof pre - 1 + k] = 0;
    return;
  }
  raspM_free(out->heads);
  raspM_free(out->mlps);
  raspM_free(out->sublayer);
  out->sublayer = s.sublayer;
  out->nlayers = s.nlayers;
  out->heads = s.heads;
  out->mlps = s.mlps;
  out->total_heads = s.total_heads;
  out->decodes = s.decodes;
  out->chained = s.chained;
  out->compiled = 1;
  count_layers(out);
}

void raspL_free(rasp_layers *layers) {
  raspM_free(layers->sublayer);
  raspM_free(layers->heads);
  raspM_free(layers->mlps);
  layers->sublayer = layers->heads = layers->mlps = NULL;
  layers->nlayers = layers->attn_layers = layers->mlp_layers = 0;
  layers->total_heads = 0;
}

void raspL_print(const rasp_layers *layers, FILE *out) {
  fprintf(out, "%d layers (%d attention, %d MLP); heads per layer:",
          layers->nlayers, layers->attn_layers, layers->mlp_layers);
  for (int l = 0; l < layers->nlayers; l++) fprintf(out, " %d", layers->heads[l]);
  if (layers->compiled)
    fprintf(out, "; the compiled model's (the IR rule: %d layers, %d heads as written; "
                 "%d MLP units read another MLP unit, %d decode a number)", layers->ir_layers,
            layers->written_heads, layers->chained, layers->decodes);
  else if (layers->why[0])
    fprintf(out, "; the IR rule (%s)", layers->why);
  fputc('\n', out);
}
