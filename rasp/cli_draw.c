/*
** cli_draw.c -- `rasp draw`: a traced program's live dataflow graph, its
** nodes grouped by the sublayer the compiled model computes them in, as
** DOT, JSON, or svg, png and pdf through Graphviz.  The format comes from
** --json, --format, else -o's extension (.dot or .gv, .json, .svg, .png,
** .pdf; another extension is refused rather than written as DOT), else
** DOT.  A path-star program is
** drawn for --D --M or for the D and M of one input of its task (--input,
** as `rasp run` takes it); a plain one for --length (default: --input's
** length, else 8) over its vocabulary.
*/
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "rmem.h"
#include "rverify.h"

static void dot_escape(FILE *f, const char *s) {
  for (; *s; s++) {
    if (*s == '"' || *s == '\\') fputc('\\', f);
    fputc(*s, f);
  }
}

typedef raspC_dgraph dgraph;

static void write_dot(const dgraph *g, const char *name, FILE *f) {
  rasp_ir *ir = g->ir;
  unsigned char *live = raspM_alloc((size_t)ir->nnodes);
  raspI_live(ir, g->roots, g->nroots, live);
  /* the name is the program's file name: any text, so escaped like a label */
  fputs("digraph \"", f);
  dot_escape(f, name);
  fputs("\" {\n  rankdir=TB;\n  node [fontname=\"Helvetica\", fontsize=10];\n", f);
  int maxs = 0;
  for (int i = 0; i < ir->nnodes; i++)
    if (live[i] && g->sublayer[i] > maxs) maxs = g->sublayer[i];
  for (int s = 0; s <= maxs; s++) {
    if (s == 0) fprintf(f, "  subgraph cluster_embed {\n    label=\"embeddings and constants\";\n");
    else fprintf(f, "  subgraph cluster_%d {\n    label=\"layer %d %s\";\n", s, (s + 1) / 2,
                 s % 2 ? "attention" : "MLP");
    for (int i = 0; i < ir->nnodes; i++) {
      const rasp_ir_node *nd = &ir->nodes[i];
      if (!live[i] || g->sublayer[i] != s || nd->op == RASP_OP_FULL) continue;
      rasp_component c = raspI_op_component(nd->op);
      if (c == RASP_COMP_SELECTOR && s != 0) continue;
      const char *shape = c == RASP_COMP_ATTN ? "box" : c == RASP_COMP_SELECTOR ? "diamond" : "ellipse";
      fprintf(f, "    n%d [shape=%s, label=\"", i, shape);
      if (nd->label) {
        dot_escape(f, nd->label);
        fputs("\\n", f);
      }
      fputs(raspI_op_name(nd->op), f);
      if (nd->op == RASP_OP_BINARY) fprintf(f, " %s", raspI_binop_name((rasp_binop)nd->aux));
      if (nd->op == RASP_OP_SELECT) fprintf(f, " %s", raspI_pred_name((rasp_pred)nd->aux));
      /* constants are folded into their users' labels to keep the graph legible */
      for (int k = 0; k < nd->nin; k++)
        if (ir->nodes[nd->in[k]].op == RASP_OP_FULL) {
          char cbuf[64];
          raspI_elem_format(ir, ir->nodes[nd->in[k]].c, cbuf, sizeof cbuf);
          fprintf(f, " [%d]=", k);
          dot_escape(f, cbuf);
        }
      if (nd->pos.src) fprintf(f, "\\nline %d", nd->pos.line);
      fputs("\"];\n", f);
    }
    fputs("  }\n", f);
  }
  /* selectors outside the embedding cluster float next to their heads */
  for (int i = 0; i < ir->nnodes; i++) {
    const rasp_ir_node *nd = &ir->nodes[i];
    if (live[i] && raspI_op_component(nd->op) == RASP_COMP_SELECTOR && g->sublayer[i] != 0)
      fprintf(f, "  n%d [shape=diamond, label=\"%s %s\"];\n", i, raspI_op_name(nd->op),
              nd->op == RASP_OP_SELECT ? raspI_pred_name((rasp_pred)nd->aux) : "");
  }
  for (int i = 0; i < ir->nnodes; i++) {
    if (!live[i]) continue;
    for (int k = 0; k < ir->nodes[i].nin; k++)
      if (ir->nodes[ir->nodes[i].in[k]].op != RASP_OP_FULL)
        fprintf(f, "  n%d -> n%d;\n", ir->nodes[i].in[k], i);
  }
  fputs("}\n", f);
  raspM_free(live);
}

