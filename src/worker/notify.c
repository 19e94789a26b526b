/*
 * notify.c
 *	  What a worker sends to listeners: to LISTEN inventory_stock the SKUs
 *	  whose committed available reached zero or came back above it, and
 *	  those whose sale window opened or closed; to LISTEN inventory_changes
 *	  a bell, when rows of the change feed have committed.
 *
 * Crossings of zero are noted by the commits that make them, in the cache
 * (shmem/cache_notify.c).  The edges of sale windows are nobody's commit:
 * they are found in inventory.sku by time, through the partial indexes on
 * sale_starts and sale_ends, between the last time this database's edges
 * were sent (pool.c keeps it) and now; and the next edge is when the
 * database's notes fall due again, so that a worker comes for it.  A
 * commit that sets a window ahead makes its edges due (the trigger on
 * inventory.sku), and every visit of a worker looks again.  All of a
 * send's notifications -- many SKUs whose windows share an edge, say --
 * go out in one transaction of the worker's, between two of its own.
 *
 * A notification carries the SKU's committed state when it is sent:
 * available, version, on_sale at that moment and the window's bounds.
 * Edges that passed while the server was down, or before it first saw the
 * database, are not sent: a storefront that starts reads inventory.stock.
 *
 * The bell of inventory_changes carries nothing -- any role may listen,
 * and the feed's rows name orders -- and is rung by the worker, never by
 * the commit that wrote the feed (enforce/feed.c, pool.c's PoolNoteBell),
 * at most once per inventory.stock_notify_interval however many commits
 * wrote: it tells a consumer to
 * read inventory.changes(), which is the truth.  While committed rows are
 * held back by an older transaction still running (api/changes.c), the
 * bell rings again every FEED_HELD_RETRY_MS, so that a consumer hears of
 * them once they can be read; how long the oldest has been held back is
 * the change feed's lag, in inventory.worker_status.
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "commands/async.h"
#include "commands/dbcommands.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "utils/builtins.h"
#include "utils/datetime.h"
#include "utils/json.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "shmem/cache.h"
#include "shmem/cache_notify.h"
#include "shmem/pool.h"
#include "tables/catalog.h"
#include "tables/stmt.h"
#include "worker/notify.h"

/* the channels */
#define INV_STOCK_CHANNEL	"inventory_stock"
#define INV_CHANGES_CHANNEL	"inventory_changes"

/* how soon the bell is tried again while the feed's rows are held back */
#define FEED_HELD_RETRY_MS	1000

/* this send took the bell, which a failure gives back */
static bool bell_taken = false;

/* when this worker last rang it */
static TimestampTz bell_rung_at = 0;

/* this database's name, for the messages of a failed send */
static NameData notify_datname;

/* the SKUs whose window opened or closed in ($1, $2] */
static InvStmt edges_passed = {
	"SELECT sku FROM inventory.sku"
	" WHERE (sale_starts OPERATOR(pg_catalog.>) $1 AND sale_starts OPERATOR(pg_catalog.<=) $2)"
	"    OR (sale_ends OPERATOR(pg_catalog.>) $1 AND sale_ends OPERATOR(pg_catalog.<=) $2)",
	2, {TIMESTAMPTZOID, TIMESTAMPTZOID}
};

/* the oldest row of the change feed that changes() holds back */
static InvStmt held_back = {
	"SELECT pg_catalog.min(at) FROM inventory.change"
	" WHERE xid OPERATOR(pg_catalog.>=) pg_catalog.pg_snapshot_xmin(pg_catalog.pg_current_snapshot())",
	0, {0}
};

/* the first edge after $1 */
static InvStmt next_edge = {
	"SELECT LEAST((SELECT pg_catalog.min(sale_starts) FROM inventory.sku"
	"               WHERE sale_starts OPERATOR(pg_catalog.>) $1),"
	"             (SELECT pg_catalog.min(sale_ends) FROM inventory.sku"
	"               WHERE sale_ends OPERATOR(pg_catalog.>) $1))",
	1, {TIMESTAMPTZOID}
};

/* A bound of a window as JSON: an ISO 8601 timestamp, or null when open. */
static void
AppendBound(StringInfo buf, const char *name, TimestampTz t)
{
	char		iso[MAXDATELEN + 1];

	appendStringInfo(buf, ", \"%s\": ", name);
	if (TIMESTAMP_NOT_FINITE(t))
		appendStringInfoString(buf, "null");
	else
		appendStringInfo(buf, "\"%s\"",
						 JsonEncodeDateTime(iso, TimestampTzGetDatum(t), TIMESTAMPTZOID, NULL));
}

