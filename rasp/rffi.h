/*
** rffi.h -- cfunc(): C functions bound from programs (internal to librasp).
**
** The prefix is raspD_ (dlopen): raspF_ is rfacts.  raspD_bind is the
** builtin cfunc() itself (rbuiltin.c lists it in its table); the
** interpreter calls a bound function through raspD_call and frees it with
** the heap (raspD_free).  rffi.c says what is allowed and why.
*/
#ifndef RASP_RFFI_H
#define RASP_RFFI_H

#include "rvalue.h"

/* cfunc(library, symbol, signature): a V_CFUNC value, or an error raised
** (refused unless the context allows FFI) */
value *raspD_bind(rasp_ctx *ctx, value **args, int nargs, rasp_pos pos);
value *raspD_call(rasp_ctx *ctx, rasp_cfunc *cf, value **args, int nargs,
                  rasp_pos pos);
void raspD_free(rasp_cfunc *cf);

#endif
