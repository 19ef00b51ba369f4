/*
** tinit.h -- compiled models as initialisation (rasp-train --init): their
** readout adapted to the trainer's ids, and --widen, which embeds one in a
** wider model.  Both keep the compiled circuit exact: what changes is only
** how its outputs are read, or capacity added beside it.
*/
#ifndef RASP_TINIT_H
#define RASP_TINIT_H

#include "rmodel.h"
#include "rtask.h"

/* A compiled model (rcompile.h; cfg.bos_token >= 0 and a layout in
** json_extra) reads [BOS, t_0, ..., t_{n-1}] and its logit j at model
** position i+1 means the value out_vals[j] (layout.readout.values) of the
** program's output at input position i.  train_adapt_compiled makes such a
** model a predictor over the trainer's ids, position for position:
**   - checks that every token id the task can write (nodes 1..V, the
**     specials it uses) has the compiled model's one-hot dimension named
**     "tokens=<text>" (so trainer id = compiled input id);
**   - decoder (encoder = 0; T = the model's tokens, the sequence less its
**     last): the model must be causal and long enough (max_len >= T + 1,
**     BOS included); it predicts the next token, so its output at input
**     position i is read as the prediction of token i + 1 (a readout
**     program puts l_t where the answer's s is);
**   - encoder (encoder = 1; T = the whole sequence): the model must have
**     the mask token train_mask_id() among its inputs ("tokens=MASK", as
**     `rasp compile --encoder` makes it) and, unless causal, exactly
**     max_len = T + 1 (a non-causal model computes for its own length
**     only); its output at input position i is the prediction of token i
**     itself, which the encoder sees as MASK (a readout program for it puts
**     l_t where the answer's l_t is: programs/encoder*.rasp);
**   - replaces the readout by unembed [d_model, n_out]: column v is the
**     compiled column j with out_vals[j] == v, bias likewise; ids the
**     compiled model never outputs get weight 0 and bias `floor`
**     (callers pass a value below the compiled logits' range, so the
**     argmax is unchanged wherever the compiled argmax is a token id);
**   - keeps everything else (no layer norm, widths, heads, bos_token) and
**     drops the layout (the readout no longer matches it).
** 1, or 0 with err saying what does not fit. */
int train_is_compiled(const rasp_model *m);
int train_adapt_compiled(rasp_model *m, const char *name,
                         const rasp_task_opts *task, int encoder, int n_out,
                         int T, float floor, rasp_error *err);
/* The encoder's mask token: V + 8, the first id after the task's own
** (rtask.h), so vocab_size = V + 9 for encoder objectives. */
int train_mask_id(const rasp_task_opts *task);
/* The compiled readout's values as integers (non-integers as INT32_MIN);
** *nvals gets their count.  NULL (err set) when the layout has none. */
int *train_compiled_out_vals(const rasp_model *m, int *nvals, rasp_error *err);

/* --widen K: embeds the model (no layer norm) in a wider one with K more
** residual dimensions, ceil(K / d_head) more heads per layer and 4K more
** MLP units, so that the old circuit is intact and its outputs unchanged:
** old heads and units read only the old dimensions, new heads and units
** write only the new ones, the readout reads only the old ones (zeros);
** every other new weight is N(0, scale^2), new biases 0.  *mask (nparams
** bytes, raspM_free it) marks the entries copied from the old model
** TRAIN_WIDEN_COMPILED and the "wires" TRAIN_WIDEN_WIRE: the zeros through
** which added capacity would reach the compiled dimensions (old heads' and
** units' reads of the new dimensions, new heads' and units' writes to the
** old ones).  While the compiled entries and the wires keep their values
** (--freeze compiled), the compiled dimensions of the residual stream are
** exactly the compiled model's at every layer, however the rest trains;
** added capacity reaches the logits through the readout's new rows.  Other
** entries are 0.  1, or 0 with err (the model unchanged). */
enum { TRAIN_WIDEN_NEW = 0, TRAIN_WIDEN_COMPILED = 1, TRAIN_WIDEN_WIRE = 2 };
int train_widen(rasp_model *m, int K, float scale, uint64_t seed,
                unsigned char **mask, rasp_error *err);

#endif
