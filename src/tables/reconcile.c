/*
 * reconcile.c
 *	  The expiry of a database with a reconciler: each overdue order is
 *	  asked about, then settled as the application answers.
 *
 * A round reads the overdue orders that are not waiting for a later ask,
 * oldest due first (ReconcileCandidates), and asks the reconciler about
 * each once (a cart's lines together, with the first of their batch_ids),
 * at most RECONCILE_ASKS_PER_XACT in a transaction (ReconcileOrders; the
 * worker runs several, inventory.expire() one).  An ask runs
 *
 *	- in a subtransaction of its own, so that an error of the application's
 *	  code is a failed ask, not a failed round;
 *	- as the reconciler's owner, whose right to it is checked again first,
 *	  under SECURITY_RESTRICTED_OPERATION and a new GUC nest level, as
 *	  PostgreSQL runs index expressions in VACUUM and ANALYZE;
 *	- with inventory.reconcile_timeout armed: nothing else bounds a
 *	  statement in a background worker;
 *	- without a lock on the reservation: its rows are locked when the
 *	  answer is applied, FOR UPDATE SKIP LOCKED, and only those still
 *	  PENDING and overdue then are settled.  A buyer settling the same
 *	  reservation meanwhile wins; the answer then changes nothing.
 *
 * confirm, cancel and expire settle the order's overdue lines; wait, and a
 * failed ask (NULL, another answer, an error, the timeout), record in
 * inventory.reconcile_wait when to ask again.  An order asked
 * inventory.reconcile_max_asks times, or overdue for
 * inventory.reconcile_max_wait, is expired without asking.  Asking stops
 * for the round once inventory.reconcile_budget has been spent, so that a
 * slow reconciler leaves the worker free between rounds.
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "commands/dbcommands.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "storage/latch.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/timeout.h"
#include "utils/timestamp.h"

#include "tables/catalog.h"
#include "tables/reconcile.h"
#include "tables/stmt.h"

/* settings */
static int	inv_reconcile_timeout = 1000;	/* ms */
static int	inv_reconcile_retry = 60;	/* s */
static int	inv_reconcile_max_asks = 10;
static int	inv_reconcile_max_wait = 3600;	/* s */
static int	inv_reconcile_budget = 1000;	/* ms */

void
ReconcileInit(void)
{
	DefineCustomIntVariable("inventory.reconcile_timeout",
							"How long one ask of a reconciler may take.",
							"An ask that takes longer is cancelled and counts as failed.",
							&inv_reconcile_timeout,
							1000, 1, INT_MAX,
							PGC_SUSET, GUC_UNIT_MS,
							NULL, NULL, NULL);
	DefineCustomIntVariable("inventory.reconcile_retry",
							"How long an order the reconciler answered wait for waits before it is asked again.",
							NULL,
							&inv_reconcile_retry,
							60, 1, INT_MAX / 1000,
							PGC_SUSET, GUC_UNIT_S,
							NULL, NULL, NULL);
	DefineCustomIntVariable("inventory.reconcile_max_asks",
							"Asks about an overdue order before it is expired without asking.",
							NULL,
							&inv_reconcile_max_asks,
							10, 1, 1000000,
							PGC_SUSET, 0,
							NULL, NULL, NULL);
	DefineCustomIntVariable("inventory.reconcile_max_wait",
							"How long past its expires_at an order may wait for its reconciler before it is expired without asking.",
							NULL,
							&inv_reconcile_max_wait,
							3600, 1, INT_MAX / 1000,
							PGC_SUSET, GUC_UNIT_S,
							NULL, NULL, NULL);
	DefineCustomIntVariable("inventory.reconcile_budget",
							"Time a round of the expiry spends asking a reconciler at most.",
							"The orders left wait for the next round.",
							&inv_reconcile_budget,
							1000, 1, INT_MAX,
							PGC_SUSET, GUC_UNIT_MS,
							NULL, NULL, NULL);
}

