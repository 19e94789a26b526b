/*
 * api.c
 *	  The SQL API: reserve, confirm, cancel, extend, restock, withdraw,
 *	  adjust, available, expire and fold.
 *
 * Business outcomes are results, not errors: each call returns one
 * inventory.result row whose status says what happened (outcome.c).
 * Misuse -- NULLs, non-positive quantities (args.c), a key reused for a
 * different movement -- is an ERROR.
 *
 * Every write goes through the executor's insert or update of a table row,
 * so the trigger (trigger.c) sees it like any other write.  reserve()
 * decides admission in shared memory first: a refusal reads no table and
 * writes nothing; it looks its key up, to recognise a replay, only when the
 * key filter (keyfilter.c) says the key may be in the ledger.  A call that
 * writes a movement first locks its key, so that calls with the same key
 * take turns and a replay is recognised, never refused by the unique
 * index.
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

#include "api/api.h"
#include "api/args.h"
#include "api/outcome.h"
#include "enforce/rules.h"
#include "inventory.h"
#include "maintenance/reconcile.h"
#include "shmem/cache.h"
#include "shmem/escrow.h"
#include "shmem/keyfilter.h"
#include "shmem/pool.h"
#include "tables/catalog.h"
#include "tables/ledger_row.h"
#include "tables/ledger_table.h"
#include "tables/sandbox.h"
#include "tables/maintenance.h"
#include "tables/stmt.h"
#include "types/state.h"
#include "xact/pending.h"

/* ---- statements ---- */

#define KEY_IS \
	" order_id OPERATOR(pg_catalog.=) $1 AND batch_id OPERATOR(pg_catalog.=) $2" \
	" AND kind OPERATOR(pg_catalog.=) 'reserve'" \
	" AND state OPERATOR(pg_catalog.=) 'PENDING'"

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

static InvStmt confirm_pending = {
	"UPDATE inventory.ledger SET state = 'CONFIRMED' WHERE" KEY_IS
	" AND expires_at OPERATOR(pg_catalog.>) $3"
	" RETURNING sku, qty, expires_at",
	3, {TEXTOID, INT4OID, TIMESTAMPTZOID}
};

static InvStmt cancel_pending = {
	"UPDATE inventory.ledger SET state = 'CANCELLED' WHERE" KEY_IS
	" RETURNING sku, qty, expires_at",
	2, {TEXTOID, INT4OID}
};

static InvStmt extend_pending = {
	"UPDATE inventory.ledger SET expires_at = $4 WHERE" KEY_IS
	" AND expires_at OPERATOR(pg_catalog.>) $3"
	" RETURNING sku, qty, expires_at",
	4, {TEXTOID, INT4OID, TIMESTAMPTZOID, TIMESTAMPTZOID}
};

/* a reservation past its expires_at, while a reconciler is set */
static InvStmt confirm_late = {
	"UPDATE inventory.ledger SET state = 'CONFIRMED' WHERE" KEY_IS
	" AND expires_at OPERATOR(pg_catalog.<=) $3"
	" RETURNING sku, qty, expires_at",
	3, {TEXTOID, INT4OID, TIMESTAMPTZOID}
};

static InvStmt expire_one = {
	"UPDATE inventory.ledger SET state = 'EXPIRED' WHERE" KEY_IS
	" AND expires_at OPERATOR(pg_catalog.<=) $3",
	3, {TEXTOID, INT4OID, TIMESTAMPTZOID}
};

/* ---- keys ---- */

/* May the key be in the ledger?  See keyfilter.c. */
static bool
KeyMaybe(text *order_id, int32 batch_id)
{
	return KeyFilterMaybe(VARDATA_ANY(order_id), VARSIZE_ANY_EXHDR(order_id),
						  batch_id);
}

/* The movement under a key the filter says may be in the ledger, if any. */
bool
LookUpKey(text *order_id, int32 batch_id, LedgerRow *m)
{
	if (LedgerFindMovement(VARDATA_ANY(order_id), VARSIZE_ANY_EXHDR(order_id),
						   batch_id, m))
		return true;
	KeyFilterFalsePositive();
	return false;
}

