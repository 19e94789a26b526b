/*
 * reconciler.h
 *	  A database's reconciler: the function of the application's that the
 *	  expiry asks before it settles an overdue reservation.
 */
#ifndef INVENTORY_RECONCILER_H
#define INVENTORY_RECONCILER_H

#include "postgres.h"

#include "tables/stmt.h"

/* the function set_reconciler() makes, in the extension's schema */
#define RECONCILER_NAME		"reconciler"

typedef struct Reconciler
{
	Oid			fn;				/* inventory.reconciler(text, integer) */
	Oid			owner;			/* its owner: the role that set it */
	Oid			target;			/* the application's function it calls */
} Reconciler;

extern bool ReconcilerFind(Reconciler *r);
extern void ReconcilerCheckTarget(Oid target, Oid role);

/* what runs in this backend now */
extern bool reconciler_running;
extern void ReconcilerSetRunning(bool running);
extern void ReconcilerRefusal(void) pg_attribute_noreturn();

/*
 * The inventory API and the inventory tables are not for a reconciler:
 * checked by every call that reaches the cache, inline, since the
 * reserve path is one of them.
 */
static inline void
ReconcilerRefuse(void)
{
	if (unlikely(reconciler_running))
		ReconcilerRefusal();
}
extern bool LateConfirmAllowed(void);
extern uint64 RunLateConfirm(InvStmt *stmt, Datum *values);

#endif							/* INVENTORY_RECONCILER_H */
