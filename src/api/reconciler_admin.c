/*
 * reconciler_admin.c
 *	  Administering a database's reconciler: inventory.set_reconciler(fn,
 *	  timeout, retry, max_asks, max_wait) names the application's function
 *	  that the expiry asks before it settles an overdue reservation, and
 *	  its timing, or with NULL removes it; inventory.stop_worker() ends the
 *	  worker of the database, a runaway reconciler's ask with it.
 *
 * The setting is the function inventory.reconciler(order_id, batch_id,
 * timeout, retry, max_asks, max_wait), whose SQL-standard body calls fn
 * and whose parameter defaults are the timing (maintenance/reconciler.c
 * says why).  The caller may not create functions in the extension's
 * schema: the DDL runs as the schema's owner, from identifiers read from
 * the catalogs, and the function is then given to the caller, who alone
 * may execute it.
 */
#include "postgres.h"

#include "fmgr.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/timestamp.h"

#include "api/args.h"
#include "maintenance/reconciler.h"
#include "shmem/pool.h"
#include "tables/catalog.h"
#include "tables/sandbox.h"
#include "tables/stmt.h"

/* An interval argument in ms, or 0 when NULL; refused unless positive. */
static int64
ArgIntervalMs(FunctionCallInfo fcinfo, int argno, const char *name)
{
	Interval   *i;
	int64		ms;

	if (PG_NARGS() <= argno || PG_ARGISNULL(argno))
		return 0;
	i = PG_GETARG_INTERVAL_P(argno);
	ms = (i->time + (i->day + (int64) i->month * DAYS_PER_MONTH) * USECS_PER_DAY) / 1000;
	if (ms <= 0 || ms > (int64) INT_MAX * 1000)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must be at least 1 millisecond and less than 68 years", name)));
	return ms;
}

/* The value of an interval default, as SQL. */
static char *
IntervalSql(int64 ms)
{
	if (ms == 0)
		return "NULL::interval";
	return psprintf("'%lld milliseconds'::interval", (long long) ms);
}

PG_FUNCTION_INFO_V1(inventory_set_reconciler);
Datum
inventory_set_reconciler(PG_FUNCTION_ARGS)
{
	const char *self;
	Oid			caller = GetUserId();

	SandboxRefuse();
	ArgCheckWritable("inventory.set_reconciler()");
	self = quote_qualified_identifier(get_namespace_name(InvGetCatalog()->schema),
									  RECONCILER_NAME);
	if (PG_ARGISNULL(0))
	{
		Reconciler	r;
		const char *sql[2];

		if (!ReconcilerFind(&r))
			PG_RETURN_VOID();
		/* the waits were for its next asks */
		sql[0] = psprintf("DROP FUNCTION %s", format_procedure_qualified(r.fn));
		sql[1] = "DELETE FROM inventory.reconcile_wait";
		InvSqlRunAsOwner(sql, 2);
	}
	else
	{
		Oid			target = PG_GETARG_OID(0);
		char	   *name;
		const char *sql[4];
		Reconciler	want;
		Reconciler	r;

		ReconcilerCheckSetter(target, caller);
		memset(&want, 0, sizeof(want));
		want.timeout_ms = ArgIntervalMs(fcinfo, 1, "timeout");
		want.retry_ms = ArgIntervalMs(fcinfo, 2, "retry");
		if (PG_NARGS() > 3 && !PG_ARGISNULL(3))
		{
			want.max_asks = PG_GETARG_INT32(3);
			if (want.max_asks < 1)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("max_asks must be at least 1")));
		}
		want.max_wait_ms = ArgIntervalMs(fcinfo, 4, "max_wait");
		ReconcilerCheckTiming(&want);

		name = quote_qualified_identifier(get_namespace_name(get_func_namespace(target)),
										  get_func_name(target));
		sql[0] = psprintf("CREATE OR REPLACE FUNCTION %s(order_id text, batch_id integer,"
						  " timeout interval DEFAULT %s, retry interval DEFAULT %s,"
						  " max_asks integer DEFAULT %s, max_wait interval DEFAULT %s)"
						  " RETURNS text LANGUAGE sql VOLATILE PARALLEL UNSAFE"
						  " RETURN %s(order_id, batch_id)",
						  self, IntervalSql(want.timeout_ms), IntervalSql(want.retry_ms),
						  want.max_asks > 0 ? psprintf("%lld", (long long) want.max_asks) : "NULL::integer",
						  IntervalSql(want.max_wait_ms), name);
		sql[1] = psprintf("ALTER FUNCTION %s(text, integer, interval, interval, integer, interval) OWNER TO %s",
						  self, quote_identifier(GetUserNameFromId(caller, false)));
		sql[2] = psprintf("REVOKE ALL ON FUNCTION %s(text, integer, interval, interval, integer, interval) FROM PUBLIC",
						  self);
		sql[3] = psprintf("COMMENT ON FUNCTION %s(text, integer, interval, interval, integer, interval) IS %s",
						  self,
						  quote_literal_cstr(psprintf("the reconciler of this database, set by inventory.set_reconciler(): the expiry asks %s about each overdue reservation, as that function's owner; the defaults are its timing (NULL: the server's setting)",
													  format_procedure(target))));
		InvSqlRunAsOwner(sql, 4);
		if (!ReconcilerFind(&r) || r.target != target)
			elog(ERROR, "inventory.reconciler does not call the function just set");
	}
	PG_RETURN_VOID();
}

/*
 * Ends the worker that serves this database now, if one does: a reconciler
 * that does not return holds it, and it runs as a role no administrator
 * can signal.  Its ask counts as failed; the launcher sends a worker again
 * when work is due.
 */
PG_FUNCTION_INFO_V1(inventory_stop_worker);
Datum
inventory_stop_worker(PG_FUNCTION_ARGS)
{
	SandboxRefuse();
	PG_RETURN_BOOL(PoolStopWorker(MyDatabaseId));
}
