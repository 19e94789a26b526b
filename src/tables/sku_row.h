/*
 * sku_row.h
 *	  A row of inventory.sku: a SKU's base counters and its commerce rules.
 *	  See sku_row.c.
 */
#ifndef INVENTORY_SKU_ROW_H
#define INVENTORY_SKU_ROW_H

#include "postgres.h"

#include "access/htup.h"
#include "access/tupdesc.h"
#include "datatype/timestamp.h"
#include "utils/snapshot.h"

#include "tables/counters.h"

/* The rules of a SKU, as its row in inventory.sku sets them. */
typedef struct InvRules
{
	int64		max_per_buyer;	/* 0: no limit */
	TimestampTz sale_starts;	/* DT_NOBEGIN: on sale since ever */
	TimestampTz sale_ends;		/* DT_NOEND: on sale for ever */
} InvRules;

static inline void
InvRulesNone(InvRules *rules)
{
	rules->max_per_buyer = 0;
	TIMESTAMP_NOBEGIN(rules->sale_starts);
	TIMESTAMP_NOEND(rules->sale_ends);
}

/* Is the SKU on sale at now?  Its window is [sale_starts, sale_ends). */
static inline bool
InvRulesOnSale(const InvRules *rules, TimestampTz now)
{
	return now >= rules->sale_starts && now < rules->sale_ends;
}

static inline bool
InvRulesEqual(const InvRules *a, const InvRules *b)
{
	return a->max_per_buyer == b->max_per_buyer &&
		a->sale_starts == b->sale_starts && a->sale_ends == b->sale_ends;
}

extern void SkuDecodeRules(HeapTuple tup, TupleDesc desc, InvRules *rules);
extern bool SkuReadBase(text *sku, Snapshot snapshot, InvEffect *base,
						InvRules *rules);

#endif							/* INVENTORY_SKU_ROW_H */
