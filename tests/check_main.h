/*
** check_main.h -- the one main() of every Check suite in tests/.
**
** A suite file defines its Suite and ends with RASP_CHECK_MAIN(make_suite()):
** run every test, exit non-zero if any failed.
*/
#ifndef RASP_CHECK_MAIN_H
#define RASP_CHECK_MAIN_H

#include <check.h>
#include <stdlib.h>

static inline int raspT_run_suite(Suite *s) {
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

#define RASP_CHECK_MAIN(suite_expr) \
  int main(void) { return raspT_run_suite(suite_expr); }

#endif
