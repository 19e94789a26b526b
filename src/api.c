/*
 * api.c
 *	  The SQL API: reserve, confirm, cancel, extend, restock, adjust,
 *	  available, expire and fold.
 *
 * Business outcomes are results, not errors: each call returns one
 * inventory.result row whose status says what happened, because a flash
 * sale refuses most calls and an ERROR would abort the caller's
 * transaction.  Misuse -- NULLs, non-positive quantities, a key reused for a
 * different movement -- is an ERROR.
 *
 * Every write goes through the executor's insert or update of a table row,
 * so the trigger (trigger.c) sees it like any other write.  reserve()
 * decides admission in shared memory first: a refusal reads no table (but
 * the key's index entry, to recognise a replay) and writes nothing.  A call
 * that writes a movement first locks its key, so that calls with the same
 * key take turns and a replay is recognised, never refused by the unique
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

#include "cache.h"
#include "catalog.h"
#include "maintenance.h"
#include "inventory.h"
#include "ledger.h"
#include "stmt.h"
#include "state.h"
#include "pending.h"

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

static InvStmt expire_one = {
	"UPDATE inventory.ledger SET state = 'EXPIRED' WHERE" KEY_IS
	" AND expires_at OPERATOR(pg_catalog.<=) $3",
	3, {TEXTOID, INT4OID, TIMESTAMPTZOID}
};

/* ---- arguments ---- */

/*
 * A call that may write refuses at once in a read-only transaction and on a
 * standby, with the server's usual errors, before it takes any hold.
 */
static void
CheckWritable(const char *call)
{
	PreventCommandIfReadOnly(call);
	PreventCommandDuringRecovery(call);
}

static text *
ArgText(FunctionCallInfo fcinfo, int n, const char *name)
{
	if (PG_ARGISNULL(n))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s must not be null", name)));
	return PG_GETARG_TEXT_PP(n);
}

static text *
ArgSku(FunctionCallInfo fcinfo, int n)
{
	text	   *t = ArgText(fcinfo, n, "sku");

	LedgerCheckSku(VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t));
	return t;
}

static text *
ArgOrderId(FunctionCallInfo fcinfo, int n)
{
	text	   *t = ArgText(fcinfo, n, "order_id");

	LedgerCheckOrderId(VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t));
	return t;
}

static int32
ArgBatchId(FunctionCallInfo fcinfo, int n)
{
	if (PG_ARGISNULL(n))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("batch_id must not be null")));
	return PG_GETARG_INT32(n);
}

static int64
ArgQuantity(FunctionCallInfo fcinfo, int n, const char *name, bool allow_zero)
{
	int64		v;

	if (PG_ARGISNULL(n))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s must not be null", name)));
	v = PG_GETARG_INT64(n);
	if (v < 0 || (v == 0 && !allow_zero))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg(allow_zero ? "%s must not be negative" : "%s must be positive", name),
				 errdetail("%s is %lld.", name, (long long) v)));
	return v;
}

/* now + ttl, where ttl must be positive; NULL means inventory.default_ttl */
static TimestampTz
ExpiresAt(FunctionCallInfo fcinfo, int n, TimestampTz now)
{
	TimestampTz expires;

	if (PG_ARGISNULL(n))
		return now + (TimestampTz) inv_default_ttl * USECS_PER_SEC;

	expires = DatumGetTimestampTz(DirectFunctionCall2(timestamptz_pl_interval,
													  TimestampTzGetDatum(now),
													  PG_GETARG_DATUM(n)));
	if (expires <= now)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("ttl must be positive"),
				 errdetail("ttl is %s.",
						   DatumGetCString(DirectFunctionCall1(interval_out,
															   PG_GETARG_DATUM(n))))));
	return expires;
}

/* ---- results ---- */

typedef struct Outcome
{
	bool		ok;
	const char *status;
	const char *sku;
	bool		has_qty;
	int64		qty;
	bool		has_state;
	InvState	state;
	bool		has_counters;
	int64		available;
	int64		version;
	bool		has_expires_at;
	TimestampTz expires_at;
} Outcome;

#define RESULT_NATTS 8

/*
 * The descriptor of inventory.result, kept across calls: looking it up for
 * every call would cost more than the rest of a refused reserve.
 */
