/*
 * reserve_now.c
 *	  inventory.reserve_now(): one reservation, committed together with
 *	  other callers' in a commit of their database's express writer.
 *
 * A call is decided in shared memory first, as reserve() decides: a
 * refusal (sold out, not on sale, buyer required, unknown SKU) takes no
 * transaction id, writes no WAL and never sleeps.  An admitted call holds
 * its units in the SKU's cache entry, owned by the caller's slot rather
 * than by its transaction, and hands the reservation to the writer
 * (shmem/express.c, worker/express_writer.c); it sleeps until the writer's
 * batch has committed and the commit is flushed (and replicated, where
 * synchronous_standby_names and the caller's synchronous_commit ask for
 * it), and answers reserve()'s status, or with reserve_now_result() its
 * whole inventory.result (the counters those of the admission).  An item whose key or buyer the
 * writer found busy comes back; the caller waits for them here, where the
 * wait can be interrupted and is seen by the deadlock detector, and hands
 * the item over again.  An item that comes back twice, or whose caller
 * itself holds what the writer found busy (a lock its own statement took),
 * is reserved in the caller's own transaction, where PostgreSQL's lock
 * queue orders it: a writer that never sleeps on a client could otherwise
 * send it back for ever.  When no writer can be had, the call reserves in
 * its own transaction too, as reserve() does, and commits with at least
 * synchronous_commit = local, so that its ok is flushed as the writer's is.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/parallel.h"
#include "access/xact.h"
#include "catalog/pg_class.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "api/args.h"
#include "enforce/rules.h"
#include "fault.h"
#include "movement/movement.h"
#include "movement/outcome.h"
#include "shmem/cache.h"
#include "shmem/escrow.h"
#include "shmem/express.h"
#include "shmem/keyfilter.h"
#include "tables/catalog.h"
#include "tables/ledger_table.h"
#include "worker/express_writer.h"

/*
 * The hold the caller's slot owns: qty units of entry, which it pins.
 * Given back when the call ends without a row, also by an error or when
 * the backend exits.
 */
static InvEntry *held_entry = NULL;
static int64 held_qty = 0;
static bool exit_callback_set = false;

/* Gives back the slot's hold (and pin), if it has one. */
static void
GiveBack(void)
{
	InvTxnEnd	end;

	if (held_entry == NULL)
		return;
	memset(&end, 0, sizeof(end));
	end.hold = held_qty;
	EscrowEndTxn(held_entry, &end);
	held_entry = NULL;
	held_qty = 0;
}

static void
GiveBackAtExit(int code, Datum arg)
{
	GiveBack();
}

/* reserve_now() commits on its own: only where that is what the caller gets */
static void
CheckOwnCommit(void)
{
	ArgCheckWritable("inventory.reserve_now()");
	if (IsInParallelMode())
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TRANSACTION_STATE),
				 errmsg("inventory.reserve_now() cannot run in parallel mode")));
	if (IsSubTransaction())
		ereport(ERROR,
				(errcode(ERRCODE_ACTIVE_SQL_TRANSACTION),
				 errmsg("inventory.reserve_now() cannot run inside a subtransaction"),
				 errdetail("It commits on its own, which a savepoint or a PL/pgSQL block with an EXCEPTION clause could not undo."),
				 errhint("Use inventory.reserve(), which commits with the transaction around it.")));
	if (IsTransactionBlock())
		ereport(ERROR,
				(errcode(ERRCODE_ACTIVE_SQL_TRANSACTION),
				 errmsg("inventory.reserve_now() cannot run inside a transaction block"),
				 errdetail("It commits on its own, together with other callers' reservations, whatever the transaction around it does."),
				 errhint("Call it outside the transaction, in autocommit (psycopg: connection.autocommit = True; node-postgres and psql: without BEGIN), or use inventory.reserve(), which commits with the transaction around it.")));
	/* as PreventInTransactionBlock(): a pipeline is an implicit block */
	if (MyXactFlags & XACT_FLAGS_PIPELINING)
		ereport(ERROR,
				(errcode(ERRCODE_ACTIVE_SQL_TRANSACTION),
				 errmsg("inventory.reserve_now() cannot run in a pipeline"),
				 errdetail("It commits on its own, whatever the pipeline's implicit transaction does."),
				 errhint("Send it with a Sync of its own, or use inventory.reserve_many() for several reservations in one call.")));
	if (TransactionIdIsValid(GetTopTransactionIdIfAny()))
		ereport(ERROR,
				(errcode(ERRCODE_ACTIVE_SQL_TRANSACTION),
				 errmsg("inventory.reserve_now() cannot run in a transaction that has written"),
				 errdetail("It commits on its own, apart from what its statement writes."),
				 errhint("Use inventory.reserve(), which commits with the transaction around it.")));
}

