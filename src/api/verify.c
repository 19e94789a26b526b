/*
 * verify.c
 *	  inventory.verify(): compares the cache with the tables.
 *
 * The truth is inventory.stock read with a fresh snapshot.  A cached entry
 * can be compared with it only when no other transaction had a change to
 * the SKU in flight while the snapshot was taken: every pin and unpin bumps
 * the entry's generation, so an entry that nobody else pinned before the
 * read and whose generation did not move until after it was quiet
 * throughout.  The caller's own uncommitted changes are in its snapshot but
 * not yet in the cache, so they are taken out of the truth; the rules of a
 * SKU the caller is changing are not compared.  Busy entries
 * are read again a few times; any still busy are skipped with a NOTICE by
 * inventory.verify(), while inventory.verify(wait) compares again until no
 * entry is busy and raises an error naming those still busy when the wait
 * ends, so that an empty answer always means every SKU was compared.
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/latch.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/wait_event.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "shmem/cache.h"
#include "shmem/cache_stats.h"
#include "tables/catalog.h"
#include "tables/ledger_table.h"
#include "api/verify.h"
#include "tables/stmt.h"
#include "xact/pending.h"

#define VERIFY_RETRIES 5

typedef struct TruthEntry
{
	char		sku[INV_SKU_MAXLEN + 1];
	InvEffect	truth;
	InvRules	rules;
} TruthEntry;

static InvStmt all_truth = {
	"SELECT sku, on_hand, reserved, version, max_per_buyer, sale_starts, sale_ends"
	" FROM inventory.stock", 0
};

/* a 0.1 schema, not updated yet, has no rules */
static InvStmt all_truth_0_1 = {
	"SELECT sku, on_hand, reserved, version FROM inventory.stock", 0
};

static HTAB *
ReadAllTruth(void)
{
	HASHCTL		ctl;
	HTAB	   *truth;
	int			spi;

	ctl.keysize = INV_SKU_MAXLEN + 1;
	ctl.entrysize = sizeof(TruthEntry);
	ctl.hcxt = CurrentMemoryContext;
	truth = hash_create("inventory truth", 1024, &ctl,
						HASH_ELEM | HASH_STRINGS | HASH_CONTEXT);

	spi = InvSpiConnect();
	InvStmtRun(InvGetCatalog()->s_max_per_buyer != InvalidAttrNumber ?
			   &all_truth : &all_truth_0_1, NULL, NULL, true, 0);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		char	   *sku = SPI_getvalue(tup, desc, 1);
		TruthEntry *e;
		bool		isnull;

		if (strlen(sku) > INV_SKU_MAXLEN)
			continue;			/* cannot be cached */
		e = hash_search(truth, sku, HASH_ENTER, NULL);
		e->truth.on_hand = DatumGetInt64(SPI_getbinval(tup, desc, 2, &isnull));
		e->truth.reserved = DatumGetInt64(SPI_getbinval(tup, desc, 3, &isnull));
		e->truth.version = DatumGetInt64(SPI_getbinval(tup, desc, 4, &isnull));
		InvRulesNone(&e->rules);
		if (desc->natts >= 7)
		{
			Datum		d = SPI_getbinval(tup, desc, 5, &isnull);

			if (!isnull)
				e->rules.max_per_buyer = DatumGetInt64(d);
			d = SPI_getbinval(tup, desc, 6, &isnull);
			if (!isnull)
				e->rules.sale_starts = DatumGetTimestampTz(d);
			d = SPI_getbinval(tup, desc, 7, &isnull);
			if (!isnull)
				e->rules.sale_ends = DatumGetTimestampTz(d);
		}
	}
	InvSpiFinish(spi);
	return truth;
}

static void
ReportNullable(VerifyOut *out, const char *sku,
			   const char *what, bool has_cached, int64 cached,
			   bool has_truth, int64 truth)
{
	Datum		values[4];
	bool		nulls[4] = {false, false, !has_cached, !has_truth};

	out->differences++;
	if (out->ts == NULL)
		return;
	values[0] = CStringGetTextDatum(sku);
	values[1] = CStringGetTextDatum(what);
	values[2] = Int64GetDatum(cached);
	values[3] = Int64GetDatum(truth);
	tuplestore_putvalues(out->ts, out->desc, values, nulls);
}

static void
Report(VerifyOut *out, const char *sku, const char *what,
	   int64 cached, int64 truth)
{
	ReportNullable(out, sku, what, true, cached, true, truth);
}

