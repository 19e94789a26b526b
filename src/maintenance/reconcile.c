/*
 * reconcile.c
 *	  The expiry of a database with a reconciler: each overdue order is
 *	  asked about, then settled as the application answers.
 *
 * A round reads the overdue orders that are not waiting for a later ask,
 * oldest due first (ReconcileCandidates), and asks the reconciler about
 * each once (a cart's lines together, with the first of their batch_ids),
 * at most RECONCILE_ASKS_PER_XACT in a transaction (ReconcileOrders; the
 * worker runs several, inventory.expire() one, in its caller's session).
 * An ask runs
 *
 *	- only if the function still follows the rules (ReconcilerCheckTrust):
 *	  a restore, an ALTER ... OWNER or a GRANT may have changed it since
 *	  it was set.  A refusal is a failed ask, with a WARNING that names
 *	  the rule;
 *	- in a subtransaction of its own, so that an error of the application's
 *	  code is a failed ask, not a failed round;
 *	- as the function's owner -- the role whose code runs, never the role
 *	  that set it nor the worker's -- under SECURITY_RESTRICTED_OPERATION
 *	  and a new GUC nest level, as PostgreSQL runs index expressions in
 *	  VACUUM; the extension's API and tables are refused to it (the cache,
 *	  the trigger, enforce/ask_fence.c);
 *	- within the reconciler's timeout: then its statement is cancelled,
 *	  and whatever it answers the ask has failed; if it is still running
 *	  ASK_GRACE_MS later (it caught the cancel), its process is ended by
 *	  force, a FATAL that no PL/pgSQL block catches.  The ask is noted in
 *	  shared memory as the process exits (shmem/asks.c), and the next
 *	  round records it as a failed ask;
 *	- without a lock on the reservation: its rows are locked when the
 *	  answer is applied, FOR UPDATE SKIP LOCKED, and only those still
 *	  PENDING and overdue then are settled.  A buyer settling the same
 *	  reservation meanwhile wins; the answer then changes nothing.
 *
 * confirm, cancel and expire settle the order's overdue lines; wait, and a
 * failed ask (NULL, another answer, an error, the timeout, a refusal),
 * record in inventory.reconcile_wait when to ask again, with the answer or
 * the reason cut to ANSWER_MAX bytes.  An order asked max_asks times, or
 * overdue for max_wait, is expired without asking.  Asking stops for the
 * round once inventory.reconcile_budget has been spent, so that a slow
 * reconciler leaves the worker free between rounds.
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_type.h"
#include "commands/dbcommands.h"
#include "executor/spi.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/timeout.h"
#include "utils/timestamp.h"

#include "maintenance/reconcile.h"
#include "shmem/asks.h"
#include "tables/catalog.h"
#include "tables/sandbox.h"
#include "tables/stmt.h"

/* settings */
static int	inv_reconcile_budget = 1000;	/* ms */

/* how long a reconciler may run on past its timeout before it is ended */
#define ASK_GRACE_MS	1000

/* the most of an answer or a reason kept: in the table and the WARNING */
#define ANSWER_MAX		200

void
ReconcileInit(void)
{
	ReconcilerInit();
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
	ANSWER_FAILED,
	ANSWER_REFUSED				/* the function broke a rule: not asked */
} Answer;

/*
 * The ask's timeouts: at the reconciler's timeout its statement is
 * cancelled (told apart from another cancel by ask_timed_out); at the
 * grace after it, its process is ended.
 */
static TimeoutId ask_timeout = MAX_TIMEOUTS;
static TimeoutId ask_end_timeout = MAX_TIMEOUTS;
static volatile sig_atomic_t ask_timed_out = false;
static volatile sig_atomic_t ask_overran = false;

/* the ask under way, noted in shared memory if the process exits in it */
static bool asking = false;
static AskEnded ask_now;
static bool exit_callback_set = false;

static void
AskTimeoutHandler(void)
{
	ask_timed_out = true;
	InterruptPending = true;
	QueryCancelPending = true;
	SetLatch(MyLatch);
}

static void
AskEndHandler(void)
{
	ask_overran = true;
	InterruptPending = true;
	ProcDiePending = true;
	SetLatch(MyLatch);
}

/* this database's name, read at the first ask, for the message at exit */
static char *ask_datname = NULL;

/* The process exits during an ask: the next round records it as failed. */
static void
AskEndedAtExit(int code, Datum arg)
{
	if (!asking)
		return;
	asking = false;
	ask_now.overran = ask_overran;
	AsksNoteEnded(&ask_now);
	ereport(LOG,
			(errmsg("the reconciler of database \"%s\" was ended while asked about order \"%s\" (batch_id %d)",
					ask_datname ? ask_datname : "?", ask_now.order_id, ask_now.batch_id),
			 ask_overran ?
			 errdetail("It was still running a second after its timeout; the ask counts as failed.") :
			 errdetail("Its process was told to end; the ask counts as failed.")));
}

