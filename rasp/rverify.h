/*
** rverify.h -- checking path-star programs against generated graphs.
*/
#ifndef RASP_RVERIFY_H
#define RASP_RVERIFY_H
#endif
