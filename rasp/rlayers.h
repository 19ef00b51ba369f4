/*
** rlayers.h -- how many transformer layers and heads a traced program needs.
**
** The rule (also in README.md): a transformer layer is an attention sublayer
** followed by an MLP sublayer.  Number the sublayers 1, 2, 3, ... (odd:
** attention of layer (s+1)/2, even: MLP of layer s/2).  Embeddings and
** constants are available at sublayer 0.  Each live node is scheduled as
** early as possible:
**   - ATTN node (aggregate, sel_width): the smallest odd sublayer strictly
**     after all of its inputs, including the keys and queries of its
**     selector (selector nodes themselves take no sublayer; a selector is
**     ready when its keys and queries are).  Each is one head.
**   - MLP node (element-wise): the smallest even sublayer that is >= 2 and
**     >= every input's sublayer, and > every attention input's sublayer.
**     Element-wise chains therefore fuse into one MLP sublayer.
** Independent heads share a layer; the number of heads of a layer is the
** number of ATTN nodes scheduled in its attention sublayer.
**
** That is the IR rule.  The compiled model's schedule (raspG_schedule in
** rcompile.h) can differ: copies of one head are one head (CSE), heads that
** read no token are views (no head, no layer), and a numerical unit read by
** a select, a where's condition or the readout needs a decode (an MLP
** sublayer the IR rule does not count).  raspL_analyse_compiled reports the
** compiler's schedule, so `rasp layers` prints the layers the compiled model
** has, and falls back to the IR rule, with the compiler's reason, for a
** program the compiler refuses.
*/
#ifndef RASP_RLAYERS_H
#define RASP_RLAYERS_H

#include "rir.h"

typedef struct rasp_layers {
  int *sublayer;      /* per node (ir->nnodes); -1 for nodes not live; the
                         compiler's when compiled, else the IR rule's */
  int nlayers;        /* transformer layers: ceil(max sublayer / 2) */
  int attn_layers;    /* layers whose attention sublayer has >= 1 head */
  int mlp_layers;     /* layers whose MLP sublayer has >= 1 node */
  int *heads;         /* heads[l] for l in 0..nlayers-1 */
  int *mlps;          /* element-wise nodes in layer l's MLP */
  int total_heads;     /* heads after CSE when compiled, else as written */
  int written_heads;   /* heads as written: ATTN nodes (the IR rule) */
  int ir_layers;       /* the IR rule's layer count */
  int compiled;        /* 1: the counts are the compiler's schedule */
  int decodes;         /* compiled: MLP units decoding a number (rcompile.h) */
  int chained;         /* compiled: MLP units reading an MLP unit (rcompile.h) */
  char why[200];       /* not compiled: the compiler's reason */
} rasp_layers;

/* Analyses the nodes reachable from roots (all outputs when roots is NULL). */
void raspL_analyse(const rasp_ir *ir, const int *roots, int nroots,
                   rasp_layers *out);
/* The compiled model's schedule for root (what `rasp compile` builds for
** the token ids ids[0..nids-1] of a vocabulary of nvocab), sublayer[]
** included: each node's in the compiled model (raspG_sched's: a node read
** decoded sits at its decode's sublayer), which `rasp draw` and the
** verifier's counterexamples show.  When the compiler refuses, the IR rule
** with compiled = 0 and the reason in why. */
void raspL_analyse_compiled(const rasp_ir *ir, int root, const int64_t *ids, int nids,
                            int nvocab, rasp_layers *out);
void raspL_free(rasp_layers *layers);
/* "3 layers (3 attention, 2 MLP); heads per layer: 2 1 1", then for a
** compiled schedule "; the compiled model's (the IR rule: ...)" and for a
** refused one "; the IR rule (the compiler refuses: ...)" (why) */
void raspL_print(const rasp_layers *layers, FILE *out);

#endif
