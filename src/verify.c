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
 * not yet in the cache, so they are taken out of the truth.  Busy entries
 * are read again a few times; any still busy are skipped with a NOTICE.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/snapmgr.h"

#include "cache.h"
#include "ledger.h"
#include "stmt.h"
#include "pending.h"

#define VERIFY_RETRIES 5

typedef struct TruthEntry
{
	char		sku[INV_SKU_MAXLEN + 1];
	InvEffect	truth;
} TruthEntry;

static InvStmt all_truth = {
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
	InvStmtRun(&all_truth, NULL, NULL, true, 0);
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
	}
	InvSpiFinish(spi);
	return truth;
}

static void
Report(Tuplestorestate *ts, TupleDesc desc, const char *sku, const char *what,
	   int64 cached, int64 truth)
{
	Datum		values[4];
	bool		nulls[4] = {false, false, false, false};

	values[0] = CStringGetTextDatum(sku);
	values[1] = CStringGetTextDatum(what);
	values[2] = Int64GetDatum(cached);
	values[3] = Int64GetDatum(truth);
	tuplestore_putvalues(ts, desc, values, nulls);
}

/*
 * Compares one entry; returns false when it was busy.  before is the copy
 * taken before the truth was read.
 */
static bool
Compare(Tuplestorestate *ts, TupleDesc tdesc, const char *sku,
		const InvView *before, bool exists, const InvEffect *truth)
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
		Report(ts, tdesc, sku, "exists", 1, 0);
		return true;
	}
	if (after.on_hand != truth->on_hand - own.on_hand)
		Report(ts, tdesc, sku, "on_hand", after.on_hand, truth->on_hand - own.on_hand);
	if (after.reserved != truth->reserved - own.reserved)
		Report(ts, tdesc, sku, "reserved", after.reserved, truth->reserved - own.reserved);
	if (after.version != truth->version - own.version)
		Report(ts, tdesc, sku, "version", after.version, truth->version - own.version);
	return true;
}

PG_FUNCTION_INFO_V1(inventory_verify);
Datum
inventory_verify(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	InvEntryCopy *entries;
	int			n;
	int			busy = 0;
	HTAB	   *truth;

	InitMaterializedSRF(fcinfo, 0);

	entries = CacheCopyEntries(&n);
	truth = ReadAllTruth();
	for (int i = 0; i < n; i++)
	{
		TruthEntry *t = hash_search(truth, entries[i].sku, HASH_FIND, NULL);

		if (!Compare(rsinfo->setResult, rsinfo->setDesc, entries[i].sku,
					 &entries[i].view, t != NULL, t ? &t->truth : NULL))
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
			bool		exists;

			CacheMakeKey(&key, entries[i].sku, strlen(entries[i].sku));
			if (!CacheRead(&key, false, &before))
				continue;
			exists = LedgerReadTruth(entries[i].sku, &t, NULL, NULL);
			if (!Compare(rsinfo->setResult, rsinfo->setDesc, entries[i].sku,
						 &before, exists, &t))
				entries[still++] = entries[i];
		}
		busy = still;
	}

	if (busy > 0)
		ereport(NOTICE,
				(errmsg("%d SKUs had changes in flight and were not verified", busy),
				 errhint("Run inventory.verify() again when they are idle.")));
	return (Datum) 0;
}
