/*
 * rules.h
 *	  Commerce rules of a SKU: a per-buyer limit and a sale window.
 *	  See rules.c.
 */
#ifndef INVENTORY_RULES_H
#define INVENTORY_RULES_H

#include "postgres.h"

#include "access/htup.h"
#include "access/tupdesc.h"
#include "datatype/timestamp.h"

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

extern void RulesDecode(HeapTuple tup, TupleDesc desc, InvRules *rules);
extern bool RulesAdmitBuyer(text *sku, text *buyer_id, int64 qty,
							int64 limit, int64 *holding, bool *took_lock);
extern void RulesLockBuyer(text *sku, text *buyer_id);
extern void RulesReleaseBuyer(text *sku, text *buyer_id);
extern void RulesCheckNewReservation(text *sku, text *buyer_id,
									 const InvRules *rules, TimestampTz now);

#endif							/* INVENTORY_RULES_H */
