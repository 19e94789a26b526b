/*
 * maintenance.c
 *	  The background work on a database's ledger: expiring overdue
 *	  reservations and folding settled movements into the SKUs' base
 *	  counters.  The workers do it (worker.c); inventory.expire() and
 *	  inventory.fold() do it on demand.
 *
 * Expiry settles PENDING reservations past their expires_at, in batches,
 * oldest first, skipping any row a buyer has locked at that moment, so it
 * never waits for a buyer; the trigger returns their units at commit.
 *
 * A SKU's counters are its base row in inventory.sku plus the effect of its
 * unfolded ledger rows.  A movement that can no longer change -- a restock,
 * a stocktake, a reservation in a final state -- can have its effect moved
 * into the base: the row is marked folded and the base grows by the same
 * amount, in one statement, so the counters do not change.  Loading a SKU
 * into the cache then reads only its base row and what changed since the
 * last fold, never its whole history.  The movement stays in the ledger:
 * its key still makes retried calls safe.
 *
 * The trigger allows these two writes only while FoldInProgress().  As
 * they change no counter, they pin no cache entry: a fold in flight is not
 * a change in flight for version-checked calls.  The
 * worker folds the SKUs that the cache knows to have settled movements
 * waiting; inventory.fold() looks at every SKU.
 *
 * With wal_level logical, a fold is bracketed by markers (markers.c), so
 * that a consumer of the logical decoding stream can tell its updates
 * from movements.
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "storage/lock.h"
#include "utils/array.h"
#include "utils/builtins.h"

#include "tables/catalog.h"
#include "tables/maintenance.h"
#include "tables/markers.h"
#include "tables/stmt.h"

/*
 * Folds up to $1 settled movements of the SKUs chosen by WHERE (with $2
 * where used).  The SKUs' base rows are locked first, skipping any that a
 * stocktake holds: a fold never waits for a buyer or an administrator.  A
 * movement whose SKU has no base row -- a restore may load the ledger
 * first -- is not folded.  The batch is taken in SKU order, which only
 * ledger_sku_idx gives cheaply: without it, the generic plan of a LIMIT
 * query on a large ledger may read it from its first page to find
 * movements written at its end.
 */
#define FOLD_SQL(WHERE) \
	"WITH skus AS (" \
	"  SELECT s.sku FROM inventory.sku s WHERE " WHERE \
	"   AND EXISTS (SELECT FROM inventory.ledger l" \
	"               WHERE l.sku OPERATOR(pg_catalog.=) s.sku AND NOT l.folded" \
	"               AND (l.state IS NULL OR l.state OPERATOR(pg_catalog.<>) 'PENDING'))" \
	"   FOR NO KEY UPDATE OF s SKIP LOCKED" \
	"), batch AS (" \
	"  SELECT l.ctid FROM inventory.ledger l" \
	"   WHERE l.sku OPERATOR(pg_catalog.=) ANY (ARRAY(SELECT sku FROM skus))" \
	"   AND NOT l.folded" \
	"   AND (l.state IS NULL OR l.state OPERATOR(pg_catalog.<>) 'PENDING')" \
	"   ORDER BY l.sku LIMIT $1 FOR UPDATE SKIP LOCKED" \
	"), marked AS (" \
	"  UPDATE inventory.ledger l SET folded = true" \
	"    FROM batch WHERE l.ctid OPERATOR(pg_catalog.=) batch.ctid" \
	"  RETURNING l.sku," \
	"    inventory.effect_on_hand(l.kind, l.state, l.qty) AS on_hand," \
	"    inventory.effect_version(l.kind, l.state, l.qty) AS version" \
	"), bases AS (" \
	"  UPDATE inventory.sku s" \
	"     SET on_hand = s.on_hand OPERATOR(pg_catalog.+) d.on_hand," \
	"         version = s.version OPERATOR(pg_catalog.+) d.version" \
	"    FROM (SELECT sku, pg_catalog.sum(on_hand)::bigint AS on_hand," \
	"                 pg_catalog.sum(version)::bigint AS version" \
	"            FROM marked GROUP BY sku) d" \
	"   WHERE s.sku OPERATOR(pg_catalog.=) d.sku" \
	"  RETURNING 1" \
	")" \
	"SELECT (SELECT pg_catalog.count(*) FROM marked)," \
	"       (SELECT pg_catalog.count(*) FROM bases)"