/* The graph as one JSON object: every live node (constants too, with their
** value) with its op, label, sublayer, transformer layer (0: embeddings and
** constants) and source line, and every edge between live nodes. */
static void write_json(const dgraph *g, const char *name, FILE *f) {
  rasp_ir *ir = g->ir;
  unsigned char *live = raspM_alloc((size_t)ir->nnodes);
  raspI_live(ir, g->roots, g->nroots, live);
  fputs("{\"program\":\"", f);
  raspC_json_fputs(name, f);
  fputs("\",\"outputs\":[", f);
  for (int r = 0; r < g->nroots; r++) fprintf(f, "%s%d", r ? "," : "", g->roots[r]);
  fputs("],\"nodes\":[", f);
  int first = 1;
  for (int i = 0; i < ir->nnodes; i++) {
    if (!live[i]) continue;
    const rasp_ir_node *nd = &ir->nodes[i];
    int s = g->sublayer[i] < 0 ? 0 : g->sublayer[i];
    fprintf(f, "%s{\"id\":%d,\"op\":\"%s\"", first ? "" : ",", i, raspI_op_name(nd->op));
    first = 0;
    if (nd->op == RASP_OP_BINARY) fprintf(f, ",\"binop\":\"%s\"", raspI_binop_name((rasp_binop)nd->aux));
    if (nd->op == RASP_OP_SELECT) fprintf(f, ",\"predicate\":\"%s\"", raspI_pred_name((rasp_pred)nd->aux));
    if (nd->op == RASP_OP_FULL) {
      char cbuf[64];
      raspI_elem_format(ir, nd->c, cbuf, sizeof cbuf);
      fputs(",\"value\":\"", f);
      raspC_json_fputs(cbuf, f);
      fputc('"', f);
    }
    if (nd->label) {
      fputs(",\"label\":\"", f);
      raspC_json_fputs(nd->label, f);
      fputc('"', f);
    }
    fprintf(f, ",\"sublayer\":%d,\"layer\":%d", s, (s + 1) / 2);
    if (nd->pos.src) fprintf(f, ",\"line\":%d", nd->pos.line);
    fputc('}', f);
  }
  fputs("],\"edges\":[", f);
  first = 1;
  for (int i = 0; i < ir->nnodes; i++) {
    if (!live[i]) continue;
    for (int k = 0; k < ir->nodes[i].nin; k++) {
      fprintf(f, "%s[%d,%d]", first ? "" : ",", ir->nodes[i].in[k], i);
      first = 0;
    }
  }
  fputs("]}\n", f);
  raspM_free(live);
}

/* svg, png and pdf through Graphviz, with no shell and no predictable file name:
** dot reads the DOT text from an unnamed temporary file and writes to a
** fresh mkstemp file beside out (raspR_atomic_open), renamed over out only
** when dot succeeded.  The exit status for rasp_cli_draw. */
static int render(const char *format, const char *out, const char *text, size_t len) {
  rasp_error err = {0};
  FILE *in = tmpfile();
  if (!in || fwrite(text, 1, len, in) != len || fflush(in) != 0 ||
      lseek(fileno(in), 0, SEEK_SET) != 0) {
    fprintf(stderr, "rasp draw: cannot write a temporary file: %s\n", strerror(errno));
    if (in) fclose(in);
    return 2;
  }
  rasp_afile af;
  if (!raspR_atomic_open(&af, out, &err)) {
    raspR_print(&err, stderr);
    fclose(in);
    return raspR_exit_status(&err);
  }
  char type[16];
  snprintf(type, sizeof type, "-T%s", format);
  const char *argv[] = {"dot", type, NULL};
  int status = 0;
  if (!raspR_spawn(argv, fileno(in), fileno(af.f), &err)) {
    int missing = errno == ENOENT;
    fprintf(stderr, "rasp draw: %s%s\n", err.msg,
            missing ? " (Debian: apt-get install graphviz); use --format dot" : "");
    raspR_atomic_abort(&af);
    status = missing ? 2 : 1;
  } else if (!raspR_atomic_commit(&af, &err)) {
    raspR_print(&err, stderr);
    status = raspR_exit_status(&err);
  }
  fclose(in);
  return status;
}

const char *raspC_draw_format(int json, const char *format, const char *out_file) {
  static const char *const known[] = {"dot", "svg", "png", "pdf", "json", NULL};
  if (json) {
    if (format && strcmp(format, "json")) {
      fprintf(stderr, "rasp draw: --json does not combine with --format %s\n", format);
      return NULL;
    }
    return "json";
  }
  if (format) {
    for (int i = 0; known[i]; i++)
      if (strcmp(format, known[i]) == 0) return known[i];
    fprintf(stderr, "rasp draw: --format: expected dot, svg, png, pdf or json, got '%s'\n",
            format);
    return NULL;
  }
  const char *dot = out_file ? strrchr(out_file, '.') : NULL;
  if (dot && !strchr(dot, '/')) {
    if (strcmp(dot, ".gv") == 0) return "dot";
    for (int i = 0; known[i]; i++)
      if (strcmp(dot + 1, known[i]) == 0) return known[i];
    /* a file named .jpg holding DOT text would mislead */
    fprintf(stderr, "rasp draw: -o %s: an extension draw does not write (.dot, .gv, .json, "
                    ".svg, .png, .pdf); --format dot writes DOT under any name\n", out_file);
    return NULL;
  }
  return "dot";
}

