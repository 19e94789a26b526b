/*
 * sandbox.c
 *	  What runs in this backend now.
 *
 * Three backend-local flags: an ask of an application's reconciler (the
 * cache, the trigger and the hooks of enforce/ask_fence.c refuse the
 * inventory API and the inventory tables while it runs), the one UPDATE
 * that may confirm a reservation past its expires_at (the trigger allows
 * it then only), and a fold (maintenance/fold.c: the trigger lets only a
 * fold mark rows folded and move their effect into the base rows).
 */
#include "postgres.h"

#include "tables/sandbox.h"

bool		inv_asking = false;
static bool late_confirm = false;
static bool folding = false;

void
SandboxSetAsking(bool asking)
{
	inv_asking = asking;
}

void
SandboxRefusal(void)
{
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("a reconciler cannot use the inventory functions or the inventory tables"),
			 errdetail("The reconciler answers confirm, cancel, expire or wait; the expiry applies the answer."),
			 errhint("Read the application's own tables only.")));
}

/* Is this backend folding now? */
bool
SandboxFolding(void)
{
	return folding;
}

void
SandboxSetFolding(bool on)
{
	folding = on;
}

bool
SandboxLateConfirmAllowed(void)
{
	return late_confirm;
}

/*
 * Runs a statement that may confirm reservations past their expires_at:
 * the expiry applying a reconciler's answer, or a late confirm() while a
 * reconciler is set.  The rows processed.
 */
uint64
SandboxRunLateConfirm(InvStmt *stmt, Datum *values)
{
	volatile uint64 n = 0;

	late_confirm = true;
	PG_TRY();
	{
		n = InvStmtRun(stmt, values, NULL, false, 0);
	}
	PG_FINALLY();
	{
		late_confirm = false;
	}
	PG_END_TRY();
	return n;
}