/*
 * The movement under a key, if there is one: looked up in the key's index
 * unless the key filter knows the key is absent.  The caller holds the
 * key's lock.
 */
bool
FindKey(text *order_id, int32 batch_id, LedgerRow *m)
{
	return KeyMaybe(order_id, batch_id) && LookUpKey(order_id, batch_id, m);
}

void
LockKey(text *order_id, int32 batch_id)
{
	LedgerLockKey(VARDATA_ANY(order_id), VARSIZE_ANY_EXHDR(order_id), batch_id);
}

/* A new movement of qty units of sku under the key; the caller adds the rest. */
void
NewMovement(LedgerNew *n, text *order_id, int32 batch_id, InvKind kind,
			text *sku, int64 qty)
{
	memset(n, 0, sizeof(LedgerNew));
	n->order_id = order_id;
	n->batch_id = batch_id;
	n->kind = kind;
	n->sku = sku;
	n->qty = qty;
}

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
	CheckWritable(call);

	OutcomeInit(o, a->sku, a->qty);
	LockKey(a->order_id, a->batch_id);
	if (!FindKey(a->order_id, a->batch_id, &m))
		return false;
	OutcomeReplay(a->order_id, a->batch_id, &m, kind, a->sku, a->qty, NULL, o);
	return true;
}

/* ---- reserve ---- */

/*
 * One reservation: qty units of sku for (order_id, batch_id) until
 * expires_at, for buyer_id (or NULL), checked against expected_version
 * (or NULL); fills *o with the outcome.  Its row, if any, goes through
 * writer, which a batch keeps open for all its rows.  Shared by reserve()
 * and reserve_many().
 */
void
ReserveOne(text *sku, int64 qty, text *order_id, int32 batch_id,
		   TimestampTz expires_at, const int64 *expected_version,
		   text *buyer_id, LedgerWriter *writer, Outcome *o)
{
	InvSale		sale = {GetCurrentStatementStartTimestamp(), buyer_id != NULL};
	int			mark = PendingMark();
	InvKey		key;
	InvView		view;
	InvAdmit	admit;
	LedgerRow	m;

	OutcomeInit(o, sku, qty);
	CacheMakeKey(&key, VARDATA_ANY(sku), VARSIZE_ANY_EXHDR(sku));

	/* is it on sale, is there enough?  decided in shared memory first */
	admit = PendingReserve(&key, qty, expected_version, &sale, &view);
	OutcomeSetCounters(o, &view);

	/* then, whatever the answer, is the key a replay? */
	if (admit == INV_ADMIT_OK)
	{
		LockKey(order_id, batch_id);
		if (!FindKey(order_id, batch_id, &m))
		{
			LedgerNew	n;
			int64		holding;
			bool		took_lock;

			/* and is the buyer within the SKU's limit? (rules.c) */
			if (view.rules.max_per_buyer > 0 &&
				!RulesAdmitBuyer(sku, buyer_id, qty, view.rules.max_per_buyer,
								 &holding, &took_lock))
			{
				PendingDropUnbound(&key);
				PendingUnpinSince(&key, mark);
				o->status = INV_STATUS_LIMIT_EXCEEDED;
				OutcomeReadCounters(o);
				return;
			}

			NewMovement(&n, order_id, batch_id, INV_KIND_RESERVE, sku, qty);
			n.has_expires_at = true;
			n.expires_at = expires_at;
			n.buyer_id = buyer_id;
			n.rules_checked = true;
			LedgerWriterInsert(writer, &n);

			o->ok = true;
			o->status = INV_STATUS_OK;
			o->has_state = true;
			o->state = INV_PENDING;
			o->has_expires_at = true;
			o->expires_at = expires_at;
			return;
		}
		/* a replay: give back the hold just taken */
		PendingDropUnbound(&key);
		PendingUnpinSince(&key, mark);
		OutcomeReplay(order_id, batch_id, &m, INV_KIND_RESERVE, sku, qty,
					  buyer_id, o);
		return;
	}

	/*
	 * Refused; but a replay of a reservation made earlier is a duplicate.  A
	 * key the filter knows to be absent needs neither its lock nor a lookup.
	 */
	if (KeyMaybe(order_id, batch_id))
	{
		LockKey(order_id, batch_id);
		if (LookUpKey(order_id, batch_id, &m))
		{
			OutcomeReplay(order_id, batch_id, &m, INV_KIND_RESERVE, sku, qty,
						  buyer_id, o);
			return;
		}
	}
	o->status = RefusalStatus(admit);
}

