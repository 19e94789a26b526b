/*
 * restore.c
 *	  Recognises a restore: COPY FROM into inventory.sku or inventory.ledger,
 *	  of every column (a dump of an earlier version may lack the columns
 *	  added since), by the owner of the table.
 *
 * pg_dump writes the tables' rows as they are -- reservations in every
 * state, folded movements, SKUs' base counters -- and pg_restore, or psql
 * reading a plain dump, loads them with COPY.  Those rows are history, not
 * new movements, so the trigger cannot hold them to the rules of a new
 * movement (a new reservation is PENDING, nothing new is folded).  Instead,
 * while such a COPY runs, the trigger checks each row for what a movement
 * that the state machine produced must look like, and when the COPY ends
 * every SKU must be within bounds (0 <= reserved <= on_hand): a consistent
 * dump restores whole, an inconsistent one fails as a whole.
 *
 * A restore does not go through the cache: it starts only when no
 * transaction has a change in flight in the database, and until it commits
 * nothing of the database is cached or sold (cache.c, "Restores"); then
 * every SKU is loaded from what it restored.  So a restore is bounded by
 * nothing but the tables, whatever the number of SKUs.
 *
 * The two tables may come in either order.  pg_dump writes inventory.sku
 * first, because the ledger declares a foreign key to it, but a parallel
 * pg_restore loads them at the same time.  So restores of a database take
 * turns (a lock held to the end of the transaction), and each checks what
 * it can see whole: the ledger's restore every SKU, the restore of
 * inventory.sku the SKUs whose movements are there, or every SKU when it
 * completes a restore whose ledger came first.  Until its row
 * arrives, a SKU restored by the ledger alone does not exist: it is neither
 * sold nor folded, and a SKU created later is checked against those
 * movements (PendingCheckBounds).
 *
 * A restore may stop half-way: pg_restore without -1 commits each table's
 * COPY on its own, and one that fails between them leaves one table
 * restored.  A restoring COPY into a database whose other table is empty
 * therefore sets the database's marker of an incomplete restore
 * (tables/restore_state.c), which stands until both tables have been
 * restored since; while it stands nothing of
 * the database is sold or touched by the workers, until an administrator
 * finishes the restore (the tables are checked whole, and neither may be
 * missing) or abandons it.
 *
 * An INSERT is never a restore, nor a COPY of some of the columns (but for
 * the columns a dump of an earlier version lacks, added_later): they follow
 * the rules of a new movement, whoever runs them.
 *
 * With wal_level logical, each restoring COPY is bracketed by markers
 * (markers.c), so that a consumer of the logical decoding stream can tell
 * its rows, history, from new movements.
 */
#include "postgres.h"

#include "access/table.h"
#include "catalog/namespace.h"
#include "commands/extension.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/rel.h"
#include "utils/timestamp.h"

#include "enforce/feed.h"
#include "enforce/restore.h"
#include "shmem/cache.h"
#include "shmem/cache_restore.h"
#include "shmem/pool.h"
#include "tables/catalog.h"
#include "tables/markers.h"
#include "tables/restore_state.h"
#include "tables/stmt.h"
#include "xact/pending.h"

/* the table a COPY is restoring, for the rest of that statement */
static Oid	restoring_rel = InvalidOid;

#define OUT_OF_BOUNDS \
	"SELECT s.sku, s.on_hand, s.reserved, s.available FROM inventory.stock s" \
	" WHERE (s.reserved OPERATOR(pg_catalog.<) 0 OR s.available OPERATOR(pg_catalog.<) 0)"

/* after the ledger: every SKU */
static InvStmt out_of_bounds = {OUT_OF_BOUNDS " LIMIT 1", 0};

/* after inventory.sku: the SKUs whose movements are there already */
static InvStmt out_of_bounds_moved = {
	OUT_OF_BOUNDS " AND EXISTS (SELECT FROM inventory.ledger l"
	" WHERE l.sku OPERATOR(pg_catalog.=) s.sku) LIMIT 1", 0
};

/*
 * Restores of a database take turns: an object lock on inventory.sku with
 * objid 1 (a fold's is objid 0), held to the end of the transaction.
 */
static void
LockRestore(Oid sku_rel)
{
	LOCKTAG		tag;

	SET_LOCKTAG_OBJECT(tag, MyDatabaseId, sku_rel, 1, 0);
	(void) LockAcquire(&tag, ExclusiveLock, false, false);
}

/*
 * Columns that a later version added, which a dump of an earlier one does
 * not have: its COPY leaves them NULL, as the rows it restores had none.
 */
static const char *const added_later[] = {
	"buyer_id", "max_per_buyer", "sale_starts", "sale_ends",	/* 0.2 */
	"settled_by",				/* 0.3 */
};

static bool
AddedLater(const char *column)
{
	for (int i = 0; i < (int) lengthof(added_later); i++)
	{
		if (strcmp(column, added_later[i]) == 0)
			return true;
	}
	return false;
}

/*
 * Does the COPY name every column, as pg_dump's do (or none, meaning all),
 * but those a dump of an earlier version lacks?
 */
static bool
CopiesWholeRows(CopyStmt *stmt, Oid relid)
{
	Relation	rel;
	TupleDesc	desc;
	bool		whole = true;

	if (stmt->attlist == NIL)
		return true;
	/* the lock COPY FROM takes next */
	rel = table_open(relid, RowExclusiveLock);
	desc = RelationGetDescr(rel);
	for (int i = 0; i < desc->natts && whole; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		const char *name = NameStr(att->attname);
		bool		named = false;
		ListCell   *lc;

		if (att->attisdropped || AddedLater(name))
			continue;
		foreach(lc, stmt->attlist)
		{
			if (strcmp(strVal(lfirst(lc)), name) == 0)
			{
				named = true;
				break;
			}
		}
		whole = named;
	}
	table_close(rel, NoLock);
	return whole;
}

