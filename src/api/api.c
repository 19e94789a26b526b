/*
 * api.c
 *	  The SQL API: reserve, confirm, cancel, extend, restock, withdraw,
 *	  adjust, available, expire and fold.
 *
 * Business outcomes are results, not errors: each call returns one
 * inventory.result row whose status says what happened (outcome.c).
 * Misuse -- NULLs, non-positive quantities (args.c), a key reused for a
 * different movement -- is an ERROR.  The movements themselves are made by
 * movement.c, which the calls on carts and batches and the express writer
 * share.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/datetime.h"
#include "utils/fmgrprotos.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"
#include "utils/typcache.h"

#include "api/args.h"
#include "enforce/rules.h"
#include "inventory.h"
#include "maintenance/expire.h"
#include "maintenance/fold.h"
#include "maintenance/reconcile.h"
#include "movement/movement.h"
#include "movement/outcome.h"
#include "shmem/cache.h"
#include "shmem/escrow.h"
#include "shmem/keyfilter.h"
#include "shmem/pool.h"
#include "tables/catalog.h"
#include "tables/ledger_row.h"
#include "tables/ledger_table.h"
#include "tables/sandbox.h"
#include "tables/stmt.h"
#include "types/state.h"
#include "xact/pending.h"

/* ---- statements ---- */

static InvStmt insert_sku = {
	"INSERT INTO inventory.sku (sku) VALUES ($1) ON CONFLICT (sku) DO NOTHING",
	1, {TEXTOID}
};

static InvStmt lock_sku = {
	"SELECT 1 FROM inventory.sku WHERE sku OPERATOR(pg_catalog.=) $1"
	" FOR NO KEY UPDATE",
	1, {TEXTOID}
};

/* a version-checked stocktake does not wait for another */
static InvStmt lock_sku_now = {
	"SELECT 1 FROM inventory.sku WHERE sku OPERATOR(pg_catalog.=) $1"
	" FOR NO KEY UPDATE SKIP LOCKED",
	1, {TEXTOID}
};

static InvStmt sku_exists = {
	"SELECT 1 FROM inventory.sku WHERE sku OPERATOR(pg_catalog.=) $1",
	1, {TEXTOID}
};

/* The arguments restock(), withdraw() and adjust() start with. */
typedef struct MovementArgs
{
	text	   *sku;
	int64		qty;			/* adjust(): the count, on_hand */
	text	   *order_id;
	int32		batch_id;
} MovementArgs;

/*
 * The start of restock(), withdraw() and adjust(): read their arguments
 * (sku, qty or on_hand, order_id, batch_id), lock the key, and if it is
 * taken, answer the replay (or raise the key's reuse).  Returns true when
 * answered.
 */
static bool
StartMovement(FunctionCallInfo fcinfo, InvKind kind, MovementArgs *a,
			  Outcome *o)
{
	LedgerRow	m;
	char		call[32];

	a->sku = ArgSku(fcinfo, 0);
	a->qty = kind == INV_KIND_ADJUST ? ArgQuantity(fcinfo, 1, "on_hand", true) :
		ArgQuantity(fcinfo, 1, "qty", false);
	a->order_id = ArgOrderId(fcinfo, 2);
	a->batch_id = ArgBatchId(fcinfo, 3);
	snprintf(call, sizeof(call), "inventory.%s()", LedgerKindName(kind));
	ArgCheckWritable(call);

	OutcomeInit(o, a->sku, a->qty);
	MovementLockKey(a->order_id, a->batch_id);
	if (!MovementFindKey(a->order_id, a->batch_id, &m))
		return false;
	OutcomeReplay(a->order_id, a->batch_id, &m, kind, a->sku, a->qty, NULL, o);
	return true;
}

/* ---- reserve ---- */

PG_FUNCTION_INFO_V1(inventory_reserve);
Datum
inventory_reserve(PG_FUNCTION_ARGS)
{
	text	   *sku = ArgSku(fcinfo, 0);
	int64		qty = ArgQuantity(fcinfo, 1, "qty", false);
	text	   *order_id = ArgOrderId(fcinfo, 2);
	int32		batch_id = ArgBatchId(fcinfo, 3);
	TimestampTz expires_at = ArgExpiresAt(fcinfo, 4, GetCurrentStatementStartTimestamp());
	bool		has_expected = !PG_ARGISNULL(5);
	int64		expected = has_expected ? PG_GETARG_INT64(5) : 0;
	/* reserve() of a 0.1 schema not updated yet has no buyer_id */
	text	   *buyer_id = ArgBuyerId(fcinfo, 6);
	Outcome		o;

	ArgCheckWritable("inventory.reserve()");
	MovementReserveAlone(sku, qty, order_id, batch_id, expires_at,
				 has_expected ? &expected : NULL, buyer_id, &o);
	return OutcomeAnswer(INV_CALL_RESERVE, &o);
}

