/*
 * reconcile.h
 *	  The expiry of a database with a reconciler: ask, then settle.
 */
#ifndef INVENTORY_RECONCILE_H
#define INVENTORY_RECONCILE_H

#include "postgres.h"

#include "datatype/timestamp.h"

#include "tables/reconciler.h"

/* reservations (ledger rows) by what became of them in a round */
typedef struct ReconcileCounts
{
	int64		confirmed;
	int64		cancelled;
	int64		expired;
	int64		waited;			/* the reconciler answered wait */
	int64		failed;			/* no answer it could use: they wait too */
} ReconcileCounts;

extern void ReconcileInit(void);
extern int64 ReconcileOverdue(const Reconciler *r, int64 max_orders,
							  ReconcileCounts *counts, bool *more);
extern TimestampTz ReconcileNextDue(void);

#endif							/* INVENTORY_RECONCILE_H */
