/*
 * stats.c
 *	  Views of shared memory: per-SKU statistics and the cache's own
 *	  figures (only the current database's SKUs are shown), the background
 *	  workers' view of every database they serve and of its last verify,
 *	  and the express lanes.
 */
#include "postgres.h"

#include "commands/dbcommands.h"
#include "fmgr.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "api/args.h"
#include "shmem/cache.h"
#include "shmem/cache_stats.h"
#include "shmem/express.h"
#include "shmem/keyfilter.h"
#include "shmem/pool.h"

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

/* inventory.key_filter: the filter of keys absent from the ledgers */
PG_FUNCTION_INFO_V1(inventory_key_filter_info);
Datum
inventory_key_filter_info(PG_FUNCTION_ARGS)
{
	TupleDesc	desc;
	KeyFilterInfo info;
	Datum		v[9];
	bool		nulls[9];

	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	KeyFilterGetInfo(&info);
	memset(nulls, 0, sizeof(nulls));
	v[0] = Int64GetDatum(info.bytes);
	v[1] = Int32GetDatum(info.hashes);
	v[2] = Float8GetDatum(info.fill);
	v[3] = Float8GetDatum(info.false_positive_rate);
	v[4] = Int64GetDatum(info.keys_added);
	v[5] = Int64GetDatum(info.said_absent);
	v[6] = Int64GetDatum(info.said_maybe);
	v[7] = Int64GetDatum(info.false_positives);
	v[8] = BoolGetDatum(info.ready);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(desc), v, nulls)));
}

/*
 * inventory.worker_status.  Version 0.1's function, bound to the symbol
 * without a suffix, had other columns in another order, and 0.2's had
 * no notify_failures nor change_feed_lag; each keeps working with this library until ALTER
 * EXTENSION inventory UPDATE, as pg_stat_statements keeps its older
 * versions.  Each database's values are computed once; a shape says which
 * goes in which column.
 */
typedef enum StatusValue
{
	SV_DATID,
	SV_DATNAME,
	SV_STATE,
	SV_PID,
	SV_STARTED_AT,
	SV_NEXT_DUE,
	SV_LAG,
	SV_LAST_VISIT,
	SV_VISITS,
	SV_EXPIRED,
	SV_FOLDED,
	SV_NOTIFY_FAILURES,
	SV_CHANGE_FEED_LAG,
	SV_COUNT
} StatusValue;

/* datid, datname, pid, state, started_at, last_run, rounds, expired, folded, lag, last_wake */
static const StatusValue status_0_1[] = {
	SV_DATID, SV_DATNAME, SV_PID, SV_STATE, SV_STARTED_AT, SV_LAST_VISIT,
	SV_VISITS, SV_EXPIRED, SV_FOLDED, SV_LAG, SV_LAST_VISIT
};

static const StatusValue status_0_2[] = {
	SV_DATID, SV_DATNAME, SV_STATE, SV_PID, SV_STARTED_AT, SV_NEXT_DUE,
	SV_LAG, SV_LAST_VISIT, SV_VISITS, SV_EXPIRED, SV_FOLDED
};

static const StatusValue status_0_3[] = {
	SV_DATID, SV_DATNAME, SV_STATE, SV_PID, SV_STARTED_AT, SV_NEXT_DUE,
	SV_LAG, SV_LAST_VISIT, SV_VISITS, SV_EXPIRED, SV_FOLDED, SV_NOTIFY_FAILURES,
	SV_CHANGE_FEED_LAG
};

static Datum
WorkerStatus(FunctionCallInfo fcinfo, const StatusValue *shape, int ncols)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	PoolDbStatus *dbs;
	int			n;

	InitMaterializedSRF(fcinfo, 0);
	if (rsinfo->setDesc->natts != ncols)
		elog(ERROR, "inventory.worker_status() has %d columns, expected %d",
			 rsinfo->setDesc->natts, ncols);
	dbs = PoolCopyStatus(&n);
	for (int i = 0; i < n; i++)
	{
		PoolDbStatus *d = &dbs[i];
		Datum		val[SV_COUNT];
		bool		null[SV_COUNT];
		Datum		v[SV_COUNT];
		bool		nulls[SV_COUNT];
		Interval   *lag = palloc0(sizeof(Interval));
		Interval   *feed_lag = palloc0(sizeof(Interval));
		/* the name now: the launcher's copy may be a rename behind */
		char	   *name = get_database_name(d->dboid);

		memset(null, 0, sizeof(null));
		lag->time = d->lag_usecs;
		val[SV_DATID] = ObjectIdGetDatum(d->dboid);
		val[SV_DATNAME] = CStringGetTextDatum(name ? name : NameStr(d->datname));
		val[SV_STATE] = CStringGetTextDatum(d->state);
		val[SV_PID] = Int32GetDatum(d->pid);
		null[SV_PID] = (d->pid == 0);
		val[SV_STARTED_AT] = TimestampTzGetDatum(d->started_at);
		null[SV_STARTED_AT] = (d->started_at == 0);
		val[SV_NEXT_DUE] = TimestampTzGetDatum(d->next_due);
		null[SV_NEXT_DUE] = (d->next_due == POOL_NOTHING_DUE);
		val[SV_LAG] = IntervalPGetDatum(lag);
		val[SV_LAST_VISIT] = TimestampTzGetDatum(d->last_visit);
		null[SV_LAST_VISIT] = (d->last_visit == 0);
		val[SV_VISITS] = Int64GetDatum(d->visits);
		val[SV_EXPIRED] = Int64GetDatum(d->expired);
		val[SV_FOLDED] = Int64GetDatum(d->folded);
		val[SV_NOTIFY_FAILURES] = Int64GetDatum(d->notify_failures);
		feed_lag->time = d->feed_lag_usecs;
		val[SV_CHANGE_FEED_LAG] = IntervalPGetDatum(feed_lag);

		for (int c = 0; c < ncols; c++)
		{
			v[c] = val[shape[c]];
			nulls[c] = null[shape[c]];
		}
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, v, nulls);
	}
	return (Datum) 0;
}

