/*
 * launcher.c
 *	  The launcher: sends a worker from the pool to each database when its
 *	  work falls due.
 *
 * Every database where the extension is created is served, with no
 * configuration.  The launcher, a background worker started after recovery
 * (so a standby has none until it is promoted), connects to no database.
 * Every few seconds it reads pg_database, and it gives each database that
 * accepts connections and is not a template an entry to be probed: a
 * worker visits it once, to see whether the extension is there.  From then
 * on the launcher sleeps until the earliest time some database's work is
 * due (pool.c), wakes when a commit makes work due sooner, and starts a
 * worker in the database that has waited longest, as long as one of the
 * inventory.max_workers slots is free.  A database that has nothing due
 * costs nothing but its entry.
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_database.h"
#include "commands/dbcommands.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "inventory.h"
#include "shmem/pool.h"
#include "worker/launcher.h"

/* how often the launcher looks for new and dropped databases */
#define RESCAN_MS			5000
/* after a failed start, try again this much later */
#define RETRY_MS			1000
/* a WARNING about missing bgworker slots at most this often */
#define WARN_EVERY_MS		60000

PGDLLEXPORT void inventory_launcher_main(Datum main_arg);

void
LauncherRegister(void)
{
	BackgroundWorker bgw;

	memset(&bgw, 0, sizeof(bgw));
	bgw.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	bgw.bgw_start_time = BgWorkerStart_RecoveryFinished;
	bgw.bgw_restart_time = 5;
	snprintf(bgw.bgw_library_name, BGW_MAXLEN, "inventory");
	snprintf(bgw.bgw_function_name, BGW_MAXLEN, "inventory_launcher_main");
	snprintf(bgw.bgw_name, BGW_MAXLEN, "inventory launcher");
	snprintf(bgw.bgw_type, BGW_MAXLEN, "inventory launcher");
	RegisterBackgroundWorker(&bgw);
}

/* The databases that can be served: they accept connections, no templates. */
static List *
ScanDatabases(void)
{
	List	   *result = NIL;
	MemoryContext outer = CurrentMemoryContext;
	Relation	rel;
	TableScanDesc scan;
	HeapTuple	tup;

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	rel = table_open(DatabaseRelationId, AccessShareLock);
	scan = table_beginscan_catalog(rel, 0, NULL);
	while ((tup = heap_getnext(scan, ForwardScanDirection)) != NULL)
	{
		Form_pg_database db = (Form_pg_database) GETSTRUCT(tup);
		MemoryContext old;
		PoolDbName *d;

		if (!db->datallowconn || db->datistemplate || database_is_invalid_form(db))
			continue;
		old = MemoryContextSwitchTo(outer);
		d = palloc(sizeof(PoolDbName));
		d->dboid = db->oid;
		d->datname = db->datname;
		result = lappend(result, d);
		MemoryContextSwitchTo(old);
	}
	table_endscan(scan);
	table_close(rel, AccessShareLock);
	PopActiveSnapshot();
	CommitTransactionCommand();
	return result;
}

/* the launcher's handles of the workers it started, by slot */
static BackgroundWorkerHandle **handles = NULL;
static TimestampTz last_warning = 0;

/* Frees the slots of workers that stopped before they took them. */
static void
ReapWorkers(void)
{
	for (int i = 0; i < PoolSlots(); i++)
	{
		pid_t		pid;

		if (handles[i] == NULL ||
			GetBackgroundWorkerPid(handles[i], &pid) != BGWH_STOPPED)
			continue;
		pfree(handles[i]);
		handles[i] = NULL;
		PoolReleaseUnstarted(i);
	}
}