static void
AskBegin(const char *order_id, int32 batch_id, int timeout_ms)
{
	if (!exit_callback_set)
	{
		before_shmem_exit(AskEndedAtExit, (Datum) 0);
		exit_callback_set = true;
		ask_datname = MemoryContextStrdup(TopMemoryContext,
										  get_database_name(MyDatabaseId));
	}
	if (ask_timeout == MAX_TIMEOUTS)
	{
		ask_timeout = RegisterTimeout(USER_TIMEOUT, AskTimeoutHandler);
		ask_end_timeout = RegisterTimeout(USER_TIMEOUT, AskEndHandler);
	}
	memset(&ask_now, 0, sizeof(ask_now));
	ask_now.dboid = MyDatabaseId;
	ask_now.batch_id = batch_id;
	ask_now.started_at = GetCurrentTimestamp();
	strlcpy(ask_now.order_id, order_id, sizeof(ask_now.order_id));
	asking = true;
	ask_timed_out = false;
	ask_overran = false;
	enable_timeout_after(ask_timeout, timeout_ms);
	enable_timeout_after(ask_end_timeout, timeout_ms + ASK_GRACE_MS);
}

/* The ask is over, however it ended; true if it overran its timeout. */
static bool
AskEnd(void)
{
	bool		overran = ask_timed_out;

	disable_timeout(ask_end_timeout, false);
	disable_timeout(ask_timeout, false);
	asking = false;
	/* the cancel, if it fired and was not seen yet, was for the ask */
	if (overran)
		QueryCancelPending = false;
	return overran;
}

/* A span of time, for a message: in seconds when it is whole ones. */
static char *
Span(int64 ms)
{
	return ms % 1000 == 0 ? psprintf("%lld s", (long long) (ms / 1000)) :
		psprintf("%lld ms", (long long) ms);
}

/* s cut to at most ANSWER_MAX bytes, at a character boundary. */
static char *
Cut(const char *s)
{
	int			len = strlen(s);

	if (len <= ANSWER_MAX)
		return pstrdup(s);
	len = pg_mbcliplen(s, len, ANSWER_MAX);
	return psprintf("%.*s...", len, s);
}

/* Calls the reconciler's function: its answer, or NULL. */
static char *
CallReconciler(Oid target, Datum order_id, int32 batch_id)
{
	FmgrInfo	flinfo;
	LOCAL_FCINFO(fcinfo, 2);
	Datum		result;

	fmgr_info(target, &flinfo);
	InitFunctionCallInfoData(*fcinfo, &flinfo, 2, DEFAULT_COLLATION_OID, NULL, NULL);
	fcinfo->args[0].value = order_id;
	fcinfo->args[0].isnull = false;
	fcinfo->args[1].value = Int32GetDatum(batch_id);
	fcinfo->args[1].isnull = false;
	result = FunctionCallInvoke(fcinfo);
	return fcinfo->isnull ? NULL : TextDatumGetCString(result);
}

/*
 * Asks the reconciler about one order: what it answered, and in *said its
 * answer or why the ask failed (in the caller's memory, cut to
 * ANSWER_MAX bytes).
 */