/* set while a fold moves effects from ledger rows into sku rows */
static bool folding = false;

/*
 * Lock a batch of overdue reservations due from $3 on, skipping those a
 * buyer is confirming or cancelling right now, and expire them; count them
 * and say when the last one was due.
 */
static InvStmt expire_batch = {
	"WITH expired AS ("
	" UPDATE inventory.ledger SET state = 'EXPIRED'"
	"  WHERE ctid OPERATOR(pg_catalog.=) ANY (ARRAY("
	"    SELECT ctid FROM inventory.ledger"
	"    WHERE NOT folded AND expires_at OPERATOR(pg_catalog.<=) $1"
	"    AND expires_at OPERATOR(pg_catalog.>=) $3"
	"    AND state OPERATOR(pg_catalog.=) 'PENDING'"
	"    ORDER BY expires_at LIMIT $2 FOR UPDATE SKIP LOCKED))"
	"  AND state OPERATOR(pg_catalog.=) 'PENDING'"
	"  RETURNING expires_at)"
	" SELECT pg_catalog.count(*), pg_catalog.max(expires_at) FROM expired",
	3, {TIMESTAMPTZOID, INT8OID, TIMESTAMPTZOID},
	/*
	 * Always the walk of ledger_due_idx in order that LIMIT stops: a custom
	 * plan for a batch from the beginning, with statistics from before a
	 * backlog arrived, sorted a million rows to take a thousand (0.7 s
	 * against 0.5 ms).
	 */
	.options = CURSOR_OPT_GENERIC_PLAN
};

/*
 * Expires up to max_rows overdue PENDING reservations (all when negative),
 * oldest first.  Returns how many.
 *
 * With from, only those due at or after *from, which is moved to when the
 * last one expired was due: a worker clearing a backlog batch after batch
 * starts each batch where the last one ended, instead of stepping again
 * over the rows it expired, which stay in ledger_due_idx until they are
 * folded.  A row skipped because a buyer held it is found again once the
 * caller starts from the beginning.
 */
int64
ExpireOverdue(int64 max_rows, TimestampTz *from)
{
	Datum		values[3];
	char		nulls[4] = "   ";
	TimestampTz start;
	int64		n;
	int			spi;

	TIMESTAMP_NOBEGIN(start);
	if (from != NULL)
		start = *from;
	values[0] = TimestampTzGetDatum(GetCurrentStatementStartTimestamp());
	values[1] = Int64GetDatum(max_rows);
	values[2] = TimestampTzGetDatum(start);
	if (max_rows < 0)
		nulls[1] = 'n';
	spi = InvSpiConnect();
	InvStmtRun(&expire_batch, values, nulls, false, 1);
	{
		bool		isnull;
		Datum		d;

		n = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull);
		if (from != NULL && !isnull)
			*from = DatumGetTimestampTz(d);
	}
	InvSpiFinish(spi);
	return n;
}

/* Is this backend folding now?  The trigger lets only a fold mark rows folded. */
bool
FoldInProgress(void)
{
	return folding;
}

/* the worker's: the SKUs the cache says have settled movements */
static InvStmt fold_skus = {FOLD_SQL("s.sku OPERATOR(pg_catalog.=) ANY ($2)"), 2, {INT8OID, TEXTARRAYOID}};
/* inventory.fold()'s: every SKU */
static InvStmt fold_all = {FOLD_SQL("true"), 1, {INT8OID}};

/*
 * Folds take turns, one at a time in a database: a fold updates the base
 * rows of many SKUs, in no fixed order, and two at once could lock them in
 * opposite orders and deadlock.  A stocktake locks one base row and waits
 * for nothing after that, so it never closes a cycle with a fold.  The lock
 * is an object lock on inventory.sku with objid 0, held to the end of the
 * transaction.  Returns false when the caller would rather not wait.
 */
