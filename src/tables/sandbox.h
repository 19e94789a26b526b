/*
 * sandbox.h
 *	  What runs in this backend now: the code of an application's
 *	  reconciler, which may not touch the extension, a settle of the
 *	  extension's own (which may confirm a reservation past its expires_at
 *	  only when it says so), or a fold.
 */
#ifndef INVENTORY_SANDBOX_H
#define INVENTORY_SANDBOX_H

#include "postgres.h"

#include "tables/ledger_row.h"
#include "tables/stmt.h"

/* an ask of a reconciler runs now */
extern bool inv_asking;
extern void SandboxSetAsking(bool asking);
extern void SandboxRefusal(void) pg_attribute_noreturn();

/*
 * The inventory API and the inventory tables are not for a reconciler:
 * checked by every call that reaches the cache, inline, since the
 * reserve path is one of them, and by the executor's and the utility
 * hook's checks of the tables (enforce/ask_fence.c).
 */
static inline void
SandboxRefuse(void)
{
	if (unlikely(inv_asking))
		SandboxRefusal();
}

extern bool SandboxLateConfirmAllowed(void);
extern void SandboxSetFolding(bool on);
extern bool SandboxFolding(void);
extern InvSettledBy SandboxSettledBy(void);
extern uint64 SandboxRunSettle(InvStmt *stmt, Datum *values, const char *nulls,
							   int tcount, InvSettledBy by, bool late_confirm);

#endif							/* INVENTORY_SANDBOX_H */
