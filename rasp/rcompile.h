/*
** rcompile.h -- compiling a traced program (its IR) to transformer weights.
*/
#ifndef RASP_RCOMPILE_H
#define RASP_RCOMPILE_H
#endif
