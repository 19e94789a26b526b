/*
 * expire.c
 *	  Expiring overdue reservations: the workers do it (worker.c),
 *	  inventory.expire() does it on demand.
 *
 * Expiry settles PENDING reservations past their expires_at, in batches,
 * oldest first, skipping any row a buyer has locked at that moment, so it
 * never waits for a buyer; the trigger returns their units at commit.
 * With a reconciler set, the workers ask it first (reconcile.c).
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/timestamp.h"

#include "maintenance/expire.h"
#include "tables/sandbox.h"
#include "tables/catalog.h"
#include "tables/stmt.h"

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
	SandboxRunSettle(&expire_batch, values, nulls, 1, INV_SETTLED_BY_EXPIRY, false);
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
 * reconciler's next ask (reconcile.c), that ask.
 */
TimestampTz
ExpireNextDue(void)
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
