/*
 * stats.c
 *	  Views of the cache: per-SKU statistics and the cache's own figures.
 *	  Only the current database's entries are shown.
 */
#include "postgres.h"

#include "fmgr.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "cache.h"

#define SKU_STATS_COLS 18

PG_FUNCTION_INFO_V1(inventory_sku_stats);
Datum
inventory_sku_stats(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	InvEntryCopy *entries;
	int			n;

	InitMaterializedSRF(fcinfo, 0);
	entries = CacheCopyEntries(&n);
	for (int i = 0; i < n; i++)
	{
		InvEntryCopy *e = &entries[i];
		Datum		v[SKU_STATS_COLS];
		bool		nulls[SKU_STATS_COLS];
		int			c = 0;

		memset(nulls, 0, sizeof(nulls));
		v[c++] = CStringGetTextDatum(e->sku);
		v[c++] = Int64GetDatum(e->view.on_hand);
		v[c++] = Int64GetDatum(e->view.reserved);
		v[c++] = Int64GetDatum(e->view.holds);
		v[c++] = Int64GetDatum(InvViewAvailable(&e->view));
		v[c++] = Int64GetDatum(e->view.version);
		v[c++] = Int32GetDatum(e->view.pins);
		v[c++] = Int64GetDatum(e->view.unfolded);
		v[c++] = Int64GetDatum(e->stats.reserves);
		v[c++] = Int64GetDatum(e->stats.rejects);
		v[c++] = Int64GetDatum(e->stats.conflicts);
		v[c++] = Int64GetDatum(e->stats.confirms);
		v[c++] = Int64GetDatum(e->stats.cancels);
		v[c++] = Int64GetDatum(e->stats.expiries);
		v[c++] = Int64GetDatum(e->stats.restocks);
		v[c++] = Int64GetDatum(e->stats.adjusts);
		v[c++] = TimestampTzGetDatum(e->loaded_at);
		v[c++] = TimestampTzGetDatum(e->last_used);
		Assert(c == SKU_STATS_COLS);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, v, nulls);
	}
	return (Datum) 0;
}

PG_FUNCTION_INFO_V1(inventory_stats_reset);
Datum
inventory_stats_reset(PG_FUNCTION_ARGS)
{
	CacheResetStats();
	PG_RETURN_VOID();
}

PG_FUNCTION_INFO_V1(inventory_cache_info);
Datum
inventory_cache_info(PG_FUNCTION_ARGS)
{
	TupleDesc	desc;
	InvCacheInfo info;
	Datum		v[5];
	bool		nulls[5] = {false, false, false, false, false};

	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	CacheGetInfo(&info);
	v[0] = Int64GetDatum(info.capacity);
	v[1] = Int64GetDatum(info.entries);
	v[2] = Int64GetDatum(info.bytes_per_entry);
	v[3] = Int64GetDatum(info.loads);
	v[4] = Int64GetDatum(info.evictions);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(desc), v, nulls)));
}