/*
 * Overdue orders not waiting for a later ask, oldest due first: the
 * oldest overdue rows by ledger_due_idx (a cart's lines together), then
 * grouped by order, so that a round reads what it asks about and not the
 * whole backlog.
 */
static InvStmt overdue_orders = {
	"WITH due AS ("
	" SELECT l.order_id, l.batch_id, l.expires_at FROM inventory.ledger l"
	"  WHERE NOT l.folded AND l.expires_at OPERATOR(pg_catalog.<=) $1"
	"    AND l.state OPERATOR(pg_catalog.=) 'PENDING'"
	"    AND NOT EXISTS (SELECT FROM inventory.reconcile_wait w"
	"                     WHERE w.order_id OPERATOR(pg_catalog.=) l.order_id"
	"                       AND w.next_ask OPERATOR(pg_catalog.>) $1)"
	"  ORDER BY l.expires_at"
	"  LIMIT $2 OPERATOR(pg_catalog.*) 4)"
	" SELECT d.order_id, pg_catalog.min(d.batch_id), pg_catalog.min(d.expires_at),"
	"        COALESCE(w.asks, 0)"
	"   FROM due d LEFT JOIN inventory.reconcile_wait w"
	"     ON w.order_id OPERATOR(pg_catalog.=) d.order_id"
	"  GROUP BY d.order_id, w.asks"
	"  ORDER BY 3, 1 LIMIT $2",
	2, {TIMESTAMPTZOID, INT8OID}
};

static InvStmt ask = {
	"SELECT inventory.reconciler($1, $2)",
	2, {TEXTOID, INT4OID}
};

/* an order's overdue lines still PENDING, locked unless a buyer holds them */
#define SETTLE_ORDER(STATE) \
	"UPDATE inventory.ledger SET state = '" STATE "'" \
	" WHERE ctid OPERATOR(pg_catalog.=) ANY (ARRAY(" \
	"   SELECT ctid FROM inventory.ledger" \
	"    WHERE order_id OPERATOR(pg_catalog.=) $1" \
	"      AND state OPERATOR(pg_catalog.=) 'PENDING'" \
	"      AND expires_at OPERATOR(pg_catalog.<=) $2" \
	"    FOR UPDATE SKIP LOCKED))" \
	"   AND state OPERATOR(pg_catalog.=) 'PENDING'"

static InvStmt confirm_order = {SETTLE_ORDER("CONFIRMED"), 2, {TEXTOID, TIMESTAMPTZOID}};
static InvStmt cancel_order = {SETTLE_ORDER("CANCELLED"), 2, {TEXTOID, TIMESTAMPTZOID}};
static InvStmt expire_order = {SETTLE_ORDER("EXPIRED"), 2, {TEXTOID, TIMESTAMPTZOID}};

static InvStmt forget_order = {
	"DELETE FROM inventory.reconcile_wait WHERE order_id OPERATOR(pg_catalog.=) $1",
	1, {TEXTOID}
};

static InvStmt wait_order = {
	"INSERT INTO inventory.reconcile_wait AS w"
	"       (order_id, asks, first_asked, next_ask, last_answer)"
	" VALUES ($1, 1, $2, $3, $4)"
	" ON CONFLICT (order_id) DO UPDATE"
	"   SET asks = w.asks OPERATOR(pg_catalog.+) 1, next_ask = $3, last_answer = $4",
	4, {TEXTOID, TIMESTAMPTZOID, TIMESTAMPTZOID, TEXTOID}
};

static InvStmt waiting_lines = {
	"SELECT pg_catalog.count(*) FROM inventory.ledger"
	" WHERE order_id OPERATOR(pg_catalog.=) $1"
	"   AND state OPERATOR(pg_catalog.=) 'PENDING'"
	"   AND expires_at OPERATOR(pg_catalog.<=) $2",
	2, {TEXTOID, TIMESTAMPTZOID}
};

