/*
 * reconciler_admin.c
 *	  inventory.set_reconciler(fn): names the application's function that
 *	  the expiry asks before it settles an overdue reservation, or with
 *	  NULL removes it.
 *
 * The setting is the function inventory.reconciler(order_id, batch_id),
 * whose SQL-standard body calls fn (tables/reconciler.c says why).  The
 * caller may not create functions in the extension's schema: the DDL runs
 * as the schema's owner, from identifiers read from the catalogs, and the
 * function is then given to the caller, who alone may execute it.
 */
#include "postgres.h"

#include "fmgr.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"

#include "api/args.h"
#include "tables/catalog.h"
#include "tables/reconciler.h"
#include "tables/stmt.h"

PG_FUNCTION_INFO_V1(inventory_set_reconciler);
Datum
inventory_set_reconciler(PG_FUNCTION_ARGS)
{
	const char *self;
	Oid			caller = GetUserId();

	CheckWritable("inventory.set_reconciler()");
	self = quote_qualified_identifier(get_namespace_name(InvGetCatalog()->schema),
									  RECONCILER_NAME);
	if (PG_ARGISNULL(0))
	{
		const char *sql[2];

		/* the waits were for its next asks */
		sql[0] = psprintf("DROP FUNCTION IF EXISTS %s(text, integer)", self);
		sql[1] = "DELETE FROM inventory.reconcile_wait";
		InvSqlRunAsOwner(sql, 2);
	}
	else
	{
		Oid			target = PG_GETARG_OID(0);
		char	   *name;
		const char *sql[4];
		Reconciler	r;

		ReconcilerCheckTarget(target, caller);
		name = quote_qualified_identifier(get_namespace_name(get_func_namespace(target)),
										  get_func_name(target));
		sql[0] = psprintf("CREATE OR REPLACE FUNCTION %s(order_id text, batch_id integer)"
						  " RETURNS text LANGUAGE sql VOLATILE PARALLEL UNSAFE"
						  " RETURN %s(order_id, batch_id)", self, name);
		sql[1] = psprintf("ALTER FUNCTION %s(text, integer) OWNER TO %s",
						  self, quote_identifier(GetUserNameFromId(caller, false)));
		sql[2] = psprintf("REVOKE ALL ON FUNCTION %s(text, integer) FROM PUBLIC", self);
		sql[3] = psprintf("COMMENT ON FUNCTION %s(text, integer) IS %s", self,
						  quote_literal_cstr(psprintf("the reconciler of this database, set by inventory.set_reconciler(): the expiry asks %s about each overdue reservation, as its owner",
													  format_procedure(target))));
		InvSqlRunAsOwner(sql, 4);
		if (!ReconcilerFind(&r) || r.target != target)
			elog(ERROR, "inventory.reconciler does not call the function just set");
	}
	PG_RETURN_VOID();
}
