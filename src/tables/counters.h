/*
 * counters.h
 *	  The counters of changes: what a change does to a SKU's stock
 *	  (InvEffect), how many changes of each kind a transaction committed
 *	  (InvCounters), and how many of each a cached SKU saw (InvSkuStats).
 */
#ifndef INVENTORY_COUNTERS_H
#define INVENTORY_COUNTERS_H

#include "postgres.h"

/* What a row, or a change of a row, adds to its SKU's counters. */
typedef struct InvEffect
{
	int64		on_hand;
	int64		reserved;
	int64		version;
} InvEffect;

static inline void
InvEffectAdd(InvEffect *dst, const InvEffect *src)
{
	dst->on_hand += src->on_hand;
	dst->reserved += src->reserved;
	dst->version += src->version;
}

/* dst = to - from: what a change from one row version to another adds */
static inline void
InvEffectDiff(InvEffect *dst, const InvEffect *to, const InvEffect *from)
{
	dst->on_hand = to->on_hand - from->on_hand;
	dst->reserved = to->reserved - from->reserved;
	dst->version = to->version - from->version;
}

/* The movements of a transaction, by kind: added to both below at commit. */
typedef struct InvCounters
{
	int64		reserves;		/* reservations committed */
	int64		rejects;		/* reserve refused: not enough available */
	int64		conflicts;		/* version-checked call refused */
	int64		confirms;
	int64		cancels;
	int64		expiries;
	int64		restocks;
	int64		adjusts;		/* stocktakes */
	int64		withdraws;
	int64		extends;
} InvCounters;

/*
 * Per-SKU statistics, in the style of pg_stat_statements: the counters of
 * InvCounters that inventory.sku_stats shows, kept in every cache entry,
 * whose size is a budget (stocktakes and withdrawals share adjusts).
 */
typedef struct InvSkuStats
{
	int64		reserves;
	int64		rejects;
	int64		conflicts;
	int64		confirms;
	int64		cancels;
	int64		expiries;
	int64		restocks;
	int64		adjusts;		/* stocktakes and withdrawals */
} InvSkuStats;

static inline void
InvSkuStatsAdd(InvSkuStats *dst, const InvCounters *src)
{
	dst->reserves += src->reserves;
	dst->rejects += src->rejects;
	dst->conflicts += src->conflicts;
	dst->confirms += src->confirms;
	dst->cancels += src->cancels;
	dst->expiries += src->expiries;
	dst->restocks += src->restocks;
	dst->adjusts += src->adjusts + src->withdraws;
}

/* Adds the counters of the settled work counted in src to dst. */
static inline void
InvCountersAdd(InvCounters *dst, const InvCounters *src)
{
	dst->reserves += src->reserves;
	dst->rejects += src->rejects;
	dst->conflicts += src->conflicts;
	dst->confirms += src->confirms;
	dst->cancels += src->cancels;
	dst->expiries += src->expiries;
	dst->restocks += src->restocks;
	dst->adjusts += src->adjusts;
	dst->withdraws += src->withdraws;
	dst->extends += src->extends;
}

#endif							/* INVENTORY_COUNTERS_H */