static InvStmt forget_settled = {
	"DELETE FROM inventory.reconcile_wait w WHERE NOT EXISTS ("
	" SELECT FROM inventory.ledger l"
	"  WHERE l.order_id OPERATOR(pg_catalog.=) w.order_id"
	"    AND l.state OPERATOR(pg_catalog.=) 'PENDING')",
	0
};

typedef enum Answer
{
	ANSWER_CONFIRM,
	ANSWER_CANCEL,
	ANSWER_EXPIRE,
	ANSWER_WAIT,
	ANSWER_FAILED
} Answer;

/* the ask's timeout: a cancel of the statement, told apart by this flag */
static TimeoutId ask_timeout = MAX_TIMEOUTS;
static volatile sig_atomic_t ask_timed_out = false;

static void
AskTimeoutHandler(void)
{
	ask_timed_out = true;
	InterruptPending = true;
	QueryCancelPending = true;
	SetLatch(MyLatch);
}

static void
AskTimeoutArm(void)
{
	if (ask_timeout == MAX_TIMEOUTS)
		ask_timeout = RegisterTimeout(USER_TIMEOUT, AskTimeoutHandler);
	ask_timed_out = false;
	enable_timeout_after(ask_timeout, inv_reconcile_timeout);
}

static void
AskTimeoutDisarm(void)
{
	disable_timeout(ask_timeout, false);
	/* fired as the answer came: the answer stands, the cancel is void */
	if (ask_timed_out)
		QueryCancelPending = false;
}

/*
 * Asks the reconciler about one order: what it answered, and in *said its
 * answer or why the ask failed (in the caller's memory).
 */
static Answer
Ask(const Reconciler *r, Datum order_id, int32 batch_id, char **said)
{
	MemoryContext oldcontext = CurrentMemoryContext;
	ResourceOwner oldowner = CurrentResourceOwner;
	Oid			save_userid;
	int			save_sec_context;
	volatile Answer answer = ANSWER_FAILED;

	GetUserIdAndSecContext(&save_userid, &save_sec_context);
	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(oldcontext);
	PG_TRY();
	{
		Datum		values[2];
		int			nestlevel;

		values[0] = order_id;
		values[1] = Int32GetDatum(batch_id);
		ReconcilerCheckTarget(r->target, r->owner);
		SetUserIdAndSecContext(r->owner, save_sec_context |
							   SECURITY_LOCAL_USERID_CHANGE |
							   SECURITY_RESTRICTED_OPERATION);
		nestlevel = NewGUCNestLevel();
		ReconcilerSetRunning(true);
		AskTimeoutArm();
		InvStmtRun(&ask, values, NULL, false, 1);
		AskTimeoutDisarm();
		ReconcilerSetRunning(false);
		AtEOXact_GUC(false, nestlevel);
		SetUserIdAndSecContext(save_userid, save_sec_context);
		if (SPI_processed == 1)
		{
			bool		isnull;
			Datum		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);

			MemoryContextSwitchTo(oldcontext);
			*said = isnull ? NULL : TextDatumGetCString(d);
		}
		ReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(oldcontext);
		CurrentResourceOwner = oldowner;

		if (*said == NULL)
			*said = pstrdup("no answer (NULL)");
		else if (strcmp(*said, "confirm") == 0)
			answer = ANSWER_CONFIRM;
		else if (strcmp(*said, "cancel") == 0)
			answer = ANSWER_CANCEL;
		else if (strcmp(*said, "expire") == 0)
			answer = ANSWER_EXPIRE;
		else if (strcmp(*said, "wait") == 0)
			answer = ANSWER_WAIT;
		else
			*said = psprintf("an unknown answer \"%s\"", *said);
	}
	PG_CATCH();
	{
		ErrorData  *edata;
		bool		timed_out = ask_timed_out;

		if (ask_timeout != MAX_TIMEOUTS)
			disable_timeout(ask_timeout, false);
		ReconcilerSetRunning(false);
		MemoryContextSwitchTo(oldcontext);
		edata = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(oldcontext);
		CurrentResourceOwner = oldowner;
		SetUserIdAndSecContext(save_userid, save_sec_context);
		/*
		 * This statement was cancelled (pg_cancel_backend, the caller's
		 * statement_timeout): that is not the reconciler's answer.  Told
		 * apart from a 57014 that the application's code raised or relayed
		 * by where it was raised.
		 */
		if (!timed_out && edata->sqlerrcode == ERRCODE_QUERY_CANCELED &&
			edata->funcname != NULL && strcmp(edata->funcname, "ProcessInterrupts") == 0)
			ReThrowError(edata);
		*said = timed_out ?
			psprintf("no answer within inventory.reconcile_timeout (%d ms)", inv_reconcile_timeout) :
			psprintf("an error: %s", edata->message);
		FreeErrorData(edata);
	}
	PG_END_TRY();
	return answer;
}

