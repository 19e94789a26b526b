/*
 * movement.c
 *	  One movement on the tables and the cache: the engine that reserve(),
 *	  confirm(), cancel() and extend(), the calls on carts and batches, and
 *	  the express writer share.
 *
 * reserve() decides admission in shared memory first: a refusal reads no
 * table and writes nothing; it looks its key up, to recognise a replay,
 * only when the key filter (keyfilter.c) says the key may be in the
 * ledger.  A call that writes a movement first locks its key, so that calls
 * with the same key take turns and a replay is recognised, never refused by
 * the unique index.  Every write goes through the executor's insert or
 * update of a table row, so the trigger (trigger.c) sees it like any
 * other write.
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "enforce/rules.h"
#include "maintenance/reconciler.h"
#include "movement/movement.h"
#include "movement/outcome.h"
#include "shmem/cache.h"
#include "shmem/keyfilter.h"
#include "tables/ledger_row.h"
#include "tables/ledger_table.h"
#include "tables/sandbox.h"
#include "tables/stmt.h"
#include "xact/pending.h"

/* ---- statements ---- */

#define KEY_IS \
	" order_id OPERATOR(pg_catalog.=) $1 AND batch_id OPERATOR(pg_catalog.=) $2" \
	" AND kind OPERATOR(pg_catalog.=) 'reserve'" \
	" AND state OPERATOR(pg_catalog.=) 'PENDING'"

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
MovementLookUpKey(text *order_id, int32 batch_id, LedgerRow *m)
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
MovementFindKey(text *order_id, int32 batch_id, LedgerRow *m)
{
	return KeyMaybe(order_id, batch_id) && MovementLookUpKey(order_id, batch_id, m);
}

void
MovementLockKey(text *order_id, int32 batch_id)
{
	LedgerLockKey(VARDATA_ANY(order_id), VARSIZE_ANY_EXHDR(order_id), batch_id);
}

/* A new movement of qty units of sku under the key; the caller adds the rest. */
void
MovementNew(LedgerNew *n, text *order_id, int32 batch_id, InvKind kind,
			text *sku, int64 qty)
{
	memset(n, 0, sizeof(LedgerNew));
	n->order_id = order_id;
	n->batch_id = batch_id;
	n->kind = kind;
	n->sku = sku;
	n->qty = qty;
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
MovementReserve(text *sku, int64 qty, text *order_id, int32 batch_id,
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
		MovementLockKey(order_id, batch_id);
		if (!MovementFindKey(order_id, batch_id, &m))
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
				o->takeable_only = true;
				OutcomeReadCounters(o);
				return;
			}

			MovementNew(&n, order_id, batch_id, INV_KIND_RESERVE, sku, qty);
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
		MovementLockKey(order_id, batch_id);
		if (MovementLookUpKey(order_id, batch_id, &m))
		{
			OutcomeReplay(order_id, batch_id, &m, INV_KIND_RESERVE, sku, qty,
						  buyer_id, o);
			return;
		}
	}
	o->status = OutcomeRefusalStatus(admit);
	o->takeable_only = true;
}

/* One reservation on its own, in the caller's transaction: MovementReserve(). */
void
MovementReserveAlone(text *sku, int64 qty, text *order_id, int32 batch_id,
			 TimestampTz expires_at, const int64 *expected_version,
			 text *buyer_id, Outcome *o)
{
	LedgerWriter writer;

	LedgerWriterInit(&writer);
	MovementReserve(sku, qty, order_id, batch_id, expires_at, expected_version,
			   buyer_id, &writer, o);
	LedgerWriterClose(&writer);
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
MovementSettle(ReservationOp op, text *order_id, int32 batch_id,
				  TimestampTz now, TimestampTz new_expires, Outcome *o)
{
	int			spi;
	bool		late = false;	/* confirming past expires_at */

	memset(o, 0, sizeof(Outcome));
	MovementLockKey(order_id, batch_id);
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
		if (SandboxRunSettle(late ? &confirm_late : stmt, values, NULL, 0,
							 INV_SETTLED_BY_CALL, late) == 1)
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
			OutcomeKeyReuseError(order_id, batch_id, &m);
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
			expired = SandboxRunSettle(&expire_one, values, NULL, 0,
									   INV_SETTLED_BY_EXPIRY, false);
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
