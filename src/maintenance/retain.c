/*
 * retain.c
 *	  The change feed's retention: the worker prunes the rows older than
 *	  inventory.change_retention.
 *
 * The feed is read in the order of its keys (xid, seq), so what is pruned
 * is a head of that order: the rows from the first, as long as each is
 * older than the retention (when it was made or settled).  A row
 * of a long transaction that is younger stops the pruning until it ages,
 * whatever follows it; so a consumer that is behind finds either every
 * row after its cursor or, for a cursor before the pruned head, an error
 * (api/changes.c), never a gap.  How far the feed was pruned is kept in
 * inventory.feed.  A round prunes at most max_rows rows, in the worker's
 * transaction.
 */
#include "postgres.h"

#include <limits.h>

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/timestamp.h"

#include "maintenance/retain.h"
#include "tables/catalog.h"
#include "tables/stmt.h"

static int	inv_change_retention = 7 * 24 * 3600;	/* seconds */

static InvStmt head = {
	"SELECT xid::text, seq, at OPERATOR(pg_catalog.<) $1"
	"  FROM inventory.change ORDER BY xid, seq LIMIT $2",
	2, {TIMESTAMPTZOID, INT4OID}
};

static InvStmt prune = {
	"DELETE FROM inventory.change"
	" WHERE ROW(xid, seq) OPERATOR(pg_catalog.<=) ROW($1::pg_catalog.xid8, $2)",
	2, {TEXTOID, INT4OID}
};

static InvStmt pruned_to = {
	"UPDATE inventory.feed SET pruned_xid = $1::pg_catalog.xid8, pruned_seq = $2",
	2, {TEXTOID, INT4OID}
};

void
RetainInit(void)
{
	DefineCustomIntVariable("inventory.change_retention",
							"How long the change feed keeps a row, from when its reservation was made or settled.",
							"A worker prunes older rows; a cursor before them is refused.  0 keeps every row.",
							&inv_change_retention,
							7 * 24 * 3600, 0, INT_MAX,
							PGC_SIGHUP, GUC_UNIT_S,
							NULL, NULL, NULL);
}

/*
 * Prunes the head of the feed older than the retention, at most max_rows
 * rows; how many.
 */
int64
RetainPrune(TimestampTz now, int max_rows)
{
	Datum		values[2];
	int			spi;
	uint64		n;
	uint64		old = 0;

	if (inv_change_retention == 0 || !OidIsValid(InvGetCatalog()->change_rel))
		return 0;
	values[0] = TimestampTzGetDatum(now - (TimestampTz) inv_change_retention * USECS_PER_SEC);
	values[1] = Int32GetDatum(max_rows);
	spi = InvSpiConnect();
	n = InvStmtRun(&head, values, NULL, true, 0);
	while (old < n)
	{
		bool		isnull;

		if (!DatumGetBool(SPI_getbinval(SPI_tuptable->vals[old], SPI_tuptable->tupdesc, 3, &isnull)))
			break;
		old++;
	}
	if (old > 0)
	{
		HeapTuple	last = SPI_tuptable->vals[old - 1];
		bool		isnull;

		values[0] = CStringGetTextDatum(SPI_getvalue(last, SPI_tuptable->tupdesc, 1));
		values[1] = SPI_getbinval(last, SPI_tuptable->tupdesc, 2, &isnull);
		InvStmtRun(&prune, values, NULL, false, 0);
		InvStmtRun(&pruned_to, values, NULL, false, 0);
	}
	InvSpiFinish(spi);
	return (int64) old;
}
