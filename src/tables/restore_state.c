/*
 * restore_state.c
 *	  inventory.restore_state: the marker of a restore of this database
 *	  that is not complete.
 *
 * A restore loads inventory.sku and inventory.ledger in a COPY each, and a
 * pg_restore without -1 commits each on its own: one that fails between
 * them would leave SKUs on sale on their base counters alone, without the
 * movements that were not folded into them.  So a restoring COPY into a
 * database whose other table is empty -- the first half of a restore --
 * sets the marker, one row in the extension's own table (WAL-logged, so it
 * survives a crash, a standby's promotion and a point-in-time recovery
 * that stops between the two COPYs; pg_dump does not dump it), and each
 * restoring COPY records its table; when both have been restored since the
 * marker was set, in either order, the row is deleted.  A restoring COPY
 * into a database that has the other table's rows adds to it, and sets no
 * marker.  Restores take turns (enforce/restore.c), and the tables are read
 * and the marker written with a fresh snapshot, so that one restore sees
 * and ends what the one before it committed, also in a REPEATABLE READ
 * transaction whose snapshot is older.  Its rows change in the restoring
 * transaction, with the COPY: a COPY that fails leaves the marker as it
 * was.  While it stands nothing of the database is sold
 * (shmem/cache_restore.c), until an administrator finishes the restore
 * (refused while a table not restored since is empty) or abandons it.  A
 * schema older than 0.3 has no marker.
 */
#include "postgres.h"

#include "executor/spi.h"
#include "utils/timestamp.h"

#include "tables/catalog.h"
#include "tables/restore_state.h"
#include "tables/stmt.h"

static InvStmt read_marker = {
	"SELECT started_at FROM inventory.restore_state", 0
};
static InvStmt read_tables = {
	"SELECT started_at, sku_restored, ledger_restored FROM inventory.restore_state", 0
};
static InvStmt set_marker = {
	"INSERT INTO inventory.restore_state DEFAULT VALUES ON CONFLICT DO NOTHING", 0
};
static InvStmt ledger_empty = {
	"SELECT FROM inventory.ledger LIMIT 1", 0
};
static InvStmt sku_empty = {
	"SELECT FROM inventory.sku LIMIT 1", 0
};
static InvStmt sku_done = {
	"UPDATE inventory.restore_state SET sku_restored = true", 0
};
static InvStmt ledger_done = {
	"UPDATE inventory.restore_state SET ledger_restored = true", 0
};
static InvStmt clear_if_done = {
	"DELETE FROM inventory.restore_state WHERE sku_restored AND ledger_restored", 0
};
static InvStmt clear_marker = {
	"DELETE FROM inventory.restore_state", 0
};

static bool
HasMarker(void)
{
	return OidIsValid(InvGetCatalog()->restore_state_rel);
}

/*
 * Does a restore of this database stand incomplete?  Read with a fresh
 * snapshot: the answer is shared with other transactions (see
 * shmem/cache_restore.c).  *started_at, if given, is when it began.
 */
bool
RestoreStateRead(TimestampTz *started_at)
{
	bool		found;
	int			spi;

	if (!HasMarker())
		return false;
	spi = InvSpiConnect();
	found = InvStmtRun(&read_marker, NULL, NULL, true, 1) == 1;
	if (found && started_at != NULL)
	{
		bool		isnull;

		*started_at = DatumGetTimestampTz(SPI_getbinval(SPI_tuptable->vals[0],
														SPI_tuptable->tupdesc, 1, &isnull));
	}
	InvSpiFinish(spi);
	return found;
}

/*
 * A restoring COPY of the ledger (or of inventory.sku) begins: if the other
 * table is empty, it is the first half of a restore, and the marker stands
 * unless it does already.
 */
void
RestoreStateBegin(bool ledger)
{
	int			spi;

	if (!HasMarker())
		return;
	spi = InvSpiConnect();
	if (InvStmtRun(&read_marker, NULL, NULL, true, 1) == 0 &&
		InvStmtRun(ledger ? &sku_empty : &ledger_empty, NULL, NULL, true, 1) == 0)
		InvStmtWriteLatest(&set_marker, NULL, NULL);
	InvSpiFinish(spi);
}

/*
 * A restoring COPY has loaded its table: the marker goes once both are, and
 * then returns true.  The marker may have been set by the restore this one
 * waited for, after this transaction's snapshot (REPEATABLE READ): it is
 * changed as committed now.
 */
bool
RestoreStateTableDone(bool ledger)
{
	uint64		cleared;
	int			spi;

	if (!HasMarker())
		return false;
	spi = InvSpiConnect();
	InvStmtWriteLatest(ledger ? &ledger_done : &sku_done, NULL, NULL);
	cleared = InvStmtWriteLatest(&clear_if_done, NULL, NULL);
	InvSpiFinish(spi);
	return cleared > 0;
}

/*
 * Before an administrator finishes the restore: the table that has not been
 * restored since the marker was set and is empty, if any, or NULL (also when
 * no marker stands).  *started_at, if given, is when the restore began.
 */
const char *
RestoreStateMissing(TimestampTz *started_at)
{
	const char *missing = NULL;
	int			spi;

	if (!HasMarker())
		return NULL;
	spi = InvSpiConnect();
	if (InvStmtRun(&read_tables, NULL, NULL, true, 1) == 1)
	{
		HeapTuple	tup = SPI_tuptable->vals[0];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;
		TimestampTz since = DatumGetTimestampTz(SPI_getbinval(tup, desc, 1, &isnull));
		bool		sku_restored = DatumGetBool(SPI_getbinval(tup, desc, 2, &isnull));
		bool		ledger_restored = DatumGetBool(SPI_getbinval(tup, desc, 3, &isnull));

		if (!sku_restored && InvStmtRun(&sku_empty, NULL, NULL, true, 1) == 0)
			missing = "inventory.sku";
		else if (!ledger_restored && InvStmtRun(&ledger_empty, NULL, NULL, true, 1) == 0)
			missing = "inventory.ledger";
		if (started_at != NULL)
			*started_at = since;
	}
	InvSpiFinish(spi);
	return missing;
}

/* An administrator ends the restore; returns whether the marker stood. */
bool
RestoreStateClear(void)
{
	uint64		n;
	int			spi;

	if (!HasMarker())
		return false;
	spi = InvSpiConnect();
	n = InvStmtWriteLatest(&clear_marker, NULL, NULL);
	InvSpiFinish(spi);
	return n > 0;
}