/*
 * The answer of a call whose key is in the ledger as the movement m:
 * duplicate, or the key's reuse raised as reserve() raises it.
 */
static void
Replay(const LedgerRow *m, text *sku, int64 qty, text *order_id,
	   int32 batch_id, text *buyer_id, Outcome *o)
{
	OutcomeInit(o, sku, qty);
	OutcomeReplay(order_id, batch_id, m, INV_KIND_RESERVE, sku, qty, buyer_id, o);
}

/*
 * The caller has read its reply: a written item's hold went with its row,
 * so only the pin is left to give back.  Before anything that can fail.
 */
static void
Answered(const ExpressReply *reply)
{
	if (reply->answer == EXPRESS_WRITTEN)
		held_qty = 0;
}

/* Hands the caller's filled item to its writer and sleeps until answered. */
static void
HandOver(ExpressReply *reply)
{
	int			lane = -1;
	ExpressQueued queued;

	/* no answer yet: an error before the reply leaves the hold the caller's */
	memset(reply, 0, sizeof(ExpressReply));
	reply->answer = EXPRESS_NO_WRITER;

	/* from the queue to the answer, the hold is the writer's to adopt */
	HOLD_INTERRUPTS();
	queued = ExpressEnqueue(&lane);
	if (queued == EXPRESS_NO_LANE)
	{
		RESUME_INTERRUPTS();
		return;
	}
	PG_TRY();
	{
		if (queued == EXPRESS_START_WRITER)
		{
			volatile bool started = false;

			PG_TRY();
			{
				started = ExpressStartWriter(lane);
				INV_FAULT("express-after-start");
			}
			PG_CATCH();
			{
				if (!started)
					ExpressWriterNotStarted(lane);
				ExpressSleep(reply);
				PG_RE_THROW();
			}
			PG_END_TRY();
			if (!started)
				ExpressWriterNotStarted(lane);
		}
		ExpressSleep(reply);
	}
	PG_CATCH();
	{
		/* the reply, if one came, says whose the hold is now */
		Answered(reply);
		RESUME_INTERRUPTS();
		PG_RE_THROW();
	}
	PG_END_TRY();
	Answered(reply);
	RESUME_INTERRUPTS();
}

/* The ledger's owner, whom reserve()'s SECURITY DEFINER runs as. */
static Oid
LedgerOwner(void)
{
	HeapTuple	tup;
	Oid			owner;

	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(InvGetCatalog()->ledger_rel));
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for relation %u", InvGetCatalog()->ledger_rel);
	owner = ((Form_pg_class) GETSTRUCT(tup))->relowner;
	ReleaseSysCache(tup);
	return owner;
}

/*
 * No writer, or one that cannot write the item: the reservation is made in
 * the caller's transaction, as reserve() makes it, and as the role
 * reserve()'s SECURITY DEFINER runs as.  The statement commits it, and an
 * ok is as durable as the writer's: at least synchronous_commit = local
 * for this transaction (a stronger setting is kept).
 */
static void
ReserveInOwnTransaction(text *sku, int64 qty, text *order_id, int32 batch_id,
						TimestampTz expires_at, text *buyer_id, Outcome *o)
{
	Oid			save_userid;
	int			save_sec;

	ExpressCountFallback();
	if (synchronous_commit < SYNCHRONOUS_COMMIT_LOCAL_FLUSH)
		(void) set_config_option("synchronous_commit", "local",
								 PGC_USERSET, PGC_S_SESSION,
								 GUC_ACTION_LOCAL, true, 0, false);
	GetUserIdAndSecContext(&save_userid, &save_sec);
	SetUserIdAndSecContext(LedgerOwner(), save_sec | SECURITY_LOCAL_USERID_CHANGE);
	MovementReserveAlone(sku, qty, order_id, batch_id, expires_at, NULL, buyer_id, o);
	SetUserIdAndSecContext(save_userid, save_sec);
}

/*
 * Does the caller itself hold what the writer found busy?  Its own
 * statement may have taken the key's lock (a confirm of the same key), the
 * buyer's (a refused reserve_many) or a lock on the ledger that a waiting
 * ALTER TABLE queues behind: waiting for it here would return at once, and
 * the writer would find it busy again.
 */