/* One reservation on its own, in the caller's transaction: ReserveOne(). */
void
ReserveAlone(text *sku, int64 qty, text *order_id, int32 batch_id,
			 TimestampTz expires_at, const int64 *expected_version,
			 text *buyer_id, Outcome *o)
{
	LedgerWriter writer;

	LedgerWriterInit(&writer);
	ReserveOne(sku, qty, order_id, batch_id, expires_at, expected_version,
			   buyer_id, &writer, o);
	LedgerWriterClose(&writer);
}

PG_FUNCTION_INFO_V1(inventory_reserve);
Datum
inventory_reserve(PG_FUNCTION_ARGS)
{
	text	   *sku = ArgSku(fcinfo, 0);
	int64		qty = ArgQuantity(fcinfo, 1, "qty", false);
	text	   *order_id = ArgOrderId(fcinfo, 2);
	int32		batch_id = ArgBatchId(fcinfo, 3);
	TimestampTz expires_at = ExpiresAt(fcinfo, 4, GetCurrentStatementStartTimestamp());
	bool		has_expected = !PG_ARGISNULL(5);
	int64		expected = has_expected ? PG_GETARG_INT64(5) : 0;
	/* reserve() of a 0.1 schema not updated yet has no buyer_id */
	text	   *buyer_id = ArgBuyerId(fcinfo, 6);
	Outcome		o;

	CheckWritable("inventory.reserve()");
	ReserveAlone(sku, qty, order_id, batch_id, expires_at,
				 has_expected ? &expected : NULL, buyer_id, &o);
	return OutcomeAnswer(INV_CALL_RESERVE, &o);
}

/* ---- confirm, cancel, extend ---- */

/* Does this database have a reconciler? */
static bool
ReconcilerSet(void)
{
	Reconciler	r;

	return ReconcilerFind(&r);
}

/*
 * Confirms, cancels or extends (to new_expires) the reservation under the
 * key, as of now, and fills *o with the outcome.
 */
