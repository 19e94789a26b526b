/*
 * fold.c
 *	  Folds settled movements into the SKUs' base counters.
 *
 * A SKU's counters are its base row in inventory.sku plus the effect of its
 * unfolded ledger rows.  A movement that can no longer change -- a restock,
 * a stocktake, a reservation in a final state -- can have its effect moved
 * into the base: the row is marked folded and the base grows by the same
 * amount, in one statement, so the counters do not change.  Loading a SKU
 * into the cache then reads only its base row and what changed since the
 * last fold, never its whole history.  The movement stays in the ledger:
 * its key still makes retried calls safe.
 *
 * The trigger allows these two writes only while inv_folding is set, and
 * registers them like any others; their effects cancel out at commit.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"

#include "catalog.h"
#include "fold.h"
#include "xact.h"

#define FOLD_SQL \
	"WITH batch AS (" \
	"  SELECT ctid FROM inventory.ledger" \
	"   WHERE NOT folded AND state IS DISTINCT FROM 'PENDING'" \
	"   LIMIT $1 FOR UPDATE SKIP LOCKED" \
	"), marked AS (" \
	"  UPDATE inventory.ledger l SET folded = true" \
	"    FROM batch WHERE l.ctid OPERATOR(pg_catalog.=) batch.ctid" \
	"  RETURNING l.sku," \
	"    inventory.effect_on_hand(l.kind, l.state, l.qty) AS on_hand," \
	"    inventory.effect_version(l.kind, l.state, l.qty) AS version" \
	"), bases AS (" \
	"  UPDATE inventory.sku s" \
	"     SET on_hand = s.on_hand OPERATOR(pg_catalog.+) d.on_hand," \
	"         version = s.version OPERATOR(pg_catalog.+) d.version" \
	"    FROM (SELECT sku, pg_catalog.sum(on_hand)::bigint AS on_hand," \
	"                 pg_catalog.sum(version)::bigint AS version" \
	"            FROM marked GROUP BY sku) d" \
	"   WHERE s.sku OPERATOR(pg_catalog.=) d.sku" \
	"  RETURNING 1" \
	")" \
	"SELECT (SELECT pg_catalog.count(*) FROM marked)," \
	"       (SELECT pg_catalog.count(*) FROM bases)"

/* Folds up to max_rows settled movements (all when negative). */
int64
FoldSettled(int64 max_rows)
{
	static SPIPlanPtr plan = NULL;
	static uint64 plan_epoch = 0;
	const InvCatalog *cat = InvGetCatalog();
	Datum		arg = Int64GetDatum(max_rows);
	char		nulls[2] = {max_rows < 0 ? 'n' : ' ', '\0'};
	int64		folded = 0;

	SPI_connect();
	if (plan == NULL || plan_epoch != cat->epoch)
	{
		Oid			argtype = INT8OID;
		SPIPlanPtr	p;

		if (plan)
			SPI_freeplan(plan);
		plan = NULL;
		p = SPI_prepare(FOLD_SQL, 1, &argtype);
		if (p == NULL)
			elog(ERROR, "could not prepare the fold: %s",
				 SPI_result_code_string(SPI_result));
		SPI_keepplan(p);
		plan = p;
		plan_epoch = cat->epoch;
	}

	inv_folding = true;
	PG_TRY();
	{
		bool		isnull;

		if (SPI_execute_plan(plan, &arg, nulls, false, 1) != SPI_OK_SELECT)
			elog(ERROR, "could not fold settled movements");
		folded = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
											 SPI_tuptable->tupdesc, 1, &isnull));
	}
	PG_FINALLY();
	{
		inv_folding = false;
	}
	PG_END_TRY();
	SPI_finish();
	return folded;
}

PG_FUNCTION_INFO_V1(inventory_fold);
Datum
inventory_fold(PG_FUNCTION_ARGS)
{
	int64		max_rows = -1;

	if (!PG_ARGISNULL(0))
	{
		max_rows = PG_GETARG_INT32(0);
		if (max_rows < 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("max_rows must not be negative"),
					 errhint("Pass NULL to fold every settled movement.")));
	}
	PG_RETURN_INT64(FoldSettled(max_rows));
}
