/* tap.h: runs a Check suite with its results as TAP on stdout, so that the
 * test harness counts every case rather than every program. */
#ifndef BERTH_TEST_TAP_H
#define BERTH_TEST_TAP_H

#include <check.h>
#include <stdlib.h>

static inline int
tap_run(Suite *s)
{
	SRunner *sr = srunner_create(s);
	int failed;

	srunner_set_tap(sr, "-");
	srunner_run_all(sr, CK_SILENT);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

#endif
