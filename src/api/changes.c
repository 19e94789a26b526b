/*
 * changes.c
 *	  inventory.changes(after, max_rows): the change feed (enforce/feed.c)
 *	  for an application to follow, from a cursor it keeps.
 *
 * A row is returned once every transaction that could still commit before
 * it has ended: its transaction's id is below the xmin of the caller's
 * snapshot.  Rows come in the order of their transactions' ids, and then
 * of their place in the transaction, so the rows after a cursor are final
 * when they are read: a consumer that resumes after the last cursor it
 * saved misses nothing and sees nothing twice, even when transactions
 * commit out of the order they wrote.  The price is a lag: the feed waits
 * for the oldest transaction that holds an id.
 *
 * A cursor carries the feed's id (made anew by a restore of the ledger),
 * the database, the timeline and the row's place.  One from another
 * database, from before a restore, or from another timeline (a failover,
 * a point-in-time recovery: transactions after it may not be in this
 * server's history) is refused with SQLSTATE IV001, never read as if it
 * were this feed's; so is one before the rows the worker pruned
 * (maintenance/retain.c).  A row read from the express writer's commit is
 * told once that commit is durable, as every answer read from a row is.
 */
#include "postgres.h"

#include "access/xlog.h"
#include "access/xlogrecovery.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"

#include "shmem/express.h"
#include "tables/catalog.h"
#include "tables/sandbox.h"
#include "tables/stmt.h"

#define CHANGES_COLUMNS 10
#define FEED_ID_LEN 16

/* the SQLSTATE of a cursor that cannot be followed here, and what to do */
#define ERRCODE_INVENTORY_CURSOR	MAKE_SQLSTATE('I','V','0','0','1')
#define CURSOR_HINT "Read the application's state again (inventory.reservation() of its open orders), then follow the feed from its start: inventory.changes(NULL)."

typedef struct FeedCursor
{
	char		feed_id[FEED_ID_LEN + 1];
	Oid			dboid;
	TimeLineID	tli;
	uint64		xid;
	int32		seq;
} FeedCursor;

static InvStmt feed_state = {
	"SELECT feed_id, pruned_xid::text, pruned_seq FROM inventory.feed",
	0, {0}
};

/*
 * The rows after the cursor, the reservation's other columns read from the
 * ledger (settled_at and settled_by for a settlement only): a row of the
 * ledger an administrator deleted after its fold leaves them NULL.
 */
static InvStmt rows_after = {
	"SELECT c.xid::text, c.seq, c.order_id, c.batch_id, l.sku, l.qty, c.state,"
	"       l.created_at, l.expires_at,"
	"       CASE WHEN c.state OPERATOR(pg_catalog.<>) 'PENDING' THEN l.settled_at END,"
	"       CASE WHEN c.state OPERATOR(pg_catalog.<>) 'PENDING' THEN l.settled_by END"
	"  FROM inventory.change c"
	"  LEFT JOIN inventory.ledger l ON l.order_id OPERATOR(pg_catalog.=) c.order_id"
	"   AND l.batch_id OPERATOR(pg_catalog.=) c.batch_id"
	" WHERE ROW(c.xid, c.seq) OPERATOR(pg_catalog.>) ROW($1::pg_catalog.xid8, $2)"
	"   AND c.xid OPERATOR(pg_catalog.<)"
	"       pg_catalog.pg_snapshot_xmin(pg_catalog.pg_current_snapshot())"
	" ORDER BY c.xid, c.seq LIMIT $3",
	3, {TEXTOID, INT4OID, INT4OID}
};

/* The timeline this server's history is on. */
static TimeLineID
CurrentTimeline(void)
{
	TimeLineID	tli;

	if (!RecoveryInProgress())
		return GetWALInsertionTimeLine();
	(void) GetXLogReplayRecPtr(&tli);
	return tli;
}

/*
 * Parses and checks a cursor against this database's feed, on timeline
 * tli, which the worker pruned up to (pruned_xid, pruned_seq).
 */
