/*
 * inventory.c
 *	  Module initialisation: settings, shared memory, hooks and the launcher.
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
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/guc.h"

#include "cache.h"
#include "inventory.h"
#include "keyfilter.h"
#include "launcher.h"
#include "pool.h"
#include "utility.h"
#include "pending.h"

PG_MODULE_MAGIC;

int			inv_max_skus = 10000;
int			inv_default_ttl = 15 * 60;
bool		inv_worker_enabled = true;
int			inv_expire_interval = 1000;
int			inv_expire_batch = 1000;
int			inv_fold_batch = 10000;
int			inv_max_workers = 2;
int			inv_max_databases = 1000;
int			inv_key_filter_size = 8192;

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

void		_PG_init(void);

static void
InventoryShmemRequest(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(add_size(add_size(CacheShmemSize(), PoolShmemSize()),
									KeyFilterShmemSize()));
	RequestNamedLWLockTranche("inventory", INV_NUM_LOCKS);
}

static void
InventoryShmemStartup(void)
{
	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	CacheShmemInit();
	PoolShmemInit();
	KeyFilterShmemInit();
	LWLockRelease(AddinShmemInitLock);
}

static void
DefineSettings(void)
{
	DefineCustomIntVariable("inventory.max_skus",
							"Number of SKUs the shared-memory cache can hold.",
							"When the cache is full, the least recently used idle SKUs are evicted.",
							&inv_max_skus,
							10000, 16, INT_MAX / 2,
							PGC_POSTMASTER, 0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("inventory.default_ttl",
							"Time a reservation is held when reserve() is given no ttl.",
							NULL,
							&inv_default_ttl,
							15 * 60, 1, INT_MAX,
							PGC_USERSET, GUC_UNIT_S,
							NULL, NULL, NULL);

	DefineCustomIntVariable("inventory.max_workers",
							"Background workers that expire and fold, at most, for all databases.",
							"Each takes one of max_worker_processes while it visits a database.",
							&inv_max_workers,
							2, 1, 64,
							PGC_POSTMASTER, 0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("inventory.max_databases",
							"Databases with the extension that the background workers serve, at most.",
							"CREATE EXTENSION inventory is refused beyond that many.",
							&inv_max_databases,
							1000, 1, 100000,
							PGC_POSTMASTER, 0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("inventory.key_filter_size",
							"Shared memory for the filter that tells keys certainly absent from the ledgers.",
							"A refused reserve whose key the filter says absent reads no index; 0 turns the filter off.",
							&inv_key_filter_size,
							8192, 0, INT_MAX / 1024,
							PGC_POSTMASTER, GUC_UNIT_KB,
							NULL, NULL, NULL);

	DefineCustomBoolVariable("inventory.worker_enabled",
							 "Whether the background workers expire and fold.",
							 "When off, no worker is sent to any database.",
							 &inv_worker_enabled,
							 true,
							 PGC_SIGHUP, 0,
							 NULL, NULL, NULL);

	DefineCustomIntVariable("inventory.expire_interval",
							"Longest time an overdue reservation waits for a worker that is in its database.",
							"A worker stays in a database while work falls due within this time and no other database waits.",
							&inv_expire_interval,
							1000, 10, 3600 * 1000,
							PGC_SIGHUP, GUC_UNIT_MS,
							NULL, NULL, NULL);

	DefineCustomIntVariable("inventory.expire_batch",
							"Overdue reservations a worker expires in one transaction.",
							NULL,
							&inv_expire_batch,
							1000, 1, 1000000,
							PGC_SIGHUP, 0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("inventory.fold_batch",
							"Settled movements a worker folds into inventory.sku in one transaction.",
							NULL,
							&inv_fold_batch,
							10000, 1, 10000000,
							PGC_SIGHUP, 0,
							NULL, NULL, NULL);

	MarkGUCPrefixReserved("inventory");
}

void
_PG_init(void)
{
	if (!process_shared_preload_libraries_in_progress)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("inventory must be loaded via shared_preload_libraries"),
				 errdetail("Its escrow holds live in shared memory, which is set up when the server starts."),
				 errhint("Add inventory to shared_preload_libraries in postgresql.conf and restart the server.")));

	DefineSettings();

	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = InventoryShmemRequest;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = InventoryShmemStartup;

	PendingRegisterCallbacks();
	PoolRegisterCallbacks();
	UtilityInstallHook();

	/* pg_upgrade runs the server without workers */
	if (IsBinaryUpgrade)
		return;
	LauncherRegister();
}