static bool
StartWorker(int slotno, Oid dboid, const char *datname)
{
	BackgroundWorker bgw;

	memset(&bgw, 0, sizeof(bgw));
	bgw.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	bgw.bgw_start_time = BgWorkerStart_RecoveryFinished;
	bgw.bgw_restart_time = BGW_NEVER_RESTART;	/* the launcher does it */
	snprintf(bgw.bgw_library_name, BGW_MAXLEN, "inventory");
	snprintf(bgw.bgw_function_name, BGW_MAXLEN, "inventory_worker_main");
	snprintf(bgw.bgw_name, BGW_MAXLEN, "inventory worker for database %s", datname);
	snprintf(bgw.bgw_type, BGW_MAXLEN, "inventory worker");
	bgw.bgw_main_arg = Int32GetDatum(slotno);
	bgw.bgw_notify_pid = MyProcPid;

	if (handles[slotno] != NULL)
		pfree(handles[slotno]);
	handles[slotno] = NULL;
	if (RegisterDynamicBackgroundWorker(&bgw, &handles[slotno]))
		return true;

	if (TimestampDifferenceExceeds(last_warning, GetCurrentTimestamp(), WARN_EVERY_MS))
	{
		last_warning = GetCurrentTimestamp();
		ereport(WARNING,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("could not start an inventory worker for database \"%s\"", datname),
				 errdetail("All of max_worker_processes (%d) are in use.", max_worker_processes),
				 errhint("Raise max_worker_processes, or lower inventory.max_workers.")));
	}
	return false;
}

/*
 * Sends workers to the databases whose work is due, longest waiting first,
 * while slots are free.  Returns false when a worker could not be started.
 */
static bool
Dispatch(TimestampTz now)
{
	int			slotno;
	Oid			dboid;
	NameData	datname;

	while (PoolAssign(now, &slotno, &dboid, &datname))
	{
		if (!StartWorker(slotno, dboid, NameStr(datname)))
		{
			PoolUnassign(slotno, TimestampTzPlusMilliseconds(now, RETRY_MS));
			return false;
		}
	}
	return true;
}

void
inventory_launcher_main(Datum main_arg)
{
	HASHCTL		ctl;
	HTAB	   *absent;
	TimestampTz last_scan = 0;

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnection(NULL, NULL, 0);
	pgstat_report_appname("inventory launcher");

	handles = MemoryContextAllocZero(TopMemoryContext,
									 PoolSlots() * sizeof(BackgroundWorkerHandle *));
	/* databases where a worker found no extension */
	ctl.keysize = sizeof(Oid);
	ctl.entrysize = sizeof(Oid);
	ctl.hcxt = TopMemoryContext;
	absent = hash_create("inventory databases without the extension", 64, &ctl,
						 HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);

	PoolLauncherAttach();
	ereport(LOG, (errmsg("inventory launcher started")));

	for (;;)
	{
		TimestampTz now;
		TimestampTz earliest;
		TimestampTz wake;
		bool		started = true;
		long		nap;

		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}

		PoolLauncherAwake();
		now = GetCurrentTimestamp();
		if (TimestampDifferenceExceeds(last_scan, now, RESCAN_MS))
		{
			List	   *list = ScanDatabases();

			PoolSync(list, absent);
			list_free_deep(list);
			last_scan = now;
		}
		PoolForgetAbsent(absent);
		ReapWorkers();
		if (inv_worker_enabled)
			started = Dispatch(now);
		earliest = PoolEarliestDue();

		/*
		 * Sleep until the next database falls due or the next scan.  Work
		 * that is due already waits for a slot (a worker that leaves sets
		 * the latch), for a pause to end, or for the workers to be enabled:
		 * look again in a second at the latest.
		 */
		wake = Min(earliest, TimestampTzPlusMilliseconds(last_scan, RESCAN_MS));
		if (wake <= now)
			wake = TimestampTzPlusMilliseconds(now, RETRY_MS);
		/* work due found no free slot, or no worker could be started */
		PoolSetLauncherWake(wake, inv_worker_enabled && (!started || earliest <= now));
		nap = TimestampDifferenceMilliseconds(GetCurrentTimestamp(), wake);
		pgstat_report_activity(STATE_IDLE, NULL);
		(void) WaitLatch(MyLatch,
						 WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 Max(nap, 1), PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
}
