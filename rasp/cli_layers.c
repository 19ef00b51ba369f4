/*
** cli_layers.c -- `rasp layers`: the compiled model's layer count and heads
** per layer, per M (a path-star program, traced for --D --M --V) or per
** input length (a plain program, over the vocabulary of --input-vocab,
** --vocab or --input), and how the count grows: constant, linear or
** logarithmic, whichever least-squares line fits better.  The schedule is
** the compiler's planner's (raspC_compiled_layers, raspK_trace), the IR
** rule's with its reason where the compiler refuses.  --json writes one
** object per row and one for the growth.
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "rmem.h"
#include "rverify.h"

/* Least-squares fit of y on x; returns the residual sum of squares. */
static double fit_sse(const double *x, const double *y, int n, double *slope) {
  double mx = 0, my = 0, sxx = 0, sxy = 0, sse = 0;
  for (int i = 0; i < n; i++) mx += x[i], my += y[i];
  mx /= n;
  my /= n;
  for (int i = 0; i < n; i++) sxx += (x[i] - mx) * (x[i] - mx), sxy += (x[i] - mx) * (y[i] - my);
  double b = sxx > 0 ? sxy / sxx : 0;
  for (int i = 0; i < n; i++) {
    double r = y[i] - (my + b * (x[i] - mx));
    sse += r * r;
  }
  *slope = b;
  return sse;
}

/* One row of `rasp layers`: x is M (path-star) or the length (plain).  The
** layers and heads are the compiled model's (heads after CSE), "ir" the IR
** rule's layer count, "written" the heads as written, "chained" the MLP
** units that read another MLP unit (one MLP sublayer each, where the IR rule
** fuses element-wise chains), "decodes" those that decode a number for a
** select, a condition or the readout. */
static void layers_row(const raspC_vopts *o, const char *name, int plain, int D, int x, int n,
                       const rasp_layers *L) {
  if (o->json) {
    printf("{\"program\":\"");
    raspC_json_fputs(name, stdout);
    if (plain) printf("\",\"length\":%d", x);
    else printf("\",\"D\":%d,\"M\":%d", D, x);
    printf(",\"n\":%d,\"layers\":%d,\"attention_layers\":%d,\"mlp_layers\":%d,\"heads\":[", n,
           L->nlayers, L->attn_layers, L->mlp_layers);
    for (int l = 0; l < L->nlayers; l++) printf("%s%d", l ? "," : "", L->heads[l]);
    printf("],\"schedule\":\"%s\",\"ir_layers\":%d,\"heads_total\":%d,"
           "\"heads_written\":%d,\"chained\":%d,\"decodes\":%d",
           L->compiled ? "compiled" : "ir", L->ir_layers, L->total_heads, L->written_heads,
           L->chained, L->decodes);
    if (!L->compiled) {
      printf(",\"why\":\"");
      raspC_json_fputs(L->why, stdout);
      printf("\"");
    }
    printf("}\n");
    return;
  }
  char heads[1024];
  raspC_heads_text(L, heads, sizeof heads);
  if (plain) printf("%6d", x);
  else printf("%5d %5d", x, n);
  printf(" %7d %4d %5d %5d %5d %7d %7d %7d  %s\n", L->nlayers, L->ir_layers, L->attn_layers,
         L->mlp_layers, L->total_heads, L->written_heads, L->chained, L->decodes, heads);
  if (!L->compiled) printf("  (IR rule: %s)\n", L->why);
}

/* The growth of the layer count ys over xs (M or n): constant, linear or
** logarithmic, whichever least-squares line fits better. */
static void layers_growth(const raspC_vopts *o, const char *name, const char *var, const double *xs,
                          const double *ys, int k) {
  double *ls = raspM_alloc(sizeof(double) * (size_t)k);
  for (int i = 0; i < k; i++) ls[i] = log2(xs[i]);
  double lo = ys[0], hi = ys[0];
  for (int i = 0; i < k; i++) lo = ys[i] < lo ? ys[i] : lo, hi = ys[i] > hi ? ys[i] : hi;
  double slin, slog;
  double elin = fit_sse(xs, ys, k, &slin), elog = fit_sse(ls, ys, k, &slog);
  const char *kind = hi == lo ? "constant" : elin <= elog ? "linear" : "logarithmic";
  if (o->json) {
    printf("{\"program\":\"");
    raspC_json_fputs(name, stdout);
    printf("\",\"growth\":\"%s\",\"in\":\"%s\",\"min_layers\":%g,\"max_layers\":%g", kind, var,
           lo, hi);
    if (hi != lo)
      printf(",\"layers_per_unit\":%.4f,\"layers_per_doubling\":%.4f,\"residual_linear\":%.4f,"
             "\"residual_log\":%.4f", slin, slog, elin, elog);
    printf("}\n");
  } else if (hi == lo) {
    printf("growth: constant (%g layers for every %s)\n", lo, var);
  } else if (elin <= elog) {
    printf("growth: linear in %s (about %.2f layers per unit of %s; residual %.2f vs %.2f for "
           "log %s)\n", var, slin, var, elin, elog, var);
  } else {
    printf("growth: logarithmic in %s (about %.2f layers per doubling of %s; residual %.2f vs "
           "%.2f for %s)\n", var, slog, var, elog, elin, var);
  }
  raspM_free(ls);
}

