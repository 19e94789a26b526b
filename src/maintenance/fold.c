/*
 * fold.c
 *	  Folding settled movements into the SKUs' base counters: the workers
 *	  do it (worker.c), inventory.fold() does it on demand.
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
 * The trigger allows these two writes only while a fold runs
 * (SandboxFolding()).  As they change no counter, they pin no cache entry:
 * a fold in flight is not a change in flight for version-checked calls.
 * The worker folds the SKUs that the cache knows to have settled movements
 * waiting; inventory.fold() looks at every SKU.
 *
 * With wal_level logical, a fold is bracketed by markers (markers.c), so
 * that a consumer of the logical decoding stream can tell its updates
 * from movements.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "storage/lock.h"
#include "utils/array.h"
#include "utils/builtins.h"

#include "maintenance/fold.h"
#include "tables/catalog.h"
#include "tables/markers.h"
#include "tables/sandbox.h"
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
	volatile int64 folded = 0;
	volatile int64 skus_folded = 0;
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
	SandboxSetFolding(true);
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
		SandboxSetFolding(false);
	}
	PG_END_TRY();
	MarkFoldEnd(folded, skus_folded);
	InvSpiFinish(spi);
	return folded;
}