static bool
LockFold(bool wait)
{
	LOCKTAG		tag;

	SET_LOCKTAG_OBJECT(tag, MyDatabaseId, InvGetCatalog()->sku_rel, 0, 0);
	return LockAcquire(&tag, ExclusiveLock, false, !wait) != LOCKACQUIRE_NOT_AVAIL;
}

/*
 * Folds up to max_rows settled movements (all when negative) of the given
 * SKUs, or of every SKU when skus is NULL.  With wait false, returns 0 at
 * once if another fold is under way.
 */
int64
FoldSettled(char **skus, int nskus, int64 max_rows, bool wait)
{
	InvStmt    *stmt = skus ? &fold_skus : &fold_all;
	Datum		args[2];
	char		nulls[3] = {max_rows < 0 ? 'n' : ' ', ' ', '\0'};
	int64		folded = 0;
	int64		skus_folded = 0;
	int			spi;

	if (!LockFold(wait))
		return 0;
	spi = InvSpiConnect();
	args[0] = Int64GetDatum(max_rows);
	if (skus)
	{
		Datum	   *elems = palloc(nskus * sizeof(Datum));

		for (int i = 0; i < nskus; i++)
			elems[i] = CStringGetTextDatum(skus[i]);
		args[1] = PointerGetDatum(construct_array(elems, nskus, TEXTOID, -1, false, TYPALIGN_INT));
	}

	MarkFoldBegin();
	folding = true;
	PG_TRY();
	{
		bool		isnull;

		InvStmtRun(stmt, args, nulls, false, 1);
		folded = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
											 SPI_tuptable->tupdesc, 1, &isnull));
		skus_folded = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
												  SPI_tuptable->tupdesc, 2, &isnull));
	}
	PG_FINALLY();
	{
		folding = false;
	}
	PG_END_TRY();
	MarkFoldEnd(folded, skus_folded);
	InvSpiFinish(spi);
	return folded;
}

/* The expires_at of the first PENDING reservation (a 0.2 schema). */
static InvStmt first_expiry = {
	"SELECT pg_catalog.min(expires_at) FROM inventory.ledger"
	" WHERE NOT folded AND state OPERATOR(pg_catalog.=) 'PENDING'",
	0
};

/*
 * When the expiry is next due: the first PENDING reservation's expires_at,
 * skipping the orders that wait for a later ask, or the first later ask.
 */
static InvStmt next_due = {
	"SELECT LEAST("
	" (SELECT l.expires_at FROM inventory.ledger l"
	"   WHERE NOT l.folded AND l.state OPERATOR(pg_catalog.=) 'PENDING'"
	"     AND NOT EXISTS (SELECT FROM inventory.reconcile_wait w"
	"                      WHERE w.order_id OPERATOR(pg_catalog.=) l.order_id"
	"                        AND w.next_ask OPERATOR(pg_catalog.>) $1)"
	"   ORDER BY l.expires_at LIMIT 1),"
	" (SELECT pg_catalog.min(w.next_ask) FROM inventory.reconcile_wait w"
	"   WHERE EXISTS (SELECT FROM inventory.ledger l"
	"                  WHERE l.order_id OPERATOR(pg_catalog.=) w.order_id"
	"                    AND l.state OPERATOR(pg_catalog.=) 'PENDING')))",
	1, {TIMESTAMPTZOID}
};

/*
 * When the expiry is next due, or DT_NOEND: the first PENDING
 * reservation's expires_at, or for an order that waits for its
 * reconciler's next ask (tables/reconcile.c), that ask.
 */
TimestampTz
ExpiryNextDue(void)
{
	TimestampTz result = DT_NOEND;
	Datum		values[1];
	int			spi = InvSpiConnect();
	uint64		n;

	values[0] = TimestampTzGetDatum(GetCurrentTimestamp());
	if (OidIsValid(InvGetCatalog()->reconcile_wait_rel))
		n = InvStmtRun(&next_due, values, NULL, false, 1);
	else
		n = InvStmtRun(&first_expiry, NULL, NULL, false, 1);
	if (n == 1)
	{
		bool		isnull;
		Datum		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);

		if (!isnull)
			result = DatumGetTimestampTz(d);
	}
	InvSpiFinish(spi);
	return result;
}
