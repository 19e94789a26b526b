/*
 * keyscan.c
 *	  Index scans of the extension's tables by key, with a snapshot of the
 *	  caller's, without planning a query: the lookups of a key, a SKU's
 *	  movements and a buyer's reservations.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/table.h"
#include "access/tableam.h"
#include "executor/executor.h"
#include "utils/fmgroids.h"
#include "utils/rel.h"

#include "tables/keyscan.h"

void
KeyScanOpen(KeyScan *ks, Oid heapid, Oid indexid)
{
	ks->heap = table_open(heapid, AccessShareLock);
	ks->index = index_open(indexid, AccessShareLock);
	ks->slot = table_slot_create(ks->heap, NULL);
	ks->scan = NULL;
}

/* the key on the index's first column, a text */
void
KeyScanTextKey(KeyScan *ks, ScanKey key, text *value)
{
	ScanKeyEntryInitialize(key, 0, 1, BTEqualStrategyNumber, InvalidOid,
						   ks->index->rd_indcollation[0], F_TEXTEQ,
						   PointerGetDatum(value));
}

void
KeyScanStart(KeyScan *ks, Snapshot snapshot, ScanKey keys, int nkeys)
{
	ks->scan = index_beginscan(ks->heap, ks->index, snapshot, nkeys, 0);
	index_rescan(ks->scan, keys, nkeys, NULL, 0);
}

bool
KeyScanNext(KeyScan *ks)
{
	return index_getnext_slot(ks->scan, ForwardScanDirection, ks->slot);
}

void
KeyScanEnd(KeyScan *ks)
{
	index_endscan(ks->scan);
	ExecDropSingleTupleTableSlot(ks->slot);
	index_close(ks->index, NoLock);
	table_close(ks->heap, NoLock);
}