void
SettleReservation(ReservationOp op, text *order_id, int32 batch_id,
				  TimestampTz now, TimestampTz new_expires, Outcome *o)
{
	int			spi;
	bool		late = false;	/* confirming past expires_at */

	memset(o, 0, sizeof(Outcome));
	LockKey(order_id, batch_id);
	for (int attempt = 0;; attempt++)
	{
		Datum		values[4];
		InvStmt    *stmt;
		LedgerRow m;

		values[0] = PointerGetDatum(order_id);
		values[1] = Int32GetDatum(batch_id);
		values[2] = TimestampTzGetDatum(now);
		values[3] = TimestampTzGetDatum(new_expires);
		stmt = op == OP_CONFIRM ? &confirm_pending :
			op == OP_CANCEL ? &cancel_pending : &extend_pending;

		spi = InvSpiConnect();
		if ((late ? RunLateConfirm(&confirm_late, values) : InvStmtRun(stmt, values, NULL, false, 0)) == 1)
		{
			HeapTuple	tup = SPI_tuptable->vals[0];
			TupleDesc	desc = SPI_tuptable->tupdesc;
			bool		isnull;

			o->ok = true;
			o->status = INV_STATUS_OK;
			/* out of SPI's memory, which InvSpiFinish() frees */
			o->sku = DatumGetTextPP(SPI_datumTransfer(SPI_getbinval(tup, desc, 1, &isnull),
													  false, -1));
			o->has_qty = true;
			o->qty = DatumGetInt64(SPI_getbinval(tup, desc, 2, &isnull));
			o->has_state = true;
			o->state = op == OP_CONFIRM ? INV_CONFIRMED :
				op == OP_CANCEL ? INV_CANCELLED : INV_PENDING;
			o->has_expires_at = true;
			o->expires_at = DatumGetTimestampTz(SPI_getbinval(tup, desc, 3, &isnull));
			InvSpiFinish(spi);
			break;
		}
		InvSpiFinish(spi);

		if (!LedgerFindMovement(VARDATA_ANY(order_id), VARSIZE_ANY_EXHDR(order_id),
								batch_id, &m))
		{
			o->status = INV_STATUS_NOT_FOUND;
			break;
		}
		if (m.kind != INV_KIND_RESERVE)
			KeyReuseError(order_id, batch_id, &m);
		OutcomeSetMovement(o, &m);

		if (m.state != INV_PENDING)
		{
			OutcomeSettled(op, m.state, o);
			break;
		}

		/*
		 * An overdue reservation: with a reconciler, the application's own
		 * late confirm is its answer (the units were never released);
		 * otherwise it is expired now, as the worker would.
		 */
		if (op == OP_CONFIRM && m.expires_at <= now && !late && ReconcilerSet())
		{
			late = true;
			continue;
		}
		if (op != OP_CANCEL && m.expires_at <= now && !late)
		{
			uint64		expired;

			spi = InvSpiConnect();
			expired = InvStmtRun(&expire_one, values, NULL, false, 0);
			InvSpiFinish(spi);
			if (expired == 1)
			{
				o->state = INV_EXPIRED;
				OutcomeSettled(op, INV_EXPIRED, o);
				break;
			}
		}

		/* it changed under us, or our snapshot cannot see it yet */
		if (attempt >= 3)
			ereport(ERROR,
					(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
					 errmsg("could not serialize access due to concurrent update of reservation (%s, %d)",
							text_to_cstring(order_id), batch_id),
					 errhint("Retry the call in a new transaction.")));
	}

	if (o->sku)
		OutcomeReadCounters(o);
}

static Datum
ReservationCall(FunctionCallInfo fcinfo, ReservationOp op)
{
	text	   *order_id = ArgOrderId(fcinfo, 0);
	int32		batch_id = ArgBatchId(fcinfo, 1);
	TimestampTz now = GetCurrentStatementStartTimestamp();
	TimestampTz new_expires = 0;
	Outcome		o;

	CheckWritable(op == OP_CONFIRM ? "inventory.confirm()" :
				  op == OP_CANCEL ? "inventory.cancel()" : "inventory.extend()");

	if (op == OP_EXTEND)
	{
		if (PG_ARGISNULL(2))
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("ttl must not be null")));
		new_expires = ExpiresAt(fcinfo, 2, now);
	}
	SettleReservation(op, order_id, batch_id, now, new_expires, &o);
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

	NewMovement(&n, a.order_id, a.batch_id, INV_KIND_RESTOCK, a.sku, a.qty);
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
		o.status = RefusalStatus(admit);
		return OutcomeAnswer(INV_CALL_WITHDRAW, &o);
	}

	/* the trigger binds the hold just taken to the row */
	NewMovement(&n, a.order_id, a.batch_id, INV_KIND_WITHDRAW, a.sku, a.qty);
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
		o.status = RefusalStatus(admit);
		return OutcomeAnswer(INV_CALL_ADJUST, &o);
	}

	NewMovement(&n, a.order_id, a.batch_id, INV_KIND_ADJUST, a.sku, delta);
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

	CheckWritable("inventory.expire()");
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
	CheckWritable("inventory.fold()");
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