/* ---- confirm, cancel, extend ---- */

static Datum
ReservationCall(FunctionCallInfo fcinfo, ReservationOp op)
{
	text	   *order_id = ArgOrderId(fcinfo, 0);
	int32		batch_id = ArgBatchId(fcinfo, 1);
	TimestampTz now = GetCurrentStatementStartTimestamp();
	TimestampTz new_expires = 0;
	Outcome		o;

	ArgCheckWritable(op == OP_CONFIRM ? "inventory.confirm()" :
				  op == OP_CANCEL ? "inventory.cancel()" : "inventory.extend()");

	if (op == OP_EXTEND)
	{
		if (PG_ARGISNULL(2))
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("ttl must not be null")));
		new_expires = ArgExpiresAt(fcinfo, 2, now);
	}
	MovementSettle(op, order_id, batch_id, now, new_expires, &o);
	return OutcomeAnswer(op == OP_CONFIRM ? INV_CALL_CONFIRM :
						 op == OP_CANCEL ? INV_CALL_CANCEL : INV_CALL_EXTEND, &o);
}

PG_FUNCTION_INFO_V1(inventory_confirm);
Datum
inventory_confirm(PG_FUNCTION_ARGS)
{
	return ReservationCall(fcinfo, OP_CONFIRM);
}

PG_FUNCTION_INFO_V1(inventory_cancel);
Datum
inventory_cancel(PG_FUNCTION_ARGS)
{
	return ReservationCall(fcinfo, OP_CANCEL);
}

PG_FUNCTION_INFO_V1(inventory_extend);
Datum
inventory_extend(PG_FUNCTION_ARGS)
{
	return ReservationCall(fcinfo, OP_EXTEND);
}

/* ---- restock, withdraw and adjust ---- */

PG_FUNCTION_INFO_V1(inventory_restock);
Datum
inventory_restock(PG_FUNCTION_ARGS)
{
	MovementArgs a;
	Outcome		o;
	InvKey		key;
	InvView		view;
	InvEntry   *entry;
	LedgerNew	n;

	if (StartMovement(fcinfo, INV_KIND_RESTOCK, &a, &o))
		return OutcomeAnswer(INV_CALL_RESTOCK, &o);

	CacheMakeKey(&key, VARDATA_ANY(a.sku), VARSIZE_ANY_EXHDR(a.sku));
	entry = PendingPin(&key);
	if (!PendingSkuExists(&key))
	{
		Datum		arg = PointerGetDatum(a.sku);
		int			spi;

		spi = InvSpiConnect();
		InvStmtRun(&insert_sku, &arg, NULL, false, 0);
		InvSpiFinish(spi);
	}

	MovementNew(&n, a.order_id, a.batch_id, INV_KIND_RESTOCK, a.sku, a.qty);
	LedgerInsert(&n);

	/* a SKU created by this call counts from zero */
	CacheView(entry, &view);
	o.ok = true;
	o.status = INV_STATUS_OK;
	o.has_counters = true;
	o.available = InvViewAvailable(&view);
	o.version = view.version;
	return OutcomeAnswer(INV_CALL_RESTOCK, &o);
}

/*
 * Takes qty available units out of on_hand for good (damaged goods, a
 * transfer to another server): admitted like a reservation of qty units,
 * so it never takes units that are reserved or held, but without the
 * rules of a sale, which are for buyers.
 */
PG_FUNCTION_INFO_V1(inventory_withdraw);
Datum
inventory_withdraw(PG_FUNCTION_ARGS)
{
	MovementArgs a;
	Outcome		o;
	InvKey		key;
	InvView		view;
	InvAdmit	admit;
	LedgerNew	n;

	if (StartMovement(fcinfo, INV_KIND_WITHDRAW, &a, &o))
		return OutcomeAnswer(INV_CALL_WITHDRAW, &o);

	CacheMakeKey(&key, VARDATA_ANY(a.sku), VARSIZE_ANY_EXHDR(a.sku));
	admit = PendingReserve(&key, a.qty, NULL, NULL, &view);
	OutcomeSetCounters(&o, &view);
	if (admit != INV_ADMIT_OK)
	{
		o.status = OutcomeRefusalStatus(admit);
		return OutcomeAnswer(INV_CALL_WITHDRAW, &o);
	}

	/* the trigger binds the hold just taken to the row */
	MovementNew(&n, a.order_id, a.batch_id, INV_KIND_WITHDRAW, a.sku, a.qty);
	LedgerInsert(&n);

	o.ok = true;
	o.status = INV_STATUS_OK;
	return OutcomeAnswer(INV_CALL_WITHDRAW, &o);
}