static void
ReadCursor(const char *text, const char *feed_id, TimeLineID tli,
		   uint64 pruned_xid, int32 pruned_seq, FeedCursor *c)
{
	int			end = 0;

	if (sscanf(text, "%16[0-9a-f]-%u-%u-" UINT64_FORMAT "-%d%n",
			   c->feed_id, &c->dboid, &c->tli, &c->xid, &c->seq, &end) != 5 ||
		text[end] != '\0' || strlen(c->feed_id) != FEED_ID_LEN)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
				 errmsg("invalid cursor of the change feed: \"%s\"", text),
				 errdetail("A cursor is what inventory.changes() answered, as it answered it.")));
	if (c->dboid != MyDatabaseId || strcmp(c->feed_id, feed_id) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVENTORY_CURSOR),
				 errmsg("cursor \"%s\" is not of this database's change feed", text),
				 errdetail("It was answered by another database, or before a restore of this one, which starts the feed afresh."),
				 errhint(CURSOR_HINT)));
	if (c->tli != tli)
		ereport(ERROR,
				(errcode(ERRCODE_INVENTORY_CURSOR),
				 errmsg("cursor \"%s\" is of another timeline", text),
				 errdetail("It was answered before a failover or a point-in-time recovery: what followed it there may not be in this server's history."),
				 errhint(CURSOR_HINT)));
	if (c->xid < pruned_xid || (c->xid == pruned_xid && c->seq < pruned_seq))
		ereport(ERROR,
				(errcode(ERRCODE_INVENTORY_CURSOR),
				 errmsg("cursor \"%s\" is older than what the change feed keeps", text),
				 errdetail("Rows after it were pruned: they were older than inventory.change_retention."),
				 errhint(CURSOR_HINT)));
}

/*
 * inventory.changes(after text DEFAULT NULL, max_rows int DEFAULT 1000):
 * the feed's rows after the cursor (from its start when NULL), at most
 * max_rows, each with its own cursor.
 */
PG_FUNCTION_INFO_V1(inventory_changes);
Datum
inventory_changes(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	int32		max_rows;
	FeedCursor	after = {{0}, 0, 0, 0, 0};
	char	   *feed_id;
	Datum		args[3];
	TimeLineID	tli = CurrentTimeline();
	int			spi;
	uint64		n;

	SandboxRefuse();
	if (!OidIsValid(InvGetCatalog()->change_rel))
		elog(ERROR, "relation inventory.change does not exist");
	max_rows = PG_ARGISNULL(1) ? 1000 : PG_GETARG_INT32(1);
	if (max_rows <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("max_rows must be positive"),
				 errdetail("max_rows is %d.", max_rows)));
	InitMaterializedSRF(fcinfo, 0);

	spi = InvSpiConnect();
	if (InvStmtRun(&feed_state, NULL, NULL, true, 1) != 1)
		elog(ERROR, "inventory.feed has no row");
	feed_id = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
	if (!PG_ARGISNULL(0))
	{
		bool		isnull;

		ReadCursor(text_to_cstring(PG_GETARG_TEXT_PP(0)), feed_id, tli,
				   strtou64(SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2), NULL, 10),
				   DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 3, &isnull)),
				   &after);
	}

	args[0] = CStringGetTextDatum(psprintf(UINT64_FORMAT, after.xid));
	args[1] = Int32GetDatum(after.seq);
	args[2] = Int32GetDatum(max_rows);
	n = InvStmtRun(&rows_after, args, NULL, true, 0);
	/* a row of the express writer's commit is told once it is durable */
	if (n > 0)
		ExpressFlushCommitted();
	for (uint64 i = 0; i < n; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		Datum		v[CHANGES_COLUMNS];
		bool		nulls[CHANGES_COLUMNS];
		bool		isnull;

		CHECK_FOR_INTERRUPTS();
		v[0] = CStringGetTextDatum(psprintf("%s-%u-%u-%s-%d", feed_id, MyDatabaseId, tli,
											SPI_getvalue(tup, desc, 1),
											DatumGetInt32(SPI_getbinval(tup, desc, 2, &isnull))));
		nulls[0] = false;
		for (int c = 1; c < CHANGES_COLUMNS; c++)
			v[c] = SPI_getbinval(tup, desc, c + 2, &nulls[c]);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, v, nulls);
	}
	InvSpiFinish(spi);
	return (Datum) 0;
}
