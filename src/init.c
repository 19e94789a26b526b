/*
 * init.c
 *	  Module initialisation: each module's set-up, shared memory and the
 *	  launcher.
 *
 * The extension keeps escrow holds in shared memory, so it works only when
 * loaded by the postmaster.  Loaded any other way -- CREATE EXTENSION or the
 * first call of one of its functions in a server that does not preload it --
 * it refuses with an error that says what to change.
 *
 * Each module defines its own settings (inventory.*) and registers its own
 * callbacks and hooks in its XxxInit(); this file only calls them, in the
 * order of the layers, and sizes shared memory from what they defined.
 */
#include "postgres.h"

#include "fmgr.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/guc.h"

#include "enforce/feed.h"
#include "enforce/utility.h"
#include "fault.h"
#include "inventory.h"
#include "maintenance/reconcile.h"
#include "maintenance/retain.h"
#include "shmem/asks.h"
#include "shmem/cache.h"
#include "shmem/cache_notify.h"
#include "shmem/express.h"
#include "shmem/keyfilter.h"
#include "shmem/metrics.h"
#include "shmem/pool.h"
#include "tables/ledger_row.h"
#include "worker/launcher.h"
#include "worker/worker.h"
#include "xact/pending.h"

PG_MODULE_MAGIC;

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

void		_PG_init(void);

static void
InventoryShmemRequest(void)
{
	Size		size;

	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	size = CacheShmemSize();
	size = add_size(size, PoolShmemSize());
	size = add_size(size, KeyFilterShmemSize());
	size = add_size(size, ExpressShmemSize());
	size = add_size(size, MetricsShmemSize());
	size = add_size(size, AsksShmemSize());
	size = add_size(size, FaultShmemSize());
	RequestAddinShmemSpace(size);
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
	ExpressShmemInit();
	MetricsShmemInit();
	AsksShmemInit();
	FaultShmemInit();
	LWLockRelease(AddinShmemInitLock);
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

	/*
	 * PostgreSQL calls transaction callbacks newest first: PendingInit()
	 * after PoolInit(), so that a commit settles the cache before it tells
	 * the workers that work is due.
	 */
	LedgerRowInit();
	CacheInit();
	CacheNotifyInit();
	FeedInit();
	RetainInit();
	KeyFilterInit();
	PoolInit();
	ExpressInit();
	MetricsInit();
	PendingInit();
	UtilityInit();
	WorkerInit();
	ReconcileInit();
	FaultInit();
	MarkGUCPrefixReserved("inventory");

	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = InventoryShmemRequest;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = InventoryShmemStartup;

	/* pg_upgrade runs the server without workers */
	if (IsBinaryUpgrade)
		return;
	LauncherRegister();
}
