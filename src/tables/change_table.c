/*
 * change_table.c
 *	  Writing inventory.change, the change feed's rows.
 *
 * A row is written for every sale while the feed is on, from the ledger's
 * trigger: straight into the heap and its one index, without the executor
 * or a plan, as the catalogs' rows are written, since that path is a good
 * part of what a sale costs.  The table has no trigger, no constraint but
 * its primary key, no generated column and no policy to apply, and only
 * the extension writes it; a role's right on it does not enter (the row is
 * the ledger's, whose write the trigger checked).
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/heapam.h"
#include "access/table.h"
#include "catalog/index.h"
#include "nodes/execnodes.h"
#include "utils/rel.h"
#include "utils/timestamp.h"
#include "utils/xid8.h"

#include "tables/catalog.h"
#include "tables/change_table.h"

#define CHANGE_COLUMNS 6

void
ChangeInsert(FullTransactionId xid, int32 seq, text *order_id, int32 batch_id,
			 InvState state, TimestampTz at)
{
	const InvCatalog *cat = InvGetCatalog();
	Relation	rel = table_open(cat->change_rel, RowExclusiveLock);
	Relation	idx = index_open(cat->change_key_index, RowExclusiveLock);
	Datum		values[CHANGE_COLUMNS];
	bool		nulls[CHANGE_COLUMNS] = {0};
	Datum		key[2];
	bool		key_nulls[2] = {false, false};
	HeapTuple	tup;

	if (RelationGetDescr(rel)->natts != CHANGE_COLUMNS)
		elog(ERROR, "inventory.change has %d columns, expected %d",
			 RelationGetDescr(rel)->natts, CHANGE_COLUMNS);
	values[0] = FullTransactionIdGetDatum(xid);
	values[1] = Int32GetDatum(seq);
	values[2] = PointerGetDatum(order_id);
	values[3] = Int32GetDatum(batch_id);
	values[4] = InvStateGetDatum(state);
	values[5] = TimestampTzGetDatum(at);
	tup = heap_form_tuple(RelationGetDescr(rel), values, nulls);
	simple_heap_insert(rel, tup);

	key[0] = values[0];
	key[1] = values[1];
	(void) index_insert(idx, key, key_nulls, &tup->t_self, rel, UNIQUE_CHECK_YES,
						false, BuildIndexInfo(idx));
	heap_freetuple(tup);
	index_close(idx, NoLock);
	table_close(rel, NoLock);
}
