/*
** rffi.c -- calling C functions from programs, through libffi.
**
**     cbrt = cfunc('libm.so.6', 'cbrt', 'double(double)')
**     y = tok_map(x, cbrt)
**
** A signature is "RET(ARG, ...)" with types int, long (64-bit) and double.
** Integers cross exactly; a double argument is the nearest double to the
** exact number, and a double result is converted back exactly (every finite
** double is a rational), so rounding happens only inside the C function.
**
** cfunc() is refused unless the context allows it (rasp_access in rasp.h):
** a program that binds C functions is native code -- `system` is in libc --
** and programs are passed around, so running one must not mean trusting it.
** Nothing here can contain a C function that crashes or calls exit().
*/
#include <dlfcn.h>
#include <ffi.h>
#include <math.h>
#include <string.h>

#include "rffi.h"
#include "rinterp_int.h"

enum { CT_INT, CT_LONG, CT_DOUBLE };
#define CF_MAXARGS 8

struct rasp_cfunc {
  ffi_cif cif;
  ffi_type *argtypes[CF_MAXARGS];
  int ret, args[CF_MAXARGS], nargs;
  void (*fn)(void);
  char name[64];
};

static int parse_type(const char *s, size_t len) {
  while (len && (*s == ' ')) s++, len--;
  while (len && s[len - 1] == ' ') len--;
  if (len == 3 && memcmp(s, "int", 3) == 0) return CT_INT;
  if (len == 4 && memcmp(s, "long", 4) == 0) return CT_LONG;
  if (len == 7 && memcmp(s, "int64_t", 7) == 0) return CT_LONG;
  if (len == 6 && memcmp(s, "double", 6) == 0) return CT_DOUBLE;
  return -1;
}

static ffi_type *ffi_of(int t) {
  return t == CT_INT ? &ffi_type_sint : t == CT_LONG ? &ffi_type_sint64 : &ffi_type_double;
}

value *raspD_bind(rasp_ctx *ctx, value **args, int nargs, rasp_pos pos) {
  if (!ctx->reach.allow_ffi)
    raspV_raise(ctx, RASP_E_FFI_REFUSED, pos, "cfunc() is off: a C function can do anything this process can "
                          "(run a shell, write files); run with --allow-ffi to allow it "
                          "(RASP_ALLOW_FFI=1 for the REPL)");
  if (nargs != 3 || args[0]->kind != V_STR || args[1]->kind != V_STR || args[2]->kind != V_STR)
    raspV_error(ctx, pos, "cfunc(library, symbol, signature) takes three strings");
  const char *lib = args[0]->u.str.s, *sym = args[1]->u.str.s, *sig = args[2]->u.str.s;
  rasp_cfunc cf;
  memset(&cf, 0, sizeof cf);
  const char *open = strchr(sig, '('), *close = strrchr(sig, ')');
  if (!open || !close || close < open || close[1] != '\0' ||
      (cf.ret = parse_type(sig, (size_t)(open - sig))) < 0)
    raspV_error(ctx, pos, "bad C signature '%s': expected e.g. 'double(double)' with types "
                          "int, long, double", sig);
  const char *p = open + 1;
  const char *q = p;
  while (q < close && *q == ' ') q++;
  if (q == close || (close - q >= 4 && memcmp(q, "void", 4) == 0 &&
                     parse_type(q, (size_t)(close - q)) < 0 && q[4] != ','))
    p = close; /* "()" or "(void)": no arguments */
  while (p < close) {
    const char *comma = memchr(p, ',', (size_t)(close - p));
    const char *end = comma ? comma : close;
    if (cf.nargs >= CF_MAXARGS) raspV_error(ctx, pos, "bad C signature '%s': too many arguments", sig);
    int t = parse_type(p, (size_t)(end - p));
    if (t < 0) raspV_error(ctx, pos, "bad C signature '%s': unknown argument type", sig);
    cf.args[cf.nargs] = t;
    cf.argtypes[cf.nargs] = ffi_of(t);
    cf.nargs++;
    p = end + 1;
  }
  void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  if (!h) raspV_error(ctx, pos, "cannot load library '%s': %s", lib, dlerror());
  RASP_GROW(ctx->reach.dl_handles, ctx->reach.dlcap, ctx->reach.ndl + 1);
  ctx->reach.dl_handles[ctx->reach.ndl++] = h;
  dlerror();
  void *addr = dlsym(h, sym);
  if (!addr) raspV_error(ctx, pos, "library '%s' has no symbol '%s'", lib, sym);
  memcpy(&cf.fn, &addr, sizeof addr);
  if (ffi_prep_cif(&cf.cif, FFI_DEFAULT_ABI, (unsigned)cf.nargs, ffi_of(cf.ret), cf.argtypes) != FFI_OK)
    raspV_error(ctx, pos, "libffi cannot prepare a call with signature '%s'", sig);
  snprintf(cf.name, sizeof cf.name, "%s", sym);
  value *v = raspV_new(ctx, V_CFUNC);
  v->u.cf = raspM_alloc(sizeof cf);
  *v->u.cf = cf;
  /* the cif points at argtypes inside the struct: repoint after the copy */
  v->u.cf->cif.arg_types = v->u.cf->argtypes;
  return v;
}

value *raspD_call(rasp_ctx *ctx, rasp_cfunc *cf, value **args, int nargs, rasp_pos pos) {
  if (nargs != cf->nargs)
    raspV_error(ctx, pos, "%s() takes %d argument(s), %d given", cf->name, cf->nargs, nargs);
  union { int i; int64_t l; double d; } in[CF_MAXARGS];
  void *ptrs[CF_MAXARGS];
  for (int i = 0; i < nargs; i++) {
    value *a = args[i];
    if (a->kind != V_NUM && a->kind != V_BOOL)
      raspV_error(ctx, pos, "%s(): argument %d must be a number, not %s", cf->name, i + 1,
                  raspV_kind_name(a));
    if (cf->args[i] == CT_DOUBLE) {
      in[i].d = a->kind == V_BOOL ? a->u.b : mpq_get_d(a->u.q);
    } else {
      int64_t v = raspV_int(ctx, a, pos, "a C integer argument");
      if (cf->args[i] == CT_INT && (v < INT32_MIN || v > INT32_MAX))
        raspV_error(ctx, pos, "%s(): argument %d does not fit in a C int", cf->name, i + 1);
      if (cf->args[i] == CT_INT) in[i].i = (int)v;
      else in[i].l = v;
    }
    ptrs[i] = &in[i];
  }
  union { ffi_arg a; int64_t l; double d; } out;
  memset(&out, 0, sizeof out);
  ffi_call(&cf->cif, cf->fn, &out, ptrs);
  value *r = raspV_new(ctx, V_NUM);
  if (cf->ret == CT_DOUBLE) {
    if (!isfinite(out.d)) raspV_error(ctx, pos, "%s() returned a value that is not a finite number", cf->name);
    mpq_set_d(r->u.q, out.d);
  } else if (cf->ret == CT_INT) {
    mpq_set_si(r->u.q, (int)(ffi_sarg)out.a, 1);
  } else {
    mpq_set_si(r->u.q, (long)out.l, 1);
  }
  return r;
}

void raspD_free(rasp_cfunc *cf) { raspM_free(cf); }
