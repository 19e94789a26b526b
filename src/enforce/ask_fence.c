/*
 * ask_fence.c
 *	  The extension's tables are closed to an ask of a reconciler.
 *
 * A reconciler answers from the application's own tables.  While it runs
 * (tables/sandbox.h), the API's calls are refused where they reach the
 * cache and writes where the trigger sees them; here the rest: a call of
 * any function of the extension's schema (the object access hook, which
 * the executor calls as it prepares each function, in utility.c), a query
 * that reads
 * any relation of the schema (the executor's permission check, which
 * COPY TO makes too) and LOCK TABLE of one (the utility hook), which would
 * hold every buyer back for as long as the application's code chose.
 * Outside an ask each check costs one test of a flag.
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "executor/executor.h"
#include "nodes/parsenodes.h"
#include "utils/lsyscache.h"

#include "enforce/ask_fence.h"
#include "tables/catalog.h"
#include "tables/sandbox.h"

static ExecutorCheckPerms_hook_type prev_check_perms = NULL;

/* Is the relation in the extension's schema? */
static bool
IsOurs(Oid relid)
{
	Oid			nsp = get_rel_namespace(relid);

	return OidIsValid(nsp) && nsp == InvGetCatalog()->schema;
}

static bool
AskFenceCheckPerms(List *rtable, bool ereport_on_violation)
{
	ListCell   *lc;

	if (unlikely(inv_asking))
	{
		foreach(lc, rtable)
		{
			RangeTblEntry *rte = lfirst_node(RangeTblEntry, lc);

			if (rte->rtekind == RTE_RELATION && IsOurs(rte->relid))
				SandboxRefusal();
		}
	}
	if (prev_check_perms)
		return prev_check_perms(rtable, ereport_on_violation);
	return true;
}

/*
 * A function of the extension, prepared for a call in an ask: refused.
 * From the object access hook (utility.c), at OAT_FUNCTION_EXECUTE.
 */
void
AskFenceCheckFunction(Oid funcid)
{
	if (unlikely(inv_asking) && get_func_namespace(funcid) == InvGetCatalog()->schema)
		SandboxRefusal();
}

/* LOCK TABLE of a relation of the extension, in an ask: refused. */
void
AskFenceCheckUtility(Node *stmt)
{
	ListCell   *lc;

	if (likely(!inv_asking) || !IsA(stmt, LockStmt))
		return;
	foreach(lc, ((LockStmt *) stmt)->relations)
	{
		Oid			relid = RangeVarGetRelid(lfirst_node(RangeVar, lc), NoLock, true);

		if (OidIsValid(relid) && IsOurs(relid))
			SandboxRefusal();
	}
}

void
AskFenceInit(void)
{
	prev_check_perms = ExecutorCheckPerms_hook;
	ExecutorCheckPerms_hook = AskFenceCheckPerms;
}