static TupleDesc
ResultDesc(void)
{
	static TupleDesc desc = NULL;
	static uint64 desc_epoch = 0;
	const InvCatalog *cat = InvGetCatalog();

	if (desc == NULL || desc_epoch != cat->epoch)
	{
		MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);
		TupleDesc	d = lookup_rowtype_tupdesc_copy(cat->result_type, -1);

		MemoryContextSwitchTo(old);
		if (d->natts != RESULT_NATTS)
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("type inventory.result has %d attributes, expected %d",
							d->natts, RESULT_NATTS),
					 errhint("Bring the extension's objects in line with the installed library with ALTER EXTENSION inventory UPDATE; dropping the extension would drop its data.")));
		if (desc)
			FreeTupleDesc(desc);
		desc = d;
		desc_epoch = cat->epoch;
	}
	return desc;
}

static Datum
MakeResult(FunctionCallInfo fcinfo, const Outcome *o)
{
	TupleDesc	desc = ResultDesc();
	Datum		values[RESULT_NATTS];
	bool		nulls[RESULT_NATTS];

	memset(nulls, 0, sizeof(nulls));
	values[0] = BoolGetDatum(o->ok);
	values[1] = CStringGetTextDatum(o->status);
	nulls[2] = (o->sku == NULL);
	values[2] = o->sku ? CStringGetTextDatum(o->sku) : (Datum) 0;
	nulls[3] = !o->has_qty;
	values[3] = Int64GetDatum(o->qty);
	nulls[4] = !o->has_state;
	values[4] = InvStateGetDatum(o->state);
	nulls[5] = !o->has_counters;
	values[5] = Int64GetDatum(o->available);
	nulls[6] = !o->has_counters;
	values[6] = Int64GetDatum(o->version);
	nulls[7] = !o->has_expires_at;
	values[7] = TimestampTzGetDatum(o->expires_at);

	return HeapTupleGetDatum(heap_form_tuple(desc, values, nulls));
}

static void
SetCounters(Outcome *o, const InvView *view)
{
	o->has_counters = view->exists;
	o->available = InvViewAvailable(view);
	o->version = view->version;
}

/* Live counters of a SKU, from the cache. */
static void
ReadCounters(Outcome *o, const char *sku)
{
	InvKey		key;
	InvView		view;

	CacheMakeKey(&key, sku, strlen(sku));
	if (CacheRead(&key, true, &view))
		SetCounters(o, &view);
}

static void
SetMovement(Outcome *o, const LedgerRow *m)
{
	o->sku = text_to_cstring(m->sku);
	o->has_qty = true;
	o->qty = m->kind == INV_KIND_ADJUST && m->has_counted ? m->counted : m->qty;
	o->has_state = m->has_state;
	o->state = m->state;
	o->has_expires_at = m->has_expires_at;
	o->expires_at = m->expires_at;
}

static void
KeyReuseError(text *order_id, int32 batch_id, const LedgerRow *m)
{
	char	   *order = text_to_cstring(order_id);
	char	   *sku = text_to_cstring(m->sku);

	if (m->kind == INV_KIND_ADJUST)
		ereport(ERROR,
				(errcode(ERRCODE_UNIQUE_VIOLATION),
				 errmsg("key (order_id, batch_id)=(%s, %d) is already used by another movement",
						order, batch_id),
				 errdetail("The key belongs to a stocktake of sku \"%s\" to %lld units.",
						   sku, (long long) m->counted),
				 errhint("Give each movement its own (order_id, batch_id).")));
	ereport(ERROR,
			(errcode(ERRCODE_UNIQUE_VIOLATION),
			 errmsg("key (order_id, batch_id)=(%s, %d) is already used by another movement",
					order, batch_id),
			 errdetail("The key belongs to a %s of %lld units of sku \"%s\".",
					   m->kind == INV_KIND_RESERVE ? "reservation" : "restock",
					   (long long) m->qty, sku),
			 errhint("Give each movement its own (order_id, batch_id).")));
}

/* ---- reserve ---- */

/*
 * Reports a movement found under the caller's key: a replay of the same
 * movement is a duplicate, anything else an error.
 */
