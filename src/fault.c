/*
 * fault.c
 *	  Faults injected on purpose, in a build for the tests only (fault.h).
 *
 * Locking contract: the parked count and the release generation are
 * atomics; a parked process polls the generation on its latch's timeout.
 */
#include "postgres.h"

#include "fmgr.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/latch.h"
#include "storage/shmem.h"
#include "utils/guc.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "fault.h"

#ifdef INV_FAULT_INJECTION

typedef struct FaultShared
{
	pg_atomic_uint32 parked;	/* processes parked now */
	pg_atomic_uint32 release;	/* bumped to let them go */
} FaultShared;

static FaultShared *fault = NULL;
static char *inv_inject_fault = NULL;

void
FaultInit(void)
{
	DefineCustomStringVariable("inventory.inject_fault",
							   "The place in the code that raises an error, pauses or parks on purpose (a test build only).",
							   NULL,
							   &inv_inject_fault,
							   "",
							   PGC_SUSET, GUC_NOT_IN_SAMPLE,
							   NULL, NULL, NULL);
}

Size
FaultShmemSize(void)
{
	return sizeof(FaultShared);
}

void
FaultShmemInit(void)
{
	bool		found;

	fault = ShmemInitStruct("inventory faults", sizeof(FaultShared), &found);
	if (found)
		return;
	pg_atomic_init_u32(&fault->parked, 0);
	pg_atomic_init_u32(&fault->release, 0);
}

static bool
Named(const char *name)
{
	return inv_inject_fault != NULL && strcmp(inv_inject_fault, name) == 0;
}

/* Raises an ERROR if the setting names this place. */
void
FaultPoint(const char *name)
{
	if (Named(name))
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("fault injected at \"%s\"", name)));
}

/* Pauses for FAULT_PAUSE_MS if the setting names this place. */
void
FaultPause(const char *name)
{
	TimestampTz until;

	if (!Named(name))
		return;
	elog(LOG, "fault injected at \"%s\": pausing", name);
	/* the whole pause, whatever sets the latch meanwhile */
	until = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), FAULT_PAUSE_MS);
	for (;;)
	{
		long		left = TimestampDifferenceMilliseconds(GetCurrentTimestamp(), until);

		if (left <= 0)
			break;
		ResetLatch(MyLatch);
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 left, PG_WAIT_EXTENSION);
	}
	/* what set the latch is looked at again by the caller's next wait */
	SetLatch(MyLatch);
}

/*
 * Parks here, if the setting names this place, until inventory_fault_release()
 * is called, or at most FAULT_PARK_MAX_MS (a test that died before it
 * released the park must not leave a process that a shutdown waits for):
 * without processing interrupts, since a place worth parking at may be a
 * commit's callback, where none are processed.
 */
void
FaultPark(const char *name)
{
	uint32		gen;
	TimestampTz until;

	if (!Named(name) || fault == NULL)
		return;
	gen = pg_atomic_read_u32(&fault->release);
	pg_atomic_fetch_add_u32(&fault->parked, 1);
	elog(LOG, "fault injected at \"%s\": parked", name);
	until = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), FAULT_PARK_MAX_MS);
	while (pg_atomic_read_u32(&fault->release) == gen)
	{
		if (GetCurrentTimestamp() >= until)
		{
			elog(LOG, "fault injected at \"%s\": no release after %d ms, going on",
				 name, FAULT_PARK_MAX_MS);
			break;
		}
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 10, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
	pg_atomic_fetch_sub_u32(&fault->parked, 1);
	/* what set the latch meanwhile is looked at again by the caller's next wait */
	SetLatch(MyLatch);
}

PG_FUNCTION_INFO_V1(inventory_fault_parked);
Datum
inventory_fault_parked(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT32((int32) pg_atomic_read_u32(&fault->parked));
}

PG_FUNCTION_INFO_V1(inventory_fault_release);
Datum
inventory_fault_release(PG_FUNCTION_ARGS)
{
	pg_atomic_fetch_add_u32(&fault->release, 1);
	PG_RETURN_VOID();
}

#endif