static bool
CallerHoldsBusy(ExpressAnswer answer, text *sku, text *order_id,
				int32 batch_id, text *buyer_id)
{
	switch (answer)
	{
		case EXPRESS_KEY_BUSY:
			return LedgerKeyLockHeld(VARDATA_ANY(order_id),
									 VARSIZE_ANY_EXHDR(order_id), batch_id);
		case EXPRESS_BUYER_BUSY:
			return RulesBuyerLockHeld(sku, buyer_id);
		case EXPRESS_TABLE_BUSY:
			return LedgerLockHeld();
		default:
			return false;
	}
}

static void
FillItem(ExpressItem *it, text *sku, int64 qty, text *order_id, int32 batch_id,
		 TimestampTz now, TimestampTz expires_at, text *buyer_id,
		 int64 max_per_buyer)
{
	it->qty = qty;
	it->batch_id = batch_id;
	it->max_per_buyer = max_per_buyer;
	it->created_at = now;
	it->expires_at = expires_at;
	it->sku_len = VARSIZE_ANY_EXHDR(sku);
	memcpy(it->sku, VARDATA_ANY(sku), it->sku_len);
	it->sku[it->sku_len] = '\0';
	it->order_len = VARSIZE_ANY_EXHDR(order_id);
	memcpy(it->order_id, VARDATA_ANY(order_id), it->order_len);
	it->order_id[it->order_len] = '\0';
	it->buyer_len = buyer_id ? (int) VARSIZE_ANY_EXHDR(buyer_id) : -1;
	if (buyer_id)
	{
		memcpy(it->buyer_id, VARDATA_ANY(buyer_id), it->buyer_len);
		it->buyer_id[it->buyer_len] = '\0';
	}
}

/*
 * The admitted call, whose slot holds its units: handed to the writer until
 * it is written or refused; the items sent back are waited for here.  *o
 * has the counters of the admission, which an ok answers.
 */
static void
WriteThroughLane(text *sku, int64 qty, text *order_id, int32 batch_id,
				 TimestampTz now, TimestampTz expires_at, text *buyer_id,
				 int64 max_per_buyer, Outcome *o)
{
	int			sent_back = 0;

	for (;;)
	{
		ExpressReply reply;
		LedgerRow	m;

		CHECK_FOR_INTERRUPTS();
		FillItem(ExpressMyItem(), sku, qty, order_id, batch_id, now, expires_at,
				 buyer_id, max_per_buyer);
		HandOver(&reply);
		if ((reply.answer == EXPRESS_KEY_BUSY ||
			 reply.answer == EXPRESS_BUYER_BUSY ||
			 reply.answer == EXPRESS_TABLE_BUSY) &&
			(++sent_back > 1 ||
			 CallerHoldsBusy(reply.answer, sku, order_id, batch_id, buyer_id)))
		{
			GiveBack();
			ReserveInOwnTransaction(sku, qty, order_id, batch_id,
									expires_at, buyer_id, o);
			return;
		}
		switch (reply.answer)
		{
			case EXPRESS_WRITTEN:
				/* the hold went with the row (Answered): only the pin is left */
				ExpressWaitDurable(reply.lsn);
				GiveBack();
				o->ok = true;
				o->status = INV_STATUS_OK;
				o->has_state = true;
				o->state = INV_PENDING;
				o->has_expires_at = true;
				o->expires_at = expires_at;
				return;
			case EXPRESS_REFUSED:
				GiveBack();
				if (strcmp(reply.status, "key_taken") != 0)
				{
					/* the buyer's limit: what a reserve can take now */
					o->status = MetricsStatus(reply.status);
					o->takeable_only = true;
					OutcomeReadCounters(o);
					return;
				}
				/* the writer found it: the filter has it, no need to ask */
				if (MovementLookUpKey(order_id, batch_id, &m))
				{
					Replay(&m, sku, qty, order_id, batch_id, buyer_id, o);
					return;
				}
				/* gone again meanwhile: as reserve() would */
				ReserveInOwnTransaction(sku, qty, order_id, batch_id,
										expires_at, buyer_id, o);
				return;
			case EXPRESS_KEY_BUSY:
				LedgerWaitForKey(VARDATA_ANY(order_id), VARSIZE_ANY_EXHDR(order_id),
								 batch_id);
				break;
			case EXPRESS_BUYER_BUSY:
				RulesWaitForBuyer(sku, buyer_id);
				break;
			case EXPRESS_TABLE_BUSY:
				LedgerWaitForInsert();
				break;
			case EXPRESS_FAILED:
				GiveBack();
				ereport(ERROR,
						(errcode(reply.sqlerrcode),
						 errmsg_internal("%s", reply.message),
						 reply.detail[0] ? errdetail_internal("%s", reply.detail) : 0,
						 reply.hint[0] ? errhint("%s", reply.hint) : 0));
				break;
			case EXPRESS_NO_WRITER:
				GiveBack();
				ReserveInOwnTransaction(sku, qty, order_id, batch_id,
										expires_at, buyer_id, o);
				return;
		}
	}
}