int raspC_draw_write(const raspC_dgraph *g, const char *name, const char *format,
                     const char *out_file) {
  rasp_error err = {0};
  int status = 0;
  char *text = NULL;
  size_t len = 0;
  FILE *mem = open_memstream(&text, &len);
  if (strcmp(format, "json") == 0) write_json(g, name, mem);
  else write_dot(g, name, mem);
  fclose(mem);
  if (strcmp(format, "dot") == 0 || strcmp(format, "json") == 0) {
    if (out_file) {
      if (!raspR_write_file(out_file, text, len, &err)) {
        raspR_print(&err, stderr);
        status = raspR_exit_status(&err);
      }
    } else {
      fwrite(text, 1, len, stdout);
    }
  } else if (!out_file) {
    fprintf(stderr, "rasp draw: --format %s needs -o FILE\n", format);
    status = 2;
  } else {
    status = render(format, out_file, text, len);
  }
  free(text);
  return status;
}

int rasp_cli_draw(int argc, char **argv) {
  raspC_vopts o;
  raspC_vopts_init(&o, argc);
  int parsed = raspC_vopts_parse(RASPC_DRAW, "draw", argc, argv, &o);
  if (parsed <= 0) {
    raspC_vopts_free(&o);
    return parsed == 0 ? 0 : 2;
  }
  const char *format = raspC_draw_format(o.json, o.format, o.out_file);
  if (!format) {
    raspC_vopts_free(&o);
    return 2;
  }
  if (o.nprograms > 1) {
    fprintf(stderr, "rasp draw: one program at a time, got '%s' too\n", o.programs[1]);
    raspC_vopts_free(&o);
    return 2;
  }
  int D = o.nD ? o.Ds[0] : 2, M = o.nM ? o.Ms[0] : 5;
  rasp_program prog;
  rasp_error err = {0};
  rasp_ptrace tr;
  memset(&tr, 0, sizeof tr);
  rasp_ctx *ctx = NULL; /* a plain program's */
  rasp_layers L;
  memset(&L, 0, sizeof L);
  char **vocab = NULL, *name = NULL;
  int nvocab = 0, status = 0;
  dgraph g;
  if (raspK_load_with(o.programs[0], o.stdlib, &o.access, D, M, (int)o.V, &prog, &err)) {
    if (!raspC_task_opts_only("draw", &o, prog.name, 1)) {
      status = 2;
      goto out;
    }
    if (o.input) { /* one input of the task (as rasp run takes it): its D and M */
      rasp_input in;
      if (o.nD || o.nM) {
        fprintf(stderr, "rasp draw: --input gives D and M (from its graph); it does not combine "
                        "with %s\n", o.nD ? "--D" : "--M");
        status = 2;
        goto out;
      }
      if ((status = raspC_task_input("draw", &prog, (int)o.V, o.input, &in))) goto out;
      D = in.D;
      M = in.M;
      raspK_input_free(&in);
    }
    if (!raspK_trace(&prog, D, M, (int)o.V, &tr, &err)) {
      raspR_print(&err, stderr);
      status = 1; /* as verify: the program fails at this size */
      goto out;
    }
    g = (dgraph){rasp_ctx_ir(tr.ctx), &tr.output, 1, tr.layers.sublayer};
  } else {
    if (!raspC_is_plain(&err)) {
      raspR_print(&err, stderr);
      status = raspR_exit_status(&err); /* an error in the program, or usage */
      goto out;
    }
    if (!raspC_plain_opts_only("draw", &o, o.programs[0])) {
      status = 2;
      goto out;
    }
    int input_len;
    if ((nvocab = raspC_plain_vocab("draw", &o, &vocab, &input_len)) < 0) {
      status = 2;
      goto out;
    }
    int n = o.nL ? o.Ls[0] : input_len ? input_len : 8;
    if (!(ctx = raspC_plain_trace(&o, o.programs[0], vocab, nvocab, n, &err))) {
      raspR_print(&err, stderr);
      status = raspR_exit_status(&err);
      goto out;
    }
    rasp_ir *ir = rasp_ctx_ir(ctx);
    raspC_compiled_layers(ctx, -1, &L);
    g = (dgraph){ir, ir->outputs, ir->noutputs, L.sublayer};
    name = raspC_plain_name(o.programs[0]);
  }
  status = raspC_draw_write(&g, name ? name : prog.name, format, o.out_file);
out:
  if (ctx) {
    raspL_free(&L);
    rasp_ctx_free(ctx);
  } else if (tr.ctx) {
    raspK_trace_free(&tr);
  }
  raspK_program_free(&prog);
  if (vocab) raspC_free_strings(vocab, nvocab);
  raspM_free(name);
  raspC_vopts_free(&o);
  return status;
}

