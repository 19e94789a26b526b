/*
 * inventory.c
 *	  Module initialisation: settings, shared memory and transaction hooks.
 *
 * The extension keeps escrow holds in shared memory, so it works only when
 * loaded by the postmaster.  Loaded any other way -- CREATE EXTENSION or the
 * first call of one of its functions in a server that does not preload it --
 * it refuses with an error that says what to change.
 */
#include "postgres.h"

#include <limits.h>

#include "fmgr.h"
#include "miscadmin.h"
#include "utils/guc.h"

#include "cache.h"
#include "inventory.h"
#include "xact.h"

PG_MODULE_MAGIC;

int			inv_max_skus = 10000;
int			inv_default_ttl = 15 * 60;

void		_PG_init(void);

void
_PG_init(void)
{
	if (!process_shared_preload_libraries_in_progress)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("inventory must be loaded via shared_preload_libraries"),
				 errdetail("Its escrow holds live in shared memory, which is set up when the server starts."),
				 errhint("Add inventory to shared_preload_libraries in postgresql.conf and restart the server.")));

	DefineCustomIntVariable("inventory.max_skus",
							"Number of SKUs the shared-memory cache can hold.",
							"When the cache is full, the least recently used idle SKU is evicted.",
							&inv_max_skus,
							10000,
							16,
							INT_MAX / 2,
							PGC_POSTMASTER,
							0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("inventory.default_ttl",
							"Time a reservation is held when reserve() is given no ttl.",
							NULL,
							&inv_default_ttl,
							15 * 60,
							1,
							INT_MAX,
							PGC_USERSET,
							GUC_UNIT_S,
							NULL, NULL, NULL);

	MarkGUCPrefixReserved("inventory");

	CacheInstallHooks();
	PendingRegisterCallbacks();
}