/*
 * inventory.reconcile_wait is written by the extension alone, as its
 * schema's owner, so that no role that could be a reconciler's owner needs
 * to write it (and no reconciler can reset its own asks).
 */

/* The counter of an answer's reservations. */
static int64 *
CountOf(ReconcileCounts *counts, Answer answer)
{
	switch (answer)
	{
		case ANSWER_CONFIRM:
			return &counts->confirmed;
		case ANSWER_CANCEL:
			return &counts->cancelled;
		case ANSWER_EXPIRE:
			return &counts->expired;
		case ANSWER_WAIT:
			return &counts->waited;
		case ANSWER_FAILED:
			break;
	}
	return &counts->failed;
}

/*
 * Settles the order's overdue lines as answered (confirm, cancel or
 * expire), and forgets its wait if it had one; how many.
 */
static int64
Settle(Answer answer, Datum order_id, TimestampTz now, bool waited)
{
	Datum		values[2];
	int64		n;

	values[0] = order_id;
	values[1] = TimestampTzGetDatum(now);
	/* the one write that may confirm past expires_at (trigger.c) */
	if (answer == ANSWER_CONFIRM)
		n = RunLateConfirm(&confirm_order, values);
	else
		n = InvStmtRun(answer == ANSWER_CANCEL ? &cancel_order : &expire_order,
					   values, NULL, false, 0);
	if (waited)
		InvStmtRunAsOwner(&forget_order, values);
	return n;
}

/* Records when to ask again; the order's overdue lines. */
static int64
Wait(Datum order_id, TimestampTz now, const char *said)
{
	Datum		values[4];
	bool		isnull;

	values[0] = order_id;
	values[1] = TimestampTzGetDatum(now);
	values[2] = TimestampTzGetDatum(TimestampTzPlusMilliseconds(now, (int64) inv_reconcile_retry * 1000));
	values[3] = CStringGetTextDatum(said);
	InvStmtRunAsOwner(&wait_order, values);
	values[1] = TimestampTzGetDatum(now);
	InvStmtRun(&waiting_lines, values, NULL, false, 1);
	return DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
}

/*
 * The overdue orders to ask about, oldest due first, at most max, in cxt;
 * *more when there are others.  Forgets first the waits of orders settled
 * since.  In the caller's transaction, with an active snapshot.
 */
int
ReconcileCandidates(int max, MemoryContext cxt, ReconcileOrder **orders, bool *more)
{
	Datum		values[2];
	int			spi;
	int			n;
	ReconcileOrder *o;

	spi = InvSpiConnect();
	InvStmtRunAsOwner(&forget_settled, NULL);
	values[0] = TimestampTzGetDatum(GetCurrentStatementStartTimestamp());
	values[1] = Int64GetDatum((int64) max + 1);
	n = (int) InvStmtRun(&overdue_orders, values, NULL, false, 0);
	*more = n > max;
	if (*more)
		n = max;
	o = MemoryContextAlloc(cxt, Max(n, 1) * sizeof(ReconcileOrder));
	for (int i = 0; i < n; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;
		char	   *order_id = TextDatumGetCString(SPI_getbinval(tup, desc, 1, &isnull));

		o[i].order_id = MemoryContextStrdup(cxt, order_id);
		o[i].batch_id = DatumGetInt32(SPI_getbinval(tup, desc, 2, &isnull));
		o[i].due = DatumGetTimestampTz(SPI_getbinval(tup, desc, 3, &isnull));
		o[i].asks = DatumGetInt32(SPI_getbinval(tup, desc, 4, &isnull));
	}
	InvSpiFinish(spi);
	*orders = o;
	return n;
}