/*
 * When committed rows of the change feed are held back by an older
 * transaction still running, the time the oldest of them was written; 0
 * when none is.  Then the bell must ring again once they can be read.
 */
static TimestampTz
FeedHeldBack(void)
{
	TimestampTz oldest = 0;
	int			spi;

	if (!OidIsValid(InvGetCatalog()->change_rel))
		return 0;
	spi = InvSpiConnect();
	if (InvStmtRun(&held_back, NULL, NULL, true, 1) == 1)
	{
		bool		isnull;
		Datum		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);

		if (!isnull)
			oldest = DatumGetTimestampTz(d);
	}
	InvSpiFinish(spi);
	return oldest;
}

/* Queues one notification of a SKU's state, its on_sale as of now. */
static void
NotifyState(const InvKey *key, int64 available, int64 version,
			const InvRules *rules, TimestampTz now)
{
	StringInfoData payload;
	bool		on_sale = InvRulesOnSale(rules, now);

	initStringInfo(&payload);
	appendStringInfoString(&payload, "{\"sku\": ");
	escape_json(&payload, key->sku);
	appendStringInfo(&payload, ", \"available\": " INT64_FORMAT ", \"version\": " INT64_FORMAT
					 ", \"on_sale\": %s",
					 available, version, on_sale ? "true" : "false");
	AppendBound(&payload, "sale_starts", rules->sale_starts);
	AppendBound(&payload, "sale_ends", rules->sale_ends);
	appendStringInfoChar(&payload, '}');
	Async_Notify(INV_STOCK_CHANNEL, payload.data);
	pfree(payload.data);
}

/*
 * Queues the notifications of the SKUs whose window opened or closed in
 * (from, now], each with its committed state from the cache; returns the
 * next edge after now (POOL_NOTHING_DUE: none).  Before 0.2 no SKU has a
 * window.
 */
static TimestampTz
NotifyEdges(TimestampTz from, TimestampTz now)
{
	TimestampTz next = POOL_NOTHING_DUE;
	MemoryContext outer = CurrentMemoryContext;
	Datum		values[2];
	int			spi;
	uint64		n;
	char	  **skus;

	if (InvGetCatalog()->s_sale_starts == InvalidAttrNumber)
		return POOL_NOTHING_DUE;
	values[0] = TimestampTzGetDatum(from);
	values[1] = TimestampTzGetDatum(now);
	spi = InvSpiConnect();
	n = InvStmtRun(&edges_passed, values, NULL, true, 0);
	/* the SKUs' names outlive SPI's memory */
	skus = MemoryContextAlloc(outer, Max(n, 1) * sizeof(char *));
	for (uint64 i = 0; i < n; i++)
		skus[i] = MemoryContextStrdup(outer, SPI_getvalue(SPI_tuptable->vals[i],
														  SPI_tuptable->tupdesc, 1));
	values[0] = TimestampTzGetDatum(now);
	if (InvStmtRun(&next_edge, values, NULL, true, 1) == 1)
	{
		bool		isnull;
		Datum		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);

		if (!isnull)
			next = DatumGetTimestampTz(d);
	}
	InvSpiFinish(spi);

	for (uint64 i = 0; i < n; i++)
	{
		InvKey		key;
		InvView		view;

		CHECK_FOR_INTERRUPTS();
		CacheMakeKey(&key, skus[i], strlen(skus[i]));
		if (CacheRead(&key, true, &view))
			NotifyState(&key, view.on_hand - view.reserved, view.version, &view.rules, now);
	}
	return next;
}

/*
 * Sends what is due, in a transaction of its own: the crossings noted,
 * each with its latest state (one sent less than
 * inventory.stock_notify_interval ago is due again then), and, where the
 * database has inventory.stock_notifications on, the edges passed since
 * the last send.  The notes are done, and the edges sent, only once the
 * notifications have committed.  Commits note by their database's
 * inventory.stock_notifications as it stood when their session connected:
 * what they noted is sent whatever the worker's own setting, so that no
 * note keeps its entry in the cache for ever.
 */