static void
ReplayOutcome(text *order_id, int32 batch_id, const LedgerRow *m,
			  InvKind kind, text *sku, int64 qty, Outcome *o)
{
	int64		other = (m->kind == INV_KIND_ADJUST) ? m->counted : m->qty;

	if (m->kind != kind || !LedgerRowIsSku(m, sku) || other != qty)
		KeyReuseError(order_id, batch_id, m);
	SetMovement(o, m);
	o->ok = true;
	o->status = "duplicate";
	ReadCounters(o, o->sku);
}

static bool
FindKey(text *order_id, int32 batch_id, LedgerRow *m)
{
	return LedgerFindMovement(VARDATA_ANY(order_id), VARSIZE_ANY_EXHDR(order_id),
							  batch_id, m);
}

static void
LockKey(text *order_id, int32 batch_id)
{
	LedgerLockKey(VARDATA_ANY(order_id), VARSIZE_ANY_EXHDR(order_id), batch_id);
}

static void
OutcomeInit(Outcome *o, text *sku, int64 qty)
{
	memset(o, 0, sizeof(Outcome));
	o->sku = text_to_cstring(sku);
	o->has_qty = true;
	o->qty = qty;
}

/* A new movement of qty units of sku under the key; the caller adds the rest. */
static void
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

/* The status of an admission that did not succeed. */
static const char *
RefusalStatus(InvAdmit admit)
{
	switch (admit)
	{
		case INV_ADMIT_UNKNOWN:
			return "unknown_sku";
		case INV_ADMIT_CONFLICT:
			return "version_conflict";
		case INV_ADMIT_INSUFFICIENT:
			return "insufficient";
		case INV_ADMIT_OK:
			break;
	}
	elog(ERROR, "inventory: an admitted change has no refusal status");
	pg_unreachable();
}

/*
 * The start of restock() and adjust(): lock the key, and if it is taken,
 * answer the replay (or raise the key's reuse).  Returns true when answered.
 */
static bool
AnsweredReplay(text *order_id, int32 batch_id, InvKind kind, text *sku,
			   int64 qty, Outcome *o)
{
	LedgerRow m;

	OutcomeInit(o, sku, qty);
	LockKey(order_id, batch_id);
	if (!FindKey(order_id, batch_id, &m))
		return false;
	ReplayOutcome(order_id, batch_id, &m, kind, sku, qty, o);
	return true;
}

PG_FUNCTION_INFO_V1(inventory_reserve);
Datum
inventory_reserve(PG_FUNCTION_ARGS)
{
	text	   *sku = ArgSku(fcinfo, 0);
	int64		qty = ArgQuantity(fcinfo, 1, "qty", false);
	text	   *order_id = ArgOrderId(fcinfo, 2);
	int32		batch_id = ArgBatchId(fcinfo, 3);
	TimestampTz now = GetCurrentStatementStartTimestamp();
	TimestampTz expires_at = ExpiresAt(fcinfo, 4, now);
	bool		has_expected = !PG_ARGISNULL(5);
	int64		expected = has_expected ? PG_GETARG_INT64(5) : 0;
	int			mark = PendingMark();
	Outcome		o;
	InvKey		key;
	InvView		view;
	InvAdmit	admit;
	LedgerRow m;

	CheckWritable("inventory.reserve()");

	OutcomeInit(&o, sku, qty);
	CacheMakeKey(&key, VARDATA_ANY(sku), VARSIZE_ANY_EXHDR(sku));

	/* is there enough?  decided in shared memory, before anything is read */
	admit = PendingReserve(&key, qty, has_expected ? &expected : NULL, &view);
	SetCounters(&o, &view);

	/* then, whatever the answer, is the key a replay? */
	LockKey(order_id, batch_id);
	if (admit == INV_ADMIT_OK)
	{
		if (!FindKey(order_id, batch_id, &m))
		{
			LedgerNew	n;

			NewMovement(&n, order_id, batch_id, INV_KIND_RESERVE, sku, qty);
			n.has_expires_at = true;
			n.expires_at = expires_at;
			LedgerInsert(&n);

			o.ok = true;
			o.status = "ok";
			o.has_state = true;
			o.state = INV_PENDING;
			o.has_expires_at = true;
			o.expires_at = expires_at;
			return MakeResult(fcinfo, &o);
		}
		/* a replay: give back the hold just taken */
		PendingDropUnbound(&key);
		PendingUnpinSince(&key, mark);
		ReplayOutcome(order_id, batch_id, &m, INV_KIND_RESERVE, sku, qty, &o);
		return MakeResult(fcinfo, &o);
	}

	/* refused; but a replay of a reservation made earlier is a duplicate */
	if (FindKey(order_id, batch_id, &m))
		ReplayOutcome(order_id, batch_id, &m, INV_KIND_RESERVE, sku, qty, &o);
	else
		o.status = RefusalStatus(admit);
	return MakeResult(fcinfo, &o);
}

