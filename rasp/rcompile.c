/* rcompile.c -- to be written */
#include "rcompile.h"