/*
 * Called before a COPY runs: is it a restore of one of the extension's
 * tables?  If so, starts it and remembers it until RestoreFinish() or
 * RestoreReset().
 */
bool
RestoreBegin(CopyStmt *stmt)
{
	const InvCatalog *cat;
	Oid			relid;

	if (!stmt->is_from || stmt->relation == NULL)
		return false;
	if (!OidIsValid(get_extension_oid("inventory", true)))
		return false;
	relid = RangeVarGetRelid(stmt->relation, NoLock, true);
	if (!OidIsValid(relid))
		return false;
	cat = InvGetCatalog();
	if (relid != cat->ledger_rel && relid != cat->sku_rel)
		return false;
	if (!pg_class_ownercheck(relid, GetUserId()) || !CopiesWholeRows(stmt, relid))
		return false;

	/* SKUs pinned already: the transaction has changed inventory */
	if (PendingMark() > 0)
		ereport(ERROR,
				(errcode(ERRCODE_ACTIVE_SQL_TRANSACTION),
				 errmsg("a restore must come before any other inventory change in its transaction"),
				 errdetail("This transaction has already changed inventory."),
				 errhint("Restore in a transaction of its own, or first.")));
	LockRestore(cat->sku_rel);
	CacheBeginRestore();
	RestoreStateBegin(relid == cat->ledger_rel);
	if (relid == cat->ledger_rel)
		FeedRestored();
	CacheRestoreMarkerChanged();
	MarkRestoreBegin(relid);
	restoring_rel = relid;
	return true;
}

/*
 * Every SKU that stmt reads must be within bounds (0 <= reserved <= on_hand)
 * with the rows restored; raises an error naming the first that is not,
 * with hint.
 */
static void
CheckBounds(InvStmt *stmt, const char *hint)
{
	int			spi = InvSpiConnect();

	if (InvStmtRun(stmt, NULL, NULL, true, 1) > 0)
	{
		HeapTuple	tup = SPI_tuptable->vals[0];
		TupleDesc	desc = SPI_tuptable->tupdesc;

		ereport(ERROR,
				(errcode(ERRCODE_CHECK_VIOLATION),
				 errmsg("restored rows of sku \"%s\" are inconsistent", SPI_getvalue(tup, desc, 1)),
				 errdetail("With them the SKU would have on_hand %s and reserved %s, which leaves %s available.",
						   SPI_getvalue(tup, desc, 2), SPI_getvalue(tup, desc, 3),
						   SPI_getvalue(tup, desc, 4)),
				 errhint("%s", hint)));
	}
	InvSpiFinish(spi);
}

/*
 * The COPY has loaded every row, rows of them (negative when not known):
 * check what the tables now hold.
 */
void
RestoreFinish(int64 rows)
{
	Oid			relid = restoring_rel;
	bool		ledger = (relid == InvGetCatalog()->ledger_rel);
	bool		complete;

	restoring_rel = InvalidOid;
	/* the whole ledger is there when this restore completes one */
	complete = RestoreStateTableDone(ledger);
	CheckBounds(ledger || complete ? &out_of_bounds : &out_of_bounds_moved,
				"Restore inventory.sku and inventory.ledger together, from one dump of one database.");
	/* what fell due while the restore stood incomplete is due at once */
	PoolNoteDue(GetCurrentTimestamp());
	MarkRestoreEnd(relid, rows);
}

/*
 * inventory.restore_finish() (check) and restore_abandon(): an
 * administrator ends a restore that stands incomplete.  Finishing checks
 * every SKU as the restore of the ledger does, and refuses while a table
 * that has not been restored since the marker was set is empty: SKUs
 * within bounds on their base counters alone say nothing of the movements
 * that are missing.  Abandoning checks nothing, and the SKUs sell from
 * what is there.  Returns whether one stood.
 */
bool
RestoreEndIncomplete(bool check)
{
	/* as a restore does, so that none runs meanwhile */
	LockRestore(InvGetCatalog()->sku_rel);
	if (!RestoreStateRead(NULL))
		return false;
	if (check)
	{
		TimestampTz since = 0;
		const char *missing;

		CheckBounds(&out_of_bounds,
					"Restore the missing table from the same dump, or abandon the restore with inventory.restore_abandon().");
		missing = RestoreStateMissing(&since);
		if (missing != NULL)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("cannot finish the incomplete restore of this database's inventory"),
					 errdetail("%s has not been restored since the restore began at %s, and it is empty.",
							   missing, timestamptz_to_str(since)),
					 errhint("Restore %s from the same dump, and the restore ends by itself; or end the restore without it with SELECT inventory.restore_abandon().",
							 missing)));
	}
	if (!RestoreStateClear())
		return false;
	CacheRestoreMarkerChanged();
	/* the workers come back for what fell due meanwhile */
	PoolNoteDue(GetCurrentTimestamp());
	return true;
}

void
RestoreReset(void)
{
	restoring_rel = InvalidOid;
}

/* Is a restore of relid under way in this statement? */
bool
RestoreInProgress(Oid relid)
{
	return OidIsValid(restoring_rel) && restoring_rel == relid;
}
