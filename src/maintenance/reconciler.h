/*
 * reconciler.h
 *	  A database's reconciler: the function of the application's that the
 *	  expiry asks before it settles an overdue reservation, its timing, and
 *	  the rules a function must follow to be asked.
 */
#ifndef INVENTORY_RECONCILER_H
#define INVENTORY_RECONCILER_H

#include "postgres.h"

/* the function set_reconciler() makes, in the extension's schema */
#define RECONCILER_NAME		"reconciler"

typedef struct Reconciler
{
	Oid			fn;				/* inventory.reconciler(...): the setting */
	Oid			setter;			/* its owner: the role that set it */
	Oid			target;			/* the application's function it names */
	/* the timing set_reconciler() was given; 0: the server's setting */
	int64		timeout_ms;
	int64		retry_ms;
	int64		max_asks;
	int64		max_wait_ms;
} Reconciler;

extern void ReconcilerInit(void);
extern bool ReconcilerFind(Reconciler *r);
extern void ReconcilerCheckSetter(Oid target, Oid setter);
extern Oid	ReconcilerCheckTrust(Oid target);
extern void ReconcilerCheckTiming(const Reconciler *r);

/* the timing of an ask: what set_reconciler() gave, within the server's caps */
extern int	ReconcilerTimeout(const Reconciler *r);	/* ms */
extern int64 ReconcilerRetry(const Reconciler *r);	/* ms */
extern int64 ReconcilerMaxAsks(const Reconciler *r);
extern int64 ReconcilerMaxWait(const Reconciler *r);	/* ms */

#endif							/* INVENTORY_RECONCILER_H */