/* A rule's moment as seconds since 1970 (NULL: no such rule), for a report. */
static void
ReportMoment(VerifyOut *out, const char *sku,
			 const char *what, TimestampTz cached, TimestampTz truth)
{
	if (cached == truth)
		return;
	ReportNullable(out, sku, what,
				   !TIMESTAMP_NOT_FINITE(cached),
				   (int64) floor(timestamptz_to_time_t(cached)),
				   !TIMESTAMP_NOT_FINITE(truth),
				   (int64) floor(timestamptz_to_time_t(truth)));
}

/* The rules: max_per_buyer (NULL: none), sale_starts and sale_ends. */
static void
CompareRules(VerifyOut *out, const char *sku,
			 const InvRules *cached, const InvRules *truth)
{
	if (cached->max_per_buyer != truth->max_per_buyer)
		ReportNullable(out, sku, "max_per_buyer",
					   cached->max_per_buyer > 0, cached->max_per_buyer,
					   truth->max_per_buyer > 0, truth->max_per_buyer);
	ReportMoment(out, sku, "sale_starts", cached->sale_starts, truth->sale_starts);
	ReportMoment(out, sku, "sale_ends", cached->sale_ends, truth->sale_ends);
}

/*
 * Compares one entry; returns false when it was busy.  before is the copy
 * taken before the truth was read.
 */
static bool
Compare(VerifyOut *out, const char *sku,
		const InvView *before, bool exists, const InvEffect *truth,
		const InvRules *rules)
{
	InvKey		key;
	InvView		after;
	InvEffect	own;
	bool		mine;
	bool		present;

	CacheMakeKey(&key, sku, strlen(sku));
	mine = PendingOwnDelta(&key, &own);
	present = CacheRead(&key, false, &after);
	if (!present || before->pins != (mine ? 1 : 0) ||
		after.pins != before->pins || after.gen != before->gen)
		return !present;		/* evicted meanwhile: nothing to compare */

	if (!exists)
	{
		Report(out, sku, "exists", 1, 0);
		return true;
	}
	if (after.on_hand != truth->on_hand - own.on_hand)
		Report(out, sku, "on_hand", after.on_hand, truth->on_hand - own.on_hand);
	if (after.reserved != truth->reserved - own.reserved)
		Report(out, sku, "reserved", after.reserved, truth->reserved - own.reserved);
	if (after.version != truth->version - own.version)
		Report(out, sku, "version", after.version, truth->version - own.version);
	if (!mine)
		CompareRules(out, sku, &after.rules, rules);
	return true;
}

/*
 * Compares every cached SKU of this database with the tables; reports each
 * difference to out, and returns how many SKUs it compared and, in
 * *skipped, how many it could not because they stayed busy (and, if
 * busy_skus is given, a list of their names).
 */
int64
VerifyRun(VerifyOut *out, int64 *skipped, List **busy_skus)
{
	InvEntryCopy *entries;
	int			n;
	int			busy = 0;
	HTAB	   *truth;

	entries = CacheCopyEntries(&n);
	truth = ReadAllTruth();
	for (int i = 0; i < n; i++)
	{
		TruthEntry *t = hash_search(truth, entries[i].sku, HASH_FIND, NULL);

		if (!Compare(out, entries[i].sku,
					 &entries[i].view, t != NULL, t ? &t->truth : NULL,
					 t ? &t->rules : NULL))
			entries[busy++] = entries[i];
	}

	/* read the busy ones again, one at a time */
	for (int attempt = 0; attempt < VERIFY_RETRIES && busy > 0; attempt++)
	{
		int			still = 0;

		for (int i = 0; i < busy; i++)
		{
			InvKey		key;
			InvView		before;
			InvEffect	t;
			InvRules	rules;
			bool		exists;

			CacheMakeKey(&key, entries[i].sku, strlen(entries[i].sku));
			if (!CacheRead(&key, false, &before))
				continue;
			exists = LedgerReadTruth(entries[i].sku, &t, NULL, &rules);
			if (!Compare(out, entries[i].sku, &before, exists, &t, &rules))
				entries[still++] = entries[i];
		}
		busy = still;
	}
	*skipped = busy;
	if (busy_skus != NULL)
	{
		*busy_skus = NIL;
		for (int i = 0; i < busy; i++)
			*busy_skus = lappend(*busy_skus, pstrdup(entries[i].sku));
	}
	return n - busy;
}

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