static Answer
Ask(const Reconciler *r, const char *order, Datum order_id, int32 batch_id,
	char **said)
{
	MemoryContext oldcontext = CurrentMemoryContext;
	ResourceOwner oldowner = CurrentResourceOwner;
	Oid			save_userid;
	int			save_sec_context;
	volatile Answer answer = ANSWER_FAILED;
	volatile bool checked = false;

	GetUserIdAndSecContext(&save_userid, &save_sec_context);
	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(oldcontext);
	PG_TRY();
	{
		int			nestlevel;
		char	   *got;
		bool		overran;
		Oid			owner = ReconcilerCheckTrust(r->target);

		checked = true;
		SetUserIdAndSecContext(owner, save_sec_context |
							   SECURITY_LOCAL_USERID_CHANGE |
							   SECURITY_RESTRICTED_OPERATION);
		nestlevel = NewGUCNestLevel();
		SandboxSetAsking(true);
		AskBegin(order, batch_id, ReconcilerTimeout(r));
		got = CallReconciler(r->target, order_id, batch_id);
		overran = AskEnd();
		SandboxSetAsking(false);
		AtEOXact_GUC(false, nestlevel);
		SetUserIdAndSecContext(save_userid, save_sec_context);
		MemoryContextSwitchTo(oldcontext);
		*said = got ? Cut(got) : NULL;
		ReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(oldcontext);
		CurrentResourceOwner = oldowner;

		if (overran)
			*said = psprintf("no answer within its timeout (%s)", Span(ReconcilerTimeout(r)));
		else if (*said == NULL)
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
		bool		timed_out = AskEnd();

		SandboxSetAsking(false);
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
		if (!checked)
		{
			answer = ANSWER_REFUSED;
			*said = psprintf("refused: %s", Cut(edata->message));
		}
		else
			*said = timed_out ?
				psprintf("no answer within its timeout (%s)", Span(ReconcilerTimeout(r))) :
				psprintf("an error: %s", Cut(edata->message));
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
		case ANSWER_REFUSED:	/* and counted apart */
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
	/* a confirm here is past expires_at, which the trigger allows it */
	n = SandboxRunSettle(answer == ANSWER_CONFIRM ? &confirm_order :
						 answer == ANSWER_CANCEL ? &cancel_order : &expire_order,
						 values, NULL, 0, INV_SETTLED_BY_RECONCILER,
						 answer == ANSWER_CONFIRM);
	if (waited)
		InvStmtRunAsOwner(&forget_order, values);
	return n;
}

/* Records when to ask again; the order's overdue lines. */
static int64
Wait(const Reconciler *r, Datum order_id, TimestampTz now, const char *said)
{
	Datum		values[4];
	bool		isnull;

	values[0] = order_id;
	values[1] = TimestampTzGetDatum(now);
	values[2] = TimestampTzGetDatum(TimestampTzPlusMilliseconds(now, ReconcilerRetry(r)));
	values[3] = CStringGetTextDatum(said);
	InvStmtRunAsOwner(&wait_order, values);
	values[1] = TimestampTzGetDatum(now);
	InvStmtRun(&waiting_lines, values, NULL, false, 1);
	return DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
}

/*
 * Records the asks of this database that were ended by force (a
 * reconciler that ran on past its timeout, or a worker stopped by
 * inventory.stop_worker()) as failed asks, so that the process that takes
 * over does not ask about those orders again before their retry.
 */
static void
RecordEndedAsks(const Reconciler *r, TimestampTz now)
{
	AskEnded	ended[ASKS_ENDED_MAX];
	ReconcileCounts counts = {0};
	int			n = AsksTakeEnded(MyDatabaseId, ended, ASKS_ENDED_MAX);

	for (int i = 0; i < n; i++)
	{
		const char *said = ended[i].overran ?
			psprintf("ended by force: still running %s after its timeout (%s)",
					 Span(ASK_GRACE_MS), Span(ReconcilerTimeout(r))) :
			"ended: its process was told to end during the ask";

		ereport(WARNING,
				(errmsg("the reconciler of database \"%s\" was ended while asked about order \"%s\" (batch_id %d)",
						get_database_name(MyDatabaseId), ended[i].order_id, ended[i].batch_id),
				 errdetail_plural("The order waits, and is asked again in %s; it is expired after %lld ask.",
				 				 "The order waits, and is asked again in %s; it is expired after %lld asks.",
				 				 ReconcilerMaxAsks(r),
				 				 Span(ReconcilerRetry(r)), (long long) ReconcilerMaxAsks(r))));
		counts.failed += Wait(r, CStringGetTextDatum(ended[i].order_id), now, said);
	}
	if (n > 0)
		PoolReconcileReport(&counts);
}

/*
 * The overdue orders to ask about, oldest due first, at most max, in cxt;
 * *more when there are others.  Forgets first the waits of orders settled
 * since, and records the asks ended by force.  In the caller's
 * transaction, with an active snapshot.
 */
int
ReconcileCandidates(const Reconciler *r, int max, MemoryContext cxt,
					ReconcileOrder **orders, bool *more)
{
	Datum		values[2];
	int			spi;
	int			n;
	ReconcileOrder *o;
	TimestampTz now = GetCurrentStatementStartTimestamp();

	spi = InvSpiConnect();
	InvStmtRunAsOwner(&forget_settled, NULL);
	RecordEndedAsks(r, now);
	values[0] = TimestampTzGetDatum(now);
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

		if (orders[i].asks >= ReconcilerMaxAsks(r) ||
			now >= TimestampTzPlusMilliseconds(orders[i].due, ReconcilerMaxWait(r)))
			answer = ANSWER_EXPIRE; /* asked enough: the stock is not held for ever */
		else if (GetCurrentTimestamp() >= deadline)
			break;
		else
			answer = Ask(r, orders[i].order_id, order_id, orders[i].batch_id, &said);

		if (answer == ANSWER_WAIT || answer == ANSWER_FAILED || answer == ANSWER_REFUSED)
		{
			if (answer != ANSWER_WAIT)
				ereport(WARNING,
						(errmsg("the reconciler of database \"%s\" could not be asked about order \"%s\" (batch_id %d): %s",
								get_database_name(MyDatabaseId), orders[i].order_id, orders[i].batch_id, said),
						 errdetail_plural("The order waits, and is asked again in %s; it is expired after %lld ask.",
						 				 "The order waits, and is asked again in %s; it is expired after %lld asks.",
						 				 ReconcilerMaxAsks(r),
						 				 Span(ReconcilerRetry(r)), (long long) ReconcilerMaxAsks(r))));
			k = Wait(r, order_id, now, said);
			*CountOf(counts, answer) += k;
			if (answer == ANSWER_REFUSED)
				counts->refused += k;
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

	n = ReconcileCandidates(r, limit, CurrentMemoryContext, &orders, more);
	if (ReconcileOrders(r, orders, n, ReconcileDeadline(), counts, &settled) < n)
		*more = true;
	return settled;
}