/*
 * Asks about the orders (at most RECONCILE_ASKS_PER_XACT) and settles them
 * as the reconciler answers, while deadline has not passed; returns how
 * many it handled, adds every outcome to *counts and the reservations
 * settled to *settled.  In the caller's transaction, with an active
 * snapshot: each ask is a subtransaction of it.
 */
int
ReconcileOrders(const Reconciler *r, const ReconcileOrder *orders, int n,
				TimestampTz deadline, ReconcileCounts *counts, int64 *settled)
{
	TimestampTz now = GetCurrentStatementStartTimestamp();
	int			spi;
	int			i;

	Assert(n <= RECONCILE_ASKS_PER_XACT);
	spi = InvSpiConnect();
	for (i = 0; i < n; i++)
	{
		Datum		order_id = CStringGetTextDatum(orders[i].order_id);
		char	   *said = NULL;
		Answer		answer;
		int64		k;

		if (orders[i].asks >= inv_reconcile_max_asks ||
			now >= TimestampTzPlusMilliseconds(orders[i].due, (int64) inv_reconcile_max_wait * 1000))
			answer = ANSWER_EXPIRE; /* asked enough: the stock is not held for ever */
		else if (GetCurrentTimestamp() >= deadline)
			break;
		else
			answer = Ask(r, order_id, orders[i].batch_id, &said);

		if (answer == ANSWER_WAIT || answer == ANSWER_FAILED)
		{
			if (answer == ANSWER_FAILED)
				ereport(WARNING,
						(errmsg("the reconciler of database \"%s\" could not be asked about order \"%s\" (batch_id %d): %s",
								get_database_name(MyDatabaseId), orders[i].order_id, orders[i].batch_id, said),
						 errdetail("The order waits, and is asked again in inventory.reconcile_retry (%d s); it is expired after inventory.reconcile_max_asks (%d) asks.",
								   inv_reconcile_retry, inv_reconcile_max_asks)));
			*CountOf(counts, answer) += Wait(order_id, now, said);
			continue;
		}
		k = Settle(answer, order_id, now, orders[i].asks > 0);
		*CountOf(counts, answer) += k;
		*settled += k;
	}
	InvSpiFinish(spi);
	return i;
}

/* The time a round may spend asking, from now. */
TimestampTz
ReconcileDeadline(void)
{
	return TimestampTzPlusMilliseconds(GetCurrentTimestamp(), inv_reconcile_budget);
}

/*
 * One round in the caller's transaction, as inventory.expire() runs it:
 * asks about up to max_orders overdue orders (all: as many as one
 * transaction asks, RECONCILE_ASKS_PER_XACT) within
 * inventory.reconcile_budget, and settles them.  Returns the reservations
 * settled; *more when overdue orders were left.
 */
int64
ReconcileOverdue(const Reconciler *r, int64 max_orders, ReconcileCounts *counts, bool *more)
{
	int			limit = max_orders < 0 || max_orders > RECONCILE_ASKS_PER_XACT ?
		RECONCILE_ASKS_PER_XACT : (int) max_orders;
	ReconcileOrder *orders;
	int64		settled = 0;
	int			n;

	n = ReconcileCandidates(limit, CurrentMemoryContext, &orders, more);
	if (ReconcileOrders(r, orders, n, ReconcileDeadline(), counts, &settled) < n)
		*more = true;
	return settled;
}
