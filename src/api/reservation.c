/*
 * reservation.c
 *	  inventory.reservation(): what became of an order's reservations, for
 *	  the application that made them, which may not read the ledger.
 *
 * One lookup of the ledger's key index, with the statement's snapshot.  A
 * row may be an express writer's, committed but not yet flushed: the
 * answer waits until that commit is durable (ExpressFlushCommitted), as an
 * answer read from a row must.
 */
#include "postgres.h"

#include "fmgr.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "api/args.h"
#include "shmem/express.h"
#include "tables/ledger_table.h"
#include "tables/sandbox.h"
#include "types/state.h"

#define RESERVATION_COLUMNS 9

/*
 * inventory.reservation(order_id, batch_id DEFAULT NULL): one row per
 * reservation of the order, or of its line batch_id.
 */
PG_FUNCTION_INFO_V1(inventory_reservation);
Datum
inventory_reservation(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	text	   *order_id;
	LedgerRow  *rows;
	int			n;

	SandboxRefuse();
	order_id = ArgOrderId(fcinfo, 0);
	n = LedgerOrderReservations(order_id, !PG_ARGISNULL(1),
								PG_ARGISNULL(1) ? 0 : PG_GETARG_INT32(1), &rows);
	if (n > 0)
		ExpressFlushCommitted();

	InitMaterializedSRF(fcinfo, 0);
	for (int i = 0; i < n; i++)
	{
		const LedgerRow *r = &rows[i];
		Datum		v[RESERVATION_COLUMNS];
		bool		nulls[RESERVATION_COLUMNS] = {0};

		v[0] = PointerGetDatum(r->order_id);
		v[1] = Int32GetDatum(r->batch_id);
		v[2] = PointerGetDatum(r->sku);
		v[3] = Int64GetDatum(r->qty);
		v[4] = InvStateGetDatum(r->state);
		v[5] = TimestampTzGetDatum(r->created_at);
		v[6] = TimestampTzGetDatum(r->expires_at);
		nulls[6] = !r->has_expires_at;
		v[7] = TimestampTzGetDatum(r->settled_at);
		nulls[7] = !r->has_settled_at;
		v[8] = PointerGetDatum(r->settled_by);
		nulls[8] = r->settled_by == NULL;
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, v, nulls);
	}
	return (Datum) 0;
}