/* ---- confirm, cancel, extend ---- */

typedef enum ReservationOp
{
	OP_CONFIRM,
	OP_CANCEL,
	OP_EXTEND
} ReservationOp;

/* The status of a call on a reservation that is already settled. */
static void
FinalOutcome(ReservationOp op, InvState state, Outcome *o)
{
	switch (state)
	{
		case INV_CONFIRMED:
			o->ok = (op == OP_CONFIRM);
			o->status = op == OP_CONFIRM ? "duplicate" : "confirmed";
			break;
		case INV_CANCELLED:
			o->ok = (op == OP_CANCEL);
			o->status = op == OP_CANCEL ? "duplicate" : "cancelled";
			break;
		case INV_EXPIRED:
			/* cancel wanted the units back on sale, and they are */
			o->ok = (op == OP_CANCEL);
			o->status = "expired";
			break;
		case INV_PENDING:
			elog(ERROR, "inventory: reservation is not settled");
	}
}

static Datum
ReservationCall(FunctionCallInfo fcinfo, ReservationOp op)
{
	text	   *order_id = ArgOrderId(fcinfo, 0);
	int32		batch_id = ArgBatchId(fcinfo, 1);
	TimestampTz now = GetCurrentStatementStartTimestamp();
	TimestampTz new_expires = 0;
	Outcome		o;
	int			spi;

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

	memset(&o, 0, sizeof(o));
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
		if (InvStmtRun(stmt, values, NULL, false, 0) == 1)
		{
			HeapTuple	tup = SPI_tuptable->vals[0];
			TupleDesc	desc = SPI_tuptable->tupdesc;
			char	   *sku = SPI_getvalue(tup, desc, 1);
			char	   *copy = SPI_palloc(strlen(sku) + 1);
			bool		isnull;

			strcpy(copy, sku);
			o.ok = true;
			o.status = "ok";
			o.sku = copy;
			o.has_qty = true;
			o.qty = DatumGetInt64(SPI_getbinval(tup, desc, 2, &isnull));
			o.has_state = true;
			o.state = op == OP_CONFIRM ? INV_CONFIRMED :
				op == OP_CANCEL ? INV_CANCELLED : INV_PENDING;
			o.has_expires_at = true;
			o.expires_at = DatumGetTimestampTz(SPI_getbinval(tup, desc, 3, &isnull));
			InvSpiFinish(spi);
			break;
		}
		InvSpiFinish(spi);

		if (!LedgerFindMovement(VARDATA_ANY(order_id), VARSIZE_ANY_EXHDR(order_id),
								batch_id, &m))
		{
			o.status = "not_found";
			break;
		}
		if (m.kind != INV_KIND_RESERVE)
			KeyReuseError(order_id, batch_id, &m);
		SetMovement(&o, &m);

		if (m.state != INV_PENDING)
		{
			FinalOutcome(op, m.state, &o);
			break;
		}

		/* an overdue reservation is expired now, as the worker would */
		if (op != OP_CANCEL && m.expires_at <= now)
		{
			uint64		expired;

			spi = InvSpiConnect();
			expired = InvStmtRun(&expire_one, values, NULL, false, 0);
			InvSpiFinish(spi);
			if (expired == 1)
			{
				o.state = INV_EXPIRED;
				FinalOutcome(op, INV_EXPIRED, &o);
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

	if (o.sku)
		ReadCounters(&o, o.sku);
	return MakeResult(fcinfo, &o);
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

/* ---- restock and adjust ---- */

PG_FUNCTION_INFO_V1(inventory_restock);
Datum
inventory_restock(PG_FUNCTION_ARGS)
{
	text	   *sku = ArgSku(fcinfo, 0);
	int64		qty = ArgQuantity(fcinfo, 1, "qty", false);
	text	   *order_id = ArgOrderId(fcinfo, 2);
	int32		batch_id = ArgBatchId(fcinfo, 3);
	Outcome		o;
	InvKey		key;
	InvView		view;
	InvEntry   *entry;
	LedgerNew	n;

	CheckWritable("inventory.restock()");
	if (AnsweredReplay(order_id, batch_id, INV_KIND_RESTOCK, sku, qty, &o))
		return MakeResult(fcinfo, &o);

	CacheMakeKey(&key, VARDATA_ANY(sku), VARSIZE_ANY_EXHDR(sku));
	entry = PendingPin(&key);
	if (!PendingSkuExists(&key))
	{
		Datum		arg = PointerGetDatum(sku);
		int			spi;

		spi = InvSpiConnect();
		InvStmtRun(&insert_sku, &arg, NULL, false, 0);
		InvSpiFinish(spi);
	}

	NewMovement(&n, order_id, batch_id, INV_KIND_RESTOCK, sku, qty);
	LedgerInsert(&n);

	/* a SKU created by this call counts from zero */
	CacheView(entry, &view);
	o.ok = true;
	o.status = "ok";
	o.has_counters = true;
	o.available = InvViewAvailable(&view);
	o.version = view.version;
	return MakeResult(fcinfo, &o);
}

PG_FUNCTION_INFO_V1(inventory_adjust);
Datum
inventory_adjust(PG_FUNCTION_ARGS)
{
	text	   *sku = ArgSku(fcinfo, 0);
	int64		counted = ArgQuantity(fcinfo, 1, "on_hand", true);
	text	   *order_id = ArgOrderId(fcinfo, 2);
	int32		batch_id = ArgBatchId(fcinfo, 3);
	bool		has_expected = !PG_ARGISNULL(4);
	int64		expected = has_expected ? PG_GETARG_INT64(4) : 0;
	int			mark = PendingMark();
	Outcome		o;
	InvKey		key;
	InvView		view;
	LedgerNew	n;
	Datum		arg = PointerGetDatum(sku);
	uint64		found;
	int64		delta;
	InvAdmit	admit;
	int			spi;

	CheckWritable("inventory.adjust()");
	if (AnsweredReplay(order_id, batch_id, INV_KIND_ADJUST, sku, counted, &o))
		return MakeResult(fcinfo, &o);

	/* stocktakes of one SKU take turns, so each counts from the last */
	spi = InvSpiConnect();
	found = InvStmtRun(&lock_sku, &arg, NULL, false, 0);
	InvSpiFinish(spi);
	if (found == 0)
	{
		o.status = "unknown_sku";
		return MakeResult(fcinfo, &o);
	}

	CacheMakeKey(&key, VARDATA_ANY(sku), VARSIZE_ANY_EXHDR(sku));
	admit = PendingStocktake(&key, counted, has_expected ? &expected : NULL,
							 &delta, &view);
	SetCounters(&o, &view);
	if (admit != INV_ADMIT_OK)
	{
		PendingUnpinSince(&key, mark);
		o.status = RefusalStatus(admit);
		return MakeResult(fcinfo, &o);
	}

	NewMovement(&n, order_id, batch_id, INV_KIND_ADJUST, sku, delta);
	n.has_counted = true;
	n.counted = counted;
	LedgerInsert(&n);

	o.ok = true;
	o.status = "ok";
	return MakeResult(fcinfo, &o);
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

/* max_rows of expire() and fold(): NULL, all, is -1 */
static int64
ArgMaxRows(FunctionCallInfo fcinfo, int n)
{
	int32		v;

	if (PG_ARGISNULL(n))
		return -1;
	v = PG_GETARG_INT32(n);
	if (v < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("max_rows must not be negative"),
				 errdetail("max_rows is %d.", v),
				 errhint("Pass NULL for no limit.")));
	return v;
}

PG_FUNCTION_INFO_V1(inventory_expire);
Datum
inventory_expire(PG_FUNCTION_ARGS)
{
	CheckWritable("inventory.expire()");
	PG_RETURN_INT64(ExpireOverdue(ArgMaxRows(fcinfo, 0)));
}

PG_FUNCTION_INFO_V1(inventory_fold);
Datum
inventory_fold(PG_FUNCTION_ARGS)
{
	CheckWritable("inventory.fold()");
	PG_RETURN_INT64(FoldSettled(NULL, 0, ArgMaxRows(fcinfo, 0), true));
}
