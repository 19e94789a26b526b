/*
 * restore_admin.c
 *	  inventory.restore_finish() and inventory.restore_abandon(): an
 *	  administrator ends a restore of the database that stopped half-way
 *	  (enforce/restore.c).
 */
#include "postgres.h"

#include "fmgr.h"

#include "api/args.h"
#include "enforce/restore.h"

/*
 * Both tables are there: checks them whole, and sells again.  Refuses while
 * a table not restored since the restore began is empty.
 */
PG_FUNCTION_INFO_V1(inventory_restore_finish);
Datum
inventory_restore_finish(PG_FUNCTION_ARGS)
{
	ArgCheckWritable("inventory.restore_finish()");
	if (!RestoreEndIncomplete(true))
		ereport(NOTICE,
				(errmsg("no restore of this database's inventory stands incomplete")));
	PG_RETURN_VOID();
}

/* Sells from what is there, without the missing table. */
PG_FUNCTION_INFO_V1(inventory_restore_abandon);
Datum
inventory_restore_abandon(PG_FUNCTION_ARGS)
{
	ArgCheckWritable("inventory.restore_abandon()");
	if (!RestoreEndIncomplete(false))
		ereport(NOTICE,
				(errmsg("no restore of this database's inventory stands incomplete")));
	else
		ereport(WARNING,
				(errmsg("the incomplete restore of this database's inventory was abandoned"),
				 errdetail("SKUs restored without their movements sell from their base counters, which do not count the movements that were not folded into them: what is on sale may differ from what is in the warehouse."),
				 errhint("Count the stock and correct it with inventory.adjust().")));
	PG_RETURN_VOID();
}
