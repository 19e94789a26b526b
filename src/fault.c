/*
 * fault.c
 *	  Faults injected on purpose, in a build for the tests only (fault.h).
 */
#include "postgres.h"

#include "miscadmin.h"
#include "storage/latch.h"
#include "utils/guc.h"
#include "utils/wait_event.h"

#include "fault.h"

#ifdef INV_FAULT_INJECTION

static char *inv_inject_fault = NULL;

void
FaultInit(void)
{
	DefineCustomStringVariable("inventory.inject_fault",
							   "The place in the code that raises an error, or pauses, on purpose (a test build only).",
							   NULL,
							   &inv_inject_fault,
							   "",
							   PGC_SUSET, GUC_NOT_IN_SAMPLE,
							   NULL, NULL, NULL);
}

/* Raises an ERROR if the setting names this place. */
void
FaultPoint(const char *name)
{
	if (inv_inject_fault != NULL && strcmp(inv_inject_fault, name) == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("fault injected at \"%s\"", name)));
}

#endif

#ifdef INV_FAULT_INJECTION
/* Pauses for FAULT_PAUSE_MS if the setting names this place. */
void
FaultPause(const char *name)
{
	if (inv_inject_fault == NULL || strcmp(inv_inject_fault, name) != 0)
		return;
	elog(LOG, "fault injected at \"%s\": pausing", name);
	(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
					 FAULT_PAUSE_MS, PG_WAIT_EXTENSION);
	ResetLatch(MyLatch);
}
#endif
