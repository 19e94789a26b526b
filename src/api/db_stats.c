/*
 * db_stats.c
 *	  Figures of every database in the cluster, for monitoring tools that
 *	  keep one connection to one database: what callers were told and what
 *	  committed (shmem/metrics.c), and the cache's entries summed per
 *	  database with its hottest SKUs.  Each row names its database, as
 *	  pg_stat_database's do; a database dropped meanwhile is left out, and
 *	  its counters are let go.
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
#include "shmem/metrics.h"

/* The name of a database with counters; NULL, and its counters let go, once it is dropped. */
static char *
CountingDatabase(Oid dboid)
{
	char	   *name = ArgDatabaseNameColumn(dboid);

	if (name == NULL)
		MetricsForget(dboid);
	return name;
}

/* inventory.call_stats: (datname, call, status, calls) */
PG_FUNCTION_INFO_V1(inventory_call_stats);
Datum
inventory_call_stats(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	InvDbMetrics *dbs;
	int			n;

	InitMaterializedSRF(fcinfo, 0);
	dbs = MetricsRead(&n);
	for (int i = 0; i < n; i++)
	{
		char	   *name = CountingDatabase(dbs[i].dboid);

		if (name == NULL)
			continue;
		for (int call = 0; call < INV_NUM_CALLS; call++)
			for (int st = 0; st < INV_NUM_STATUSES; st++)
			{
				uint64		calls = dbs[i].told[call][st];
				Datum		v[4];
				bool		nulls[4] = {0};

				/* a status the call never answers is shown once it has */
				if (calls == 0 && !MetricsCallAnswers(call, st))
					continue;
				v[0] = CStringGetDatum(name);
				v[1] = CStringGetTextDatum(inv_call_names[call]);
				v[2] = CStringGetTextDatum(inv_status_names[st]);
				v[3] = Int64GetDatum((int64) calls);
				tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, v, nulls);
			}
	}
	return (Datum) 0;
}

/* inventory.movement_stats: (datname, movement, committed) */
PG_FUNCTION_INFO_V1(inventory_movement_stats);
Datum
inventory_movement_stats(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	InvDbMetrics *dbs;
	int			n;

	InitMaterializedSRF(fcinfo, 0);
	dbs = MetricsRead(&n);
	for (int i = 0; i < n; i++)
	{
		char	   *name = CountingDatabase(dbs[i].dboid);

		if (name == NULL)
			continue;
		for (int m = 0; m < INV_NUM_MOVEMENTS; m++)
		{
			Datum		v[3];
			bool		nulls[3] = {0};

			v[0] = CStringGetDatum(name);
			v[1] = CStringGetTextDatum(inv_movement_names[m]);
			v[2] = Int64GetDatum((int64) dbs[i].committed[m]);
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, v, nulls);
		}
	}
	return (Datum) 0;
}

/* inventory.cache_by_database: (datname, entries, holds, pins, unfolded, restoring_since) */
PG_FUNCTION_INFO_V1(inventory_cache_by_database);
Datum
inventory_cache_by_database(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	InvDbCache *dbs;
	int			n;

	InitMaterializedSRF(fcinfo, 0);
	dbs = CacheByDatabase(0, &n);
	for (int i = 0; i < n; i++)
	{
		char	   *name = get_database_name(dbs[i].dboid);
		Datum		v[6];
		bool		nulls[6] = {0};

		if (name == NULL)
			continue;
		v[0] = CStringGetDatum(name);
		v[1] = Int64GetDatum(dbs[i].entries);
		v[2] = Int64GetDatum(dbs[i].holds);
		v[3] = Int64GetDatum(dbs[i].pins);
		v[4] = Int64GetDatum(dbs[i].unfolded);
		v[5] = TimestampTzGetDatum(dbs[i].restoring_since);
		nulls[5] = (dbs[i].restoring_since == 0);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, v, nulls);
	}
	return (Datum) 0;
}

#define HOT_SKUS_COLS 12

/* inventory.hot_skus: each database's inventory.hot_skus hottest SKUs */
PG_FUNCTION_INFO_V1(inventory_hot_skus);
Datum
inventory_hot_skus(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	InvDbCache *dbs;
	int			n;

	InitMaterializedSRF(fcinfo, 0);
	dbs = CacheByDatabase(inv_hot_skus, &n);
	for (int i = 0; i < n; i++)
	{
		char	   *name;

		if (dbs[i].nhot == 0 || (name = get_database_name(dbs[i].dboid)) == NULL)
			continue;
		for (int j = 0; j < dbs[i].nhot; j++)
		{
			InvHotSku  *h = &dbs[i].hot[j];
			Datum		v[HOT_SKUS_COLS];
			bool		nulls[HOT_SKUS_COLS] = {0};
			int			c = 0;

			v[c++] = CStringGetDatum(name);
			v[c++] = CStringGetTextDatum(h->sku);
			v[c++] = Int32GetDatum(j + 1);
			v[c++] = Int64GetDatum(h->view.on_hand);
			v[c++] = Int64GetDatum(h->view.reserved);
			v[c++] = Int64GetDatum(h->view.holds);
			v[c++] = Int64GetDatum(InvViewAvailable(&h->view));
			v[c++] = Int64GetDatum(h->stats.reserves);
			v[c++] = Int64GetDatum(h->stats.rejects);
			v[c++] = Int64GetDatum(h->stats.confirms);
			v[c++] = Int64GetDatum(h->stats.held_units);
			v[c++] = Int64GetDatum(h->stats.sold_units);
			Assert(c == HOT_SKUS_COLS);
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, v, nulls);
		}
	}
	return (Datum) 0;
}
