/*
 * sku_row.c
 *	  A row of inventory.sku: a SKU's base counters -- what the worker has
 *	  folded into it -- and its commerce rules (enforce/rules.c applies
 *	  them).  The one place that reads these columns; the ledger's rows are
 *	  ledger_row.c's.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "executor/tuptable.h"
#include "utils/rel.h"
#include "utils/timestamp.h"

#include "tables/catalog.h"
#include "tables/keyscan.h"
#include "tables/sku_row.h"

/* Reads the rules of a row of inventory.sku; NULL columns are no rule. */
void
SkuDecodeRules(HeapTuple tup, TupleDesc desc, InvRules *rules)
{
	const InvCatalog *cat = InvGetCatalog();
	bool		isnull;
	Datum		d;

	InvRulesNone(rules);
	/* a 0.1 schema, not updated yet, has no rules */
	if (cat->s_max_per_buyer == InvalidAttrNumber)
		return;
	d = heap_getattr(tup, cat->s_max_per_buyer, desc, &isnull);
	if (!isnull)
		rules->max_per_buyer = DatumGetInt64(d);
	d = heap_getattr(tup, cat->s_sale_starts, desc, &isnull);
	if (!isnull)
		rules->sale_starts = DatumGetTimestampTz(d);
	d = heap_getattr(tup, cat->s_sale_ends, desc, &isnull);
	if (!isnull)
		rules->sale_ends = DatumGetTimestampTz(d);
}

/*
 * Reads the SKU's row with the caller's snapshot into base (on_hand and
 * version: only settled movements are folded, so the base holds no
 * reserved units) and, if asked, its rules.
 * Returns false, with base zero and no rules, when there is no row.
 */
bool
SkuReadBase(text *sku, Snapshot snapshot, InvEffect *base, InvRules *rules)
{
	const InvCatalog *cat = InvGetCatalog();
	ScanKeyData key;
	KeyScan		ks;
	bool		found;
	bool		isnull;

	memset(base, 0, sizeof(*base));
	if (rules)
		InvRulesNone(rules);

	KeyScanOpen(&ks, cat->sku_rel, cat->sku_key_index);
	KeyScanTextKey(&ks, &key, sku);
	KeyScanStart(&ks, snapshot, &key, 1);
	found = KeyScanNext(&ks);
	if (found)
	{
		base->on_hand = DatumGetInt64(slot_getattr(ks.slot, cat->s_on_hand, &isnull));
		base->version = DatumGetInt64(slot_getattr(ks.slot, cat->s_version, &isnull));
		if (rules)
		{
			bool		should_free;
			HeapTuple	tup = ExecFetchSlotHeapTuple(ks.slot, false, &should_free);

			SkuDecodeRules(tup, RelationGetDescr(ks.heap), rules);
			if (should_free)
				heap_freetuple(tup);
		}
	}
	KeyScanEnd(&ks);
	return found;
}