PG_FUNCTION_INFO_V1(inventory_worker_status);
Datum
inventory_worker_status(PG_FUNCTION_ARGS)
{
	return WorkerStatus(fcinfo, status_0_1, lengthof(status_0_1));
}

PG_FUNCTION_INFO_V1(inventory_worker_status_0_2);
Datum
inventory_worker_status_0_2(PG_FUNCTION_ARGS)
{
	return WorkerStatus(fcinfo, status_0_2, lengthof(status_0_2));
}

PG_FUNCTION_INFO_V1(inventory_worker_status_0_3);
Datum
inventory_worker_status_0_3(PG_FUNCTION_ARGS)
{
	return WorkerStatus(fcinfo, status_0_3, lengthof(status_0_3));
}

#define EXPRESS_STATUS_COLS 11

/* Every database's express lane in use: its writer, queue and batches. */
PG_FUNCTION_INFO_V1(inventory_express_status);
Datum
inventory_express_status(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	ExpressLaneInfo *lanes;
	int			n;

	InitMaterializedSRF(fcinfo, 0);
	lanes = palloc(inv_max_express_writers * sizeof(ExpressLaneInfo) + 1);
	n = ExpressLanes(lanes, inv_max_express_writers);
	for (int i = 0; i < n; i++)
	{
		ExpressLaneInfo *l = &lanes[i];
		char	   *name = get_database_name(l->dboid);
		Datum		v[EXPRESS_STATUS_COLS];
		bool		nulls[EXPRESS_STATUS_COLS];
		int			c = 0;

		memset(nulls, 0, sizeof(nulls));
		v[c++] = ObjectIdGetDatum(l->dboid);
		nulls[c] = (name == NULL);
		v[c++] = name ? CStringGetTextDatum(name) : (Datum) 0;
		nulls[c] = (l->writer_pid == 0);
		v[c++] = Int32GetDatum(l->writer_pid);
		nulls[c] = (l->writer_pid == 0);
		v[c++] = TimestampTzGetDatum(l->started_at);
		v[c++] = Int32GetDatum(l->queued);
		v[c++] = Int64GetDatum(l->batches);
		v[c++] = Int64GetDatum(l->rows);
		nulls[c] = (l->batches == 0);
		v[c++] = Float8GetDatum(l->batches ? (double) l->rows / l->batches : 0);
		v[c++] = Int64GetDatum(l->max_batch);
		v[c++] = Int64GetDatum(l->sent_back);
		v[c++] = Int64GetDatum(l->failed);
		Assert(c == EXPRESS_STATUS_COLS);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, v, nulls);
	}
	return (Datum) 0;
}

/* Calls that reserved in their own transaction for want of a writer. */
PG_FUNCTION_INFO_V1(inventory_express_fallbacks);
Datum
inventory_express_fallbacks(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT64(ExpressFallbacks());
}

#define VERIFY_STATUS_COLS 5

/* The last background verify of every database the workers serve. */
PG_FUNCTION_INFO_V1(inventory_verify_status);
Datum
inventory_verify_status(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	PoolDbStatus *dbs;
	int			n;

	InitMaterializedSRF(fcinfo, 0);
	dbs = PoolCopyStatus(&n);
	for (int i = 0; i < n; i++)
	{
		PoolVerify *v = &dbs[i].verify;
		char	   *name = ArgDatabaseNameColumn(dbs[i].dboid);
		Datum		vals[VERIFY_STATUS_COLS];
		bool		nulls[VERIFY_STATUS_COLS] = {0};
		bool		never = (v->verified_at == 0);

		if (name == NULL)
			continue;
		vals[0] = CStringGetDatum(name);
		vals[1] = TimestampTzGetDatum(v->verified_at);
		vals[2] = Int64GetDatum(v->checked);
		vals[3] = Int64GetDatum(v->differences);
		vals[4] = Int64GetDatum(v->skipped);
		for (int c = 1; c < VERIFY_STATUS_COLS; c++)
			nulls[c] = never;
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, vals, nulls);
	}
	return (Datum) 0;
}

#define RECONCILE_STATS_COLS 7

/* What the reconcilers' answers did, in every database the workers serve. */
PG_FUNCTION_INFO_V1(inventory_reconcile_stats);
Datum
inventory_reconcile_stats(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	PoolDbStatus *dbs;
	int			n;

	InitMaterializedSRF(fcinfo, 0);
	dbs = PoolCopyStatus(&n);
	for (int i = 0; i < n; i++)
	{
		ReconcileCounts *c = &dbs[i].reconciled;
		char	   *name = ArgDatabaseNameColumn(dbs[i].dboid);
		Datum		vals[RECONCILE_STATS_COLS];
		bool		nulls[RECONCILE_STATS_COLS] = {0};

		if (name == NULL)
			continue;
		vals[0] = CStringGetDatum(name);
		vals[1] = Int64GetDatum(c->confirmed);
		vals[2] = Int64GetDatum(c->cancelled);
		vals[3] = Int64GetDatum(c->expired);
		vals[4] = Int64GetDatum(c->waited);
		vals[5] = Int64GetDatum(c->failed);
		vals[6] = Int64GetDatum(c->refused);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, vals, nulls);
	}
	return (Datum) 0;
}
