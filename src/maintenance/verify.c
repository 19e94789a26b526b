/*
 * verify.c
 *	  Compares the cache with the tables: for inventory.verify() and
 *	  inventory.verify(wait) (api/verify.c) and the workers' background
 *	  verify.
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

#include "maintenance/verify.h"
#include "shmem/cache.h"
#include "shmem/cache_stats.h"
#include "tables/catalog.h"
#include "tables/ledger_table.h"
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
