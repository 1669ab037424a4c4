/* tests/unit/tap.h - one TAP line per check for a unit test program that
 * prints its own plan: ok(COND, WHAT) numbers the checks; main returns
 * tap_failed != 0. */
#ifndef UIPC_TESTS_UNIT_TAP_H
#define UIPC_TESTS_UNIT_TAP_H
#include <stdio.h>

static int tap_n, tap_failed;

static void ok(int cond, const char *what)
{
	tap_n++;
	if (!cond)
		tap_failed++;
	printf("%sok %d - %s\n", cond ? "" : "not ", tap_n, what);
	fflush(stdout);
}
#endif
