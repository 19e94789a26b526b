/*
 * restore.c
 *	  Recognises a restore: COPY FROM into inventory.sku or inventory.ledger
 *	  by the owner of the table.
 *
 * pg_dump writes the tables' rows as they are -- reservations in every
 * state, folded movements, SKUs' base counters -- and pg_restore, or psql
 * reading a plain dump, loads them with COPY.  Those rows are history, not
 * new movements, so the trigger cannot hold them to the rules of a new
 * movement (a new reservation is PENDING, nothing new is folded).  Instead,
 * while such a COPY runs, the trigger checks each row for what a movement
 * that the state machine produced must look like, and when the COPY ends
 * every SKU it touched must be within bounds (PendingCheckRestored): a
 * consistent dump restores whole, an inconsistent one fails as a whole.
 *
 * The two tables may come in either order.  pg_dump writes inventory.sku
 * first, because the ledger declares a foreign key to it, but a parallel
 * pg_restore loads them at the same time.  So restores take turns (a lock
 * held to the end of the transaction), and each checks what it can see
 * whole: the ledger's restore the SKUs whose base row is there, and any
 * base below zero; the restore of inventory.sku the SKUs whose movements
 * are there.  Until its base row arrives, a SKU restored by the ledger
 * alone does not exist: it is neither sold nor folded.
 *
 * An INSERT is never a restore, nor a COPY of some of the columns: they
 * follow the rules of a new movement, whoever runs them.
 */
#include "postgres.h"

#include "access/table.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/builtins.h"
#include "utils/rel.h"
#include "utils/acl.h"

#include "cache.h"
#include "catalog.h"
#include "ledger.h"
#include "restore.h"
#include "spi.h"
#include "xact.h"

/* the table a COPY is restoring, for the rest of that statement */
static Oid	restoring_rel = InvalidOid;

static InvStmt negative_bases = {
	"SELECT sku FROM inventory.sku WHERE on_hand OPERATOR(pg_catalog.<) 0", 0
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

/* Does the COPY name every column, as pg_dump's do (or none, meaning all)? */
static bool
CopiesWholeRows(CopyStmt *stmt, Oid relid)
{
	Relation	rel;
	int			live = 0;

	if (stmt->attlist == NIL)
		return true;
	/* the lock COPY FROM takes next */
	rel = table_open(relid, RowExclusiveLock);
	for (int i = 0; i < RelationGetDescr(rel)->natts; i++)
	{
		if (!TupleDescAttr(RelationGetDescr(rel), i)->attisdropped)
			live++;
	}
	table_close(rel, NoLock);
	/* COPY itself refuses a column named twice */
	return list_length(stmt->attlist) == live;
}

/*
 * Called before a COPY runs: is it a restore of one of the extension's
 * tables?  If so, remembers it until RestoreFinish() or RestoreReset().
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
	LockRestore(cat->sku_rel);
	restoring_rel = relid;
	return true;
}

/*
 * A base below zero is right only with movements that bring it back: once
 * the ledger is restored, check every such SKU, touched by it or not.
 */
static void
MarkNegativeBases(void)
{
	int			spi = InvSpiConnect();
	uint64		n = InvStmtRun(&negative_bases, NULL, NULL, true, 0);
	char	  **skus = SPI_palloc(Max(n, 1) * sizeof(char *));

	for (uint64 i = 0; i < n; i++)
	{
		char	   *sku = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1);

		skus[i] = SPI_palloc(strlen(sku) + 1);
		strcpy(skus[i], sku);
	}
	InvSpiFinish(spi);

	for (uint64 i = 0; i < n; i++)
	{
		InvKey		key;

		CacheMakeKey(&key, skus[i], strlen(skus[i]));
		PendingPin(&key);
		PendingMarkRestoring(&key);
	}
}

/* The COPY has loaded every row: check what it restored. */
void
RestoreFinish(void)
{
	bool		ledger = (restoring_rel == InvGetCatalog()->ledger_rel);

	restoring_rel = InvalidOid;
	if (ledger)
		MarkNegativeBases();
	PendingCheckRestored(!ledger);
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
