/*
 * sandbox.c
 *	  What runs in this backend now.
 *
 * Backend-local flags: an ask of an application's reconciler (the cache,
 * the trigger and the hooks of enforce/ask_fence.c refuse the inventory
 * API and the inventory tables while it runs), a settle of the extension's
 * own (the trigger stamps settled_by with what runs it; an UPDATE by hand
 * is stamped "statement"), the settle that may confirm a reservation past
 * its expires_at (the trigger allows it then only), and a fold
 * (maintenance/fold.c: the trigger lets only a fold mark rows folded and
 * move their effect into the base rows).
 */
#include "postgres.h"

#include "tables/sandbox.h"

bool		inv_asking = false;
static bool late_confirm = false;
static InvSettledBy settled_by = INV_SETTLED_BY_STATEMENT;
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

/* What settles reservations now: "statement" outside SandboxRunSettle(). */
InvSettledBy
SandboxSettledBy(void)
{
	return settled_by;
}

/*
 * Runs a statement of the extension's that settles reservations, for by:
 * the trigger stamps them so.  late_confirm: it may confirm reservations
 * past their expires_at (the expiry applying a reconciler's answer, or a
 * late confirm() while a reconciler is set).  The rows processed.
 */
uint64
SandboxRunSettle(InvStmt *stmt, Datum *values, const char *nulls, int tcount,
				 InvSettledBy by, bool late)
{
	volatile uint64 n = 0;

	settled_by = by;
	late_confirm = late;
	PG_TRY();
	{
		n = InvStmtRun(stmt, values, nulls, false, tcount);
	}
	PG_FINALLY();
	{
		settled_by = INV_SETTLED_BY_STATEMENT;
		late_confirm = false;
	}
	PG_END_TRY();
	return n;
}