PG_FUNCTION_INFO_V1(inventory_adjust);
Datum
inventory_adjust(PG_FUNCTION_ARGS)
{
	MovementArgs a;
	bool		has_expected = !PG_ARGISNULL(4);
	int64		expected = has_expected ? PG_GETARG_INT64(4) : 0;
	int			mark = PendingMark();
	Outcome		o;
	InvKey		key;
	InvView		view;
	LedgerNew	n;
	Datum		arg;
	uint64		found;
	int64		delta;
	InvAdmit	admit;
	int			spi;

	if (StartMovement(fcinfo, INV_KIND_ADJUST, &a, &o))
		return OutcomeAnswer(INV_CALL_ADJUST, &o);

	/*
	 * Stocktakes of one SKU take turns, so each counts from the last; a
	 * version-checked one does not wait: a stocktake in flight is a change
	 * in flight, and its answer is version_conflict at once.
	 */
	CacheMakeKey(&key, VARDATA_ANY(a.sku), VARSIZE_ANY_EXHDR(a.sku));
	arg = PointerGetDatum(a.sku);
	spi = InvSpiConnect();
	found = InvStmtRun(has_expected ? &lock_sku_now : &lock_sku, &arg, NULL, false, 0);
	if (found == 0 && has_expected && InvStmtRun(&sku_exists, &arg, NULL, false, 0) > 0)
	{
		InvSpiFinish(spi);
		if (CacheRead(&key, true, &view))
			OutcomeSetCounters(&o, &view);
		o.status = INV_STATUS_VERSION_CONFLICT;
		return OutcomeAnswer(INV_CALL_ADJUST, &o);
	}
	InvSpiFinish(spi);
	if (found == 0)
	{
		o.status = INV_STATUS_UNKNOWN_SKU;
		return OutcomeAnswer(INV_CALL_ADJUST, &o);
	}

	admit = PendingStocktake(&key, a.qty, has_expected ? &expected : NULL,
							 &delta, &view);
	OutcomeSetCounters(&o, &view);
	if (admit != INV_ADMIT_OK)
	{
		PendingUnpinSince(&key, mark);
		o.status = OutcomeRefusalStatus(admit);
		return OutcomeAnswer(INV_CALL_ADJUST, &o);
	}

	MovementNew(&n, a.order_id, a.batch_id, INV_KIND_ADJUST, a.sku, delta);
	n.has_counted = true;
	n.counted = a.qty;
	LedgerInsert(&n);

	o.ok = true;
	o.status = INV_STATUS_OK;
	return OutcomeAnswer(INV_CALL_ADJUST, &o);
}

/* ---- available and expire ---- */

PG_FUNCTION_INFO_V1(inventory_available);
Datum
inventory_available(PG_FUNCTION_ARGS)
{
	text	   *sku = ArgSku(fcinfo, 0);
	InvKey		key;
	InvView		view;

	CacheMakeKey(&key, VARDATA_ANY(sku), VARSIZE_ANY_EXHDR(sku));
	if (!CacheRead(&key, true, &view))
		PG_RETURN_NULL();
	PG_RETURN_INT64(InvViewAvailable(&view));
}

PG_FUNCTION_INFO_V1(inventory_expire);
Datum
inventory_expire(PG_FUNCTION_ARGS)
{
	Reconciler	r;
	ReconcileCounts counts = {0};
	bool		more;
	int64		settled;

	ArgCheckWritable("inventory.expire()");
	if (!ReconcilerFind(&r))
		PG_RETURN_INT64(ExpireOverdue(ArgMaxRows(fcinfo, 0), NULL));
	/* one round: the asks of one transaction are bounded */
	settled = ReconcileOverdue(&r, ArgMaxRows(fcinfo, 0), &counts, &more);
	PoolReconcileReport(&counts);
	PG_RETURN_INT64(settled);
}

PG_FUNCTION_INFO_V1(inventory_fold);
Datum
inventory_fold(PG_FUNCTION_ARGS)
{
	ArgCheckWritable("inventory.fold()");
	PG_RETURN_INT64(FoldSettled(NULL, 0, ArgMaxRows(fcinfo, 0), true));
}

/* Reads this database's keys into the key filter now (the worker does it too). */
PG_FUNCTION_INFO_V1(inventory_key_filter_rebuild);
Datum
inventory_key_filter_rebuild(PG_FUNCTION_ARGS)
{
	int64		n;

	PreventCommandDuringRecovery("inventory.key_filter_rebuild()");
	n = KeyFilterRebuild();
	if (n < 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the key filter is off"),
				 errhint("Set inventory.key_filter_size above zero and restart the server.")));
	PG_RETURN_INT64(n);
}
