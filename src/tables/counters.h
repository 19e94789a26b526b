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

/* The kinds of movement a commit is counted by. */
typedef enum InvMovement
{
	INV_MOVE_RESERVE,
	INV_MOVE_CONFIRM,
	INV_MOVE_CANCEL,
	INV_MOVE_EXPIRE,
	INV_MOVE_EXTEND,
	INV_MOVE_RESTOCK,
	INV_MOVE_STOCKTAKE,
	INV_MOVE_WITHDRAW,
	INV_NUM_MOVEMENTS
} InvMovement;

/*
 * The movements of a transaction, by kind; at commit they are added to
 * its SKUs' statistics and to its database's counters (shmem/metrics.c).
 */
typedef struct InvCounters
{
	int64		moves[INV_NUM_MOVEMENTS];
	int64		held_units;		/* units of the reservations made */
	int64		sold_units;		/* units of the reservations confirmed */
} InvCounters;

static inline void
InvCountersAdd(InvCounters *dst, const InvCounters *src)
{
	for (int m = 0; m < INV_NUM_MOVEMENTS; m++)
		dst->moves[m] += src->moves[m];
	dst->held_units += src->held_units;
	dst->sold_units += src->sold_units;
}

/*
 * Per-SKU statistics, in the style of pg_stat_statements, kept in every
 * cache entry, whose size is a budget: what inventory.sku_stats shows.
 * Refusals are counted as they are decided; the rest from the movements
 * committed (stocktakes and withdrawals share adjusts; extends are not
 * shown).
 */
typedef struct InvSkuStats
{
	int64		reserves;
	int64		rejects;		/* reserve refused: not enough available */
	int64		conflicts;		/* version-checked call refused */
	int64		confirms;
	int64		cancels;
	int64		expiries;
	int64		restocks;
	int64		adjusts;
	int64		held_units;		/* units reserved (reserves, in units) */
	int64		sold_units;		/* units confirmed (confirms, in units) */
} InvSkuStats;

static inline void
InvSkuStatsAdd(InvSkuStats *dst, const InvCounters *src)
{
	dst->reserves += src->moves[INV_MOVE_RESERVE];
	dst->confirms += src->moves[INV_MOVE_CONFIRM];
	dst->cancels += src->moves[INV_MOVE_CANCEL];
	dst->expiries += src->moves[INV_MOVE_EXPIRE];
	dst->restocks += src->moves[INV_MOVE_RESTOCK];
	dst->adjusts += src->moves[INV_MOVE_STOCKTAKE] + src->moves[INV_MOVE_WITHDRAW];
	dst->held_units += src->held_units;
	dst->sold_units += src->sold_units;
}

#endif							/* INVENTORY_COUNTERS_H */