int rasp_cli_layers(int argc, char **argv) {
  raspC_vopts o;
  raspC_vopts_init(&o, argc);
  int parsed = raspC_vopts_parse(RASPC_LAYERS, "layers", argc, argv, &o);
  if (parsed <= 0) {
    raspC_vopts_free(&o);
    return parsed == 0 ? 0 : 2;
  }
  if (!o.nM) raspC_range("layers", "--M", "3..33", 2, 100, &o.Ms, &o.nM);
  int D = o.nD ? o.Ds[0] : 2;
  int status = 0;
  char **vocab = NULL;
  int nvocab = 0, input_len = 0;
  for (int p = 0; p < o.nprograms; p++) {
    rasp_program prog;
    rasp_error err = {0};
    int plain = 0;
    char *name = NULL;
    if (!raspK_load_with(o.programs[p], o.stdlib, &o.access, D, o.Ms[0], (int)o.V, &prog, &err)) {
      raspK_program_free(&prog);
      if (!raspC_is_plain(&err)) {
        raspR_print(&err, stderr);
        if (status != 2) status = raspR_exit_status(&err); /* an error in the program, or usage */
        continue;
      }
      if (!raspC_plain_opts_only("layers", &o, o.programs[p])) {
        status = 2;
        break;
      }
      if (!vocab && (nvocab = raspC_plain_vocab("layers", &o, &vocab, &input_len)) < 0) {
        status = 2;
        break;
      }
      if (!o.nL) {
        if (input_len) raspC_range("layers", "--length", "1", 1, 1, &o.Ls, &o.nL), o.Ls[0] = input_len;
        else raspC_range("layers", "--length", "1..16", 1, 16, &o.Ls, &o.nL);
      }
      plain = 1;
      name = raspC_plain_name(o.programs[p]);
    }
    if (!plain && !raspC_task_opts_only("layers", &o, prog.name, 0)) {
      raspK_program_free(&prog);
      status = 2;
      break;
    }
    const char *pname = plain ? name : prog.name;
    const int *xs_in = plain ? o.Ls : o.Ms;
    int nx = plain ? o.nL : o.nM;
    if (o.json) {
      /* rows only */
    } else if (plain) {
      printf("%s\n%6s %7s %4s %5s %5s %5s %7s %7s %7s  %s\n", pname, "n", "layers", "ir", "attn",
             "mlp", "heads", "written", "chained", "decodes", "heads per layer");
    } else {
      printf("%s (D=%d)\n%5s %5s %7s %4s %5s %5s %5s %7s %7s %7s  %s\n", pname, D, "M", "n",
             "layers", "ir", "attn", "mlp", "heads", "written", "chained", "decodes",
             "heads per layer");
    }
    double *xs = raspM_alloc(sizeof(double) * (size_t)nx), *ys = raspM_alloc(sizeof(double) * (size_t)nx);
    int k = 0;
    for (int xi = 0; xi < nx; xi++) {
      int x = xs_in[xi];
      err.set = 0;
      if (plain) {
        rasp_ctx *ctx = raspC_plain_trace(&o, o.programs[p], vocab, nvocab, x, &err);
        if (!ctx) {
          raspR_print(&err, stderr);
          status = raspR_exit_status(&err);
          break; /* the same error at every length */
        }
        rasp_layers L;
        raspC_compiled_layers(ctx, -1, &L);
        layers_row(&o, pname, 1, D, x, x, &L);
        ys[k] = L.nlayers;
        raspL_free(&L);
        rasp_ctx_free(ctx);
      } else {
        if (x < prog.min_M) continue;
        rasp_ptrace tr;
        if (!raspK_trace(&prog, D, x, (int)o.V, &tr, &err)) {
          raspR_print(&err, stderr);
          status = 1; /* as verify: the program fails at this size */
          continue;
        }
        layers_row(&o, pname, 0, D, x, tr.n, &tr.layers); /* compiled (raspK_trace) */
        ys[k] = tr.layers.nlayers;
        raspK_trace_free(&tr);
      }
      xs[k++] = x;
    }
    if (k >= 2) layers_growth(&o, pname, plain ? "n" : "M", xs, ys, k);
    fflush(stdout);
    raspM_free(xs);
    raspM_free(ys);
    raspM_free(name);
    if (!plain) raspK_program_free(&prog);
  }
  if (vocab) raspC_free_strings(vocab, nvocab);
  raspC_vopts_free(&o);
  return status;
}
