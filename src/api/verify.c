/*
 * verify.c
 *	  inventory.verify() and inventory.verify(wait): the comparison of the
 *	  cache with the tables (maintenance/verify.c), as SQL functions.
 *	  verify() passes over a SKU busy with changes in flight, with a NOTICE;
 *	  verify(wait) waits for it, and raises an error naming those still
 *	  busy when the wait ends.
 */
#include "postgres.h"

#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/latch.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "maintenance/verify.h"

PG_FUNCTION_INFO_V1(inventory_verify);
Datum
inventory_verify(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	VerifyOut	out;
	int64		busy;

	InitMaterializedSRF(fcinfo, 0);
	out.ts = rsinfo->setResult;
	out.desc = rsinfo->setDesc;
	out.differences = 0;
	(void) VerifyRun(&out, &busy, NULL);
	if (busy > 0)
		ereport(NOTICE,
				(errmsg_plural("%lld SKU had changes in flight and was not verified",
							   "%lld SKUs had changes in flight and were not verified",
							   busy, (long long) busy),
				 errhint("Run inventory.verify() again when they are idle, or inventory.verify(wait) to wait for them.")));
	return (Datum) 0;
}

/* The names of busy SKUs, for a message: the first ten, and how many more. */
static char *
SkuNames(List *skus)
{
	StringInfoData buf;
	ListCell   *lc;
	int			n = 0;

	initStringInfo(&buf);
	foreach(lc, skus)
	{
		if (n == 10)
		{
			appendStringInfo(&buf, " and %d more", list_length(skus) - n);
			break;
		}
		appendStringInfo(&buf, "%s%s", n > 0 ? ", " : "", quote_identifier(lfirst(lc)));
		n++;
	}
	return buf.data;
}

/*
 * inventory.verify(wait): compares every SKU, waiting up to wait for those
 * that have changes in flight; raises 55000 naming the SKUs still busy when
 * the wait ends, so that no SKU is passed over in silence.
 */
PG_FUNCTION_INFO_V1(inventory_verify_wait);
Datum
inventory_verify_wait(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Interval   *wait;
	int64		wait_ms;
	TimestampTz deadline;
	long		nap = 10;
	MemoryContext per_query;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("wait must not be NULL"),
				 errhint("Use inventory.verify() to pass over the SKUs that are busy instead.")));
	wait = PG_GETARG_INTERVAL_P(0);
	wait_ms = (wait->time + (wait->day + (int64) wait->month * DAYS_PER_MONTH) * USECS_PER_DAY) / 1000;
	if (wait_ms < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("wait must not be negative")));
	deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), wait_ms);

	InitMaterializedSRF(fcinfo, 0);
	per_query = rsinfo->econtext->ecxt_per_query_memory;
	for (;;)
	{
		VerifyOut	out;
		int64		busy;
		List	   *skus;
		MemoryContext old = MemoryContextSwitchTo(per_query);

		/* each attempt answers afresh: rows of an earlier one are dropped */
		tuplestore_end(rsinfo->setResult);
		rsinfo->setResult = tuplestore_begin_heap(true, false, work_mem);
		MemoryContextSwitchTo(old);
		out.ts = rsinfo->setResult;
		out.desc = rsinfo->setDesc;
		out.differences = 0;
		(void) VerifyRun(&out, &busy, &skus);
		if (busy == 0)
			break;
		if (GetCurrentTimestamp() >= deadline)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg_plural("%lld SKU still had changes in flight after the wait: %s",
								   "%lld SKUs still had changes in flight after the wait: %s",
								   busy, (long long) busy, SkuNames(skus)),
					 errdetail("A SKU that a transaction in flight is changing cannot be compared with the tables."),
					 errhint("End the transactions that hold them (pg_stat_activity), or wait longer.")));
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 nap, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		nap = Min(nap * 2, 200);
	}
	return (Datum) 0;
}
