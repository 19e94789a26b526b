/*
 * keyscan.h
 *	  Index scans of the extension's tables by key.  See keyscan.c.
 */
#ifndef INVENTORY_KEYSCAN_H
#define INVENTORY_KEYSCAN_H

#include "postgres.h"

#include "access/genam.h"
#include "access/skey.h"
#include "executor/tuptable.h"
#include "utils/relcache.h"
#include "utils/snapshot.h"

/*
 * An index scan of one of the extension's tables with a snapshot of the
 * caller's.  Open it, set its keys against ks->index, start it, read
 * ks->slot, end it.  The locks stay to the end of the transaction, as the
 * executor keeps them.
 */
typedef struct KeyScan
{
	Relation	heap;
	Relation	index;
	TupleTableSlot *slot;
	IndexScanDesc scan;
} KeyScan;

extern void KeyScanOpen(KeyScan *ks, Oid heapid, Oid indexid);
extern void KeyScanTextKey(KeyScan *ks, ScanKey key, text *value);
extern void KeyScanStart(KeyScan *ks, Snapshot snapshot, ScanKey keys, int nkeys);
extern bool KeyScanNext(KeyScan *ks);
extern void KeyScanEnd(KeyScan *ks);

#endif							/* INVENTORY_KEYSCAN_H */