static void
ReserveNow(text *sku, int64 qty, text *order_id, int32 batch_id,
		   TimestampTz now, TimestampTz expires_at, text *buyer_id, Outcome *o)
{
	InvSale		sale = {now, buyer_id != NULL};
	InvKey		key;
	InvView		view;
	InvEntry   *entry = NULL;
	InvAdmit	admit;
	LedgerRow	m;

	OutcomeInit(o, sku, qty);
	CacheMakeKey(&key, VARDATA_ANY(sku), VARSIZE_ANY_EXHDR(sku));
	admit = EscrowAdmit(&key, &entry, qty, NULL, &sale, true, &view);
	OutcomeSetCounters(o, &view);
	if (admit != INV_ADMIT_OK)
	{
		/*
		 * A replay of a reservation made earlier is a duplicate; one in
		 * flight is waited for, as reserve() waits on the key.
		 */
		if (KeyFilterMaybe(VARDATA_ANY(order_id), VARSIZE_ANY_EXHDR(order_id), batch_id))
		{
			LedgerWaitForKey(VARDATA_ANY(order_id), VARSIZE_ANY_EXHDR(order_id),
							 batch_id);
			if (MovementLookUpKey(order_id, batch_id, &m))
			{
				Replay(&m, sku, qty, order_id, batch_id, buyer_id, o);
				return;
			}
		}
		o->status = OutcomeRefusalStatus(admit);
		o->takeable_only = true;
		return;
	}

	if (!exit_callback_set)
	{
		before_shmem_exit(GiveBackAtExit, (Datum) 0);
		exit_callback_set = true;
	}
	held_entry = entry;
	held_qty = qty;
	PG_TRY();
	{
		if (MovementFindKey(order_id, batch_id, &m))
		{
			GiveBack();
			Replay(&m, sku, qty, order_id, batch_id, buyer_id, o);
		}
		else
			WriteThroughLane(sku, qty, order_id, batch_id, now, expires_at,
							 buyer_id, view.rules.max_per_buyer, o);
	}
	PG_CATCH();
	{
		GiveBack();
		PG_RE_THROW();
	}
	PG_END_TRY();
}

/* reserve_now()'s work, whichever form answers it */
static void
ReserveNowCall(FunctionCallInfo fcinfo, Outcome *o)
{
	text	   *sku = ArgSku(fcinfo, 0);
	int64		qty = ArgQuantity(fcinfo, 1, "qty", false);
	text	   *order_id = ArgOrderId(fcinfo, 2);
	int32		batch_id = ArgBatchId(fcinfo, 3);
	TimestampTz now = GetCurrentStatementStartTimestamp();
	TimestampTz expires_at = ArgExpiresAt(fcinfo, 4, now);
	text	   *buyer_id = ArgBuyerId(fcinfo, 5);

	CheckOwnCommit();
	if (inv_max_express_writers == 0)
		ReserveInOwnTransaction(sku, qty, order_id, batch_id, expires_at,
								buyer_id, o);
	else
		ReserveNow(sku, qty, order_id, batch_id, now, expires_at, buyer_id, o);
}

/* inventory.reserve_now(): the status */
PG_FUNCTION_INFO_V1(inventory_reserve_now);
Datum
inventory_reserve_now(PG_FUNCTION_ARGS)
{
	Outcome		o;

	ReserveNowCall(fcinfo, &o);
	MetricsTold(INV_CALL_RESERVE_NOW, o.status, 1);
	PG_RETURN_TEXT_P(cstring_to_text(inv_status_names[o.status]));
}

/* inventory.reserve_now_result(): the whole inventory.result */
PG_FUNCTION_INFO_V1(inventory_reserve_now_result);
Datum
inventory_reserve_now_result(PG_FUNCTION_ARGS)
{
	Outcome		o;

	ReserveNowCall(fcinfo, &o);
	return OutcomeAnswer(INV_CALL_RESERVE_NOW, &o);
}