static void
SendDue(TimestampTz now)
{
	static MemoryContext notes_cxt = NULL;
	MemoryContext oldcxt;
	InvStockNote *notes;
	TimestampTz next;
	TimestampTz edges_from = PoolEdgesUntil();
	TimestampTz next_edge_at = POOL_NOTHING_DUE;
	TimestampTz held_since = 0;
	bool		rang;
	int			n;

	/* the notes outlive the transaction: they are done after its commit */
	if (notes_cxt == NULL)
		notes_cxt = AllocSetContextCreate(TopMemoryContext, "inventory notes",
										  ALLOCSET_DEFAULT_SIZES);
	MemoryContextReset(notes_cxt);

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	if (!OidIsValid(get_extension_oid("inventory", true)))
	{
		/* the round that follows says so, and leaves */
		CommitTransactionCommand();
		return;
	}
	if (NameStr(notify_datname)[0] == '\0')
	{
		char	   *name = get_database_name(MyDatabaseId);

		if (name != NULL)
			namestrcpy(&notify_datname, name);
	}
	oldcxt = MemoryContextSwitchTo(notes_cxt);
	n = CacheTakeNotes(&notes, now, &next);
	MemoryContextSwitchTo(oldcxt);
	pgstat_report_activity(STATE_RUNNING, "inventory: notifying inventory_stock");
	for (int i = 0; i < n; i++)
		NotifyState(&notes[i].key, notes[i].available, notes[i].version,
					&notes[i].rules, now);
	if (inv_stock_notifications)
	{
		PushActiveSnapshot(GetTransactionSnapshot());
		next_edge_at = NotifyEdges(edges_from, now);
		PopActiveSnapshot();
	}
	/* at most once per inventory.stock_notify_interval */
	rang = false;
	if (PoolBellPending())
	{
		TimestampTz due = TimestampTzPlusMilliseconds(bell_rung_at, inv_stock_notify_interval);

		if (due > now)
			next = Min(next, due);
		else
			rang = bell_taken = PoolBellTake();
	}
	if (rang)
	{
		bell_rung_at = now;
		Async_Notify(INV_CHANGES_CHANNEL, NULL);
		PushActiveSnapshot(GetTransactionSnapshot());
		held_since = FeedHeldBack();
		PopActiveSnapshot();
	}
	CommitTransactionCommand();
	bell_taken = false;
	/* rows held back: the bell rings again once they may be read */
	if (held_since != 0)
	{
		PoolBellAgain();
		next = Min(next, TimestampTzPlusMilliseconds(now, FEED_HELD_RETRY_MS));
	}
	if (rang)
		PoolFeedLag(held_since != 0 ? now - held_since : 0);
	CacheNotesSent(notes, n, now);
	PoolEdgesSent(now);
	PoolNotifySent(Min(next, next_edge_at));
	pgstat_report_activity(STATE_IDLE, NULL);
}

/*
 * Sends what is due, if anything, unless a send failed less than its
 * back-off ago; with all, whatever the due time says (once a visit).  It
 * runs between any two of the worker's transactions, so that no
 * notification waits for more than one of them -- not for a round that
 * clears a backlog, asks a reconciler or verifies the cache -- and costs
 * one read of shared memory when nothing is due (pool.c).
 * A send that fails -- the NOTIFY queue is full because a listener sits in
 * an open transaction, say -- does not stop the worker: as autovacuum does
 * when a table fails, the error is reported and the transaction aborted,
 * here as a WARNING that says when the notifications are tried again, and
 * the round goes on.  The failure is counted in inventory.worker_status.
 */
void
WorkerNotify(bool all)
{
	MemoryContext cxt = CurrentMemoryContext;
	TimestampTz now = GetCurrentTimestamp();

	if (!PoolNotifyTake(now, all))
		return;
	PG_TRY();
	{
		SendDue(now);
	}
	PG_CATCH();
	{
		ErrorData  *edata;
		int			backoff;

		HOLD_INTERRUPTS();
		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		AbortOutOfAnyTransaction();
		if (bell_taken)
			PoolBellAgain();
		bell_taken = false;
		backoff = PoolNotifyFailed(GetCurrentTimestamp());
		ereport(WARNING,
				(errcode(edata->sqlerrcode),
				 errmsg("could not send the notifications of database \"%s\" to LISTEN inventory_stock: %s",
						NameStr(notify_datname), edata->message),
				 edata->detail ? errdetail_internal("%s", edata->detail) : 0,
				 errhint("They are sent again, with the latest state, in %d s at the earliest. "
						 "When the NOTIFY queue is full, a listener that does not read its notifications, "
						 "such as a session idle in an open transaction, keeps it from emptying.",
						 backoff / 1000)));
		FreeErrorData(edata);
		pgstat_report_activity(STATE_IDLE, NULL);
		RESUME_INTERRUPTS();
	}
	PG_END_TRY();
}
