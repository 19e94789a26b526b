/*
 * reconcile.h
 *	  The expiry of a database with a reconciler: ask, then settle.
 */
#ifndef INVENTORY_RECONCILE_H
#define INVENTORY_RECONCILE_H

#include "postgres.h"

#include "datatype/timestamp.h"
#include "utils/palloc.h"

#include "maintenance/reconciler.h"
#include "shmem/pool.h"

/*
 * Fewer asks than this per transaction, each a subtransaction: past 64,
 * every snapshot taken on the server scans pg_subtrans.
 */
#define RECONCILE_ASKS_PER_XACT 63

/* an overdue order to ask about */
typedef struct ReconcileOrder
{
	char	   *order_id;
	int32		batch_id;		/* its first overdue line */
	TimestampTz due;			/* when the first fell due */
	int32		asks;			/* asks so far */
} ReconcileOrder;

extern void ReconcileInit(void);
extern int	ReconcileCandidates(const Reconciler *r, int max, MemoryContext cxt,
								ReconcileOrder **orders, bool *more);
extern int	ReconcileOrders(const Reconciler *r, const ReconcileOrder *orders, int n,
							TimestampTz deadline, ReconcileCounts *counts, int64 *settled);
extern TimestampTz ReconcileDeadline(void);
extern int64 ReconcileOverdue(const Reconciler *r, int64 max_orders,
							  ReconcileCounts *counts, bool *more);

#endif							/* INVENTORY_RECONCILE_H */
