/*
 * launcher.c
 *	  Which databases the background workers serve, and the launcher that
 *	  keeps one worker running in each.
 *
 * Every database where the extension is created is served, with no
 * configuration.  The launcher, a background worker started after recovery
 * (so a standby has none until it is promoted), connects to no database; it
 * reads pg_database every few seconds and keeps a slot per database that
 * accepts connections and is not a template.  It starts a worker for each
 * slot; the worker connects, and if the extension is not there it marks the
 * slot absent and exits.  A committed CREATE EXTENSION inventory marks its
 * database to be looked at again and wakes the launcher, so a new database
 * is served within moments.  A worker that dies any other way -- a crash,
 * pg_terminate_backend() -- is started again by the launcher.
 *
 * Statements that need a database without connections -- DROP DATABASE,
 * ALTER DATABASE ... RENAME or SET TABLESPACE, CREATE DATABASE ... TEMPLATE
 * -- pause its worker: the worker is asked to exit and is not started again
 * until the statement is over, so the worker never gets in their way.
 *
 * The slots live in shared memory under the INV_LOCK_WORKERS LWLock.  The
 * launcher owns the slots' existence; a worker writes only its own slot.
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_database.h"
#include "commands/dbcommands.h"
#include "commands/defrem.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "tcop/utility.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "inventory.h"
#include "launcher.h"

/* how often the launcher looks for new and dropped databases */
#define LAUNCHER_NAPTIME_MS		5000
/* a worker that keeps dying is started at most this often */
#define RESTART_DELAY_MS		1000

typedef struct InvDbSlot
{
	bool		in_use;
	Oid			dboid;
	NameData	datname;
	bool		seen;			/* found by the launcher's last scan */
	bool		absent;			/* its worker found no extension there */
	bool		probe;			/* look for the extension again */
	int			pauses;			/* statements that need it unconnected */
	pid_t		pid;			/* its worker, or 0 */
	bool		enabled;		/* inventory.worker_enabled, as the worker sees it */
	TimestampTz started_at;
	TimestampTz last_wake;		/* the worker's heartbeat */
	TimestampTz last_run;
	TimestampTz oldest_overdue; /* at the last run; 0 when none */
	int64		rounds;
	int64		expired;
	int64		folded;
} InvDbSlot;

typedef struct InvWorkers
{
	LWLock	   *lock;
	pid_t		launcher_pid;
	Latch	   *launcher_latch;
	int			nslots;
	InvDbSlot	slots[FLEXIBLE_ARRAY_MEMBER];
} InvWorkers;

static InvWorkers *workers = NULL;

/* the launcher's handles, by slot */
static BackgroundWorkerHandle **handles = NULL;
static TimestampTz *last_start = NULL;

/* in a worker: its slot */
static InvDbSlot *my_slot = NULL;

static ProcessUtility_hook_type prev_ProcessUtility = NULL;
static bool probe_at_commit = false;

/* ---- shared memory ---- */

static int
SlotCount(void)
{
	/* every served database needs a worker process */
	return Max(max_worker_processes, 1);
}

Size
WorkersShmemSize(void)
{
	return add_size(offsetof(InvWorkers, slots),
					mul_size(SlotCount(), sizeof(InvDbSlot)));
}

void
WorkersShmemInit(void)
{
	bool		found;

	workers = ShmemInitStruct("inventory workers", WorkersShmemSize(), &found);
	if (!found)
	{
		memset(workers, 0, WorkersShmemSize());
		workers->lock = &(GetNamedLWLockTranche("inventory"))[INV_LOCK_WORKERS].lock;
		workers->nslots = SlotCount();
	}
}

static InvDbSlot *
FindSlot(Oid dboid)
{
	for (int i = 0; i < workers->nslots; i++)
	{
		if (workers->slots[i].in_use && workers->slots[i].dboid == dboid)
			return &workers->slots[i];
	}
	return NULL;
}

static void
WakeLauncher(void)
{
	LWLockAcquire(workers->lock, LW_SHARED);
	if (workers->launcher_latch)
		SetLatch(workers->launcher_latch);
	LWLockRelease(workers->lock);
}

/* ---- hooks in every backend ---- */

/* A committed CREATE EXTENSION inventory: look at this database again. */
static void
LauncherXactCallback(XactEvent event, void *arg)
{
	if (!probe_at_commit)
		return;
	if (event == XACT_EVENT_COMMIT && workers != NULL)
	{
		InvDbSlot  *slot;

		LWLockAcquire(workers->lock, LW_EXCLUSIVE);
		slot = FindSlot(MyDatabaseId);
		if (slot)
			slot->probe = true;
		if (workers->launcher_latch)
			SetLatch(workers->launcher_latch);
		LWLockRelease(workers->lock);
	}
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT ||
		event == XACT_EVENT_PARALLEL_COMMIT || event == XACT_EVENT_PARALLEL_ABORT ||
		event == XACT_EVENT_PREPARE)
		probe_at_commit = false;
}

/* Asks the database's worker to exit and keeps it stopped. */
static void
PauseDatabase(Oid dboid)
{
	InvDbSlot  *slot;
	pid_t		pid = 0;

	LWLockAcquire(workers->lock, LW_EXCLUSIVE);
	slot = FindSlot(dboid);
	if (slot)
	{
		slot->pauses++;
		pid = slot->pid;
	}
	LWLockRelease(workers->lock);
	if (pid != 0)
		kill(pid, SIGTERM);
}

static void
ResumeDatabase(Oid dboid)
{
	InvDbSlot  *slot;

	LWLockAcquire(workers->lock, LW_EXCLUSIVE);
	slot = FindSlot(dboid);
	if (slot && slot->pauses > 0)
		slot->pauses--;
	if (workers->launcher_latch)
		SetLatch(workers->launcher_latch);
	LWLockRelease(workers->lock);
}

static char *
OptionString(List *options, const char *name)
{
	ListCell   *lc;

	foreach(lc, options)
	{
		DefElem    *d = lfirst_node(DefElem, lc);

		if (strcmp(d->defname, name) == 0 && d->arg != NULL)
			return defGetString(d);
	}
	return NULL;
}

/* The database a statement needs without connections, if any. */
static Oid
DatabaseToPause(Node *stmt)
{
	const char *name = NULL;

	switch (nodeTag(stmt))
	{
		case T_DropdbStmt:
			name = ((DropdbStmt *) stmt)->dbname;
			break;
		case T_CreatedbStmt:
			name = OptionString(((CreatedbStmt *) stmt)->options, "template");
			break;
		case T_AlterDatabaseStmt:
			if (OptionString(((AlterDatabaseStmt *) stmt)->options, "tablespace"))
				name = ((AlterDatabaseStmt *) stmt)->dbname;
			break;
		case T_RenameStmt:
			if (((RenameStmt *) stmt)->renameType == OBJECT_DATABASE)
				name = ((RenameStmt *) stmt)->subname;
			break;
		default:
			break;
	}
	return name ? get_database_oid(name, true) : InvalidOid;
}

static void
InvProcessUtility(PlannedStmt *pstmt, const char *queryString,
				  bool readOnlyTree, ProcessUtilityContext context,
				  ParamListInfo params, QueryEnvironment *queryEnv,
				  DestReceiver *dest, QueryCompletion *qc)
{
	Node	   *stmt = pstmt->utilityStmt;
	Oid			paused = workers ? DatabaseToPause(stmt) : InvalidOid;

	if (OidIsValid(paused))
		PauseDatabase(paused);
	PG_TRY();
	{
		if (prev_ProcessUtility)
			prev_ProcessUtility(pstmt, queryString, readOnlyTree, context,
								params, queryEnv, dest, qc);
		else
			standard_ProcessUtility(pstmt, queryString, readOnlyTree, context,
									params, queryEnv, dest, qc);
	}
	PG_FINALLY();
	{
		if (OidIsValid(paused))
			ResumeDatabase(paused);
	}
	PG_END_TRY();

	if (IsA(stmt, CreateExtensionStmt) &&
		strcmp(((CreateExtensionStmt *) stmt)->extname, "inventory") == 0)
		probe_at_commit = true;
	if (IsA(stmt, CreatedbStmt) && workers != NULL)
		WakeLauncher();
}

void
LauncherInstallHooks(void)
{
	prev_ProcessUtility = ProcessUtility_hook;
	ProcessUtility_hook = InvProcessUtility;
	RegisterXactCallback(LauncherXactCallback, NULL);
}

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

/* ---- the launcher ---- */

typedef struct DbSeen
{
	Oid			oid;
	NameData	name;
} DbSeen;

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
		DbSeen	   *d;

		if (!db->datallowconn || db->datistemplate || database_is_invalid_form(db))
			continue;
		old = MemoryContextSwitchTo(outer);
		d = palloc(sizeof(DbSeen));
		d->oid = db->oid;
		d->name = db->datname;
		result = lappend(result, d);
		MemoryContextSwitchTo(old);
	}
	table_endscan(scan);
	table_close(rel, AccessShareLock);
	PopActiveSnapshot();
	CommitTransactionCommand();
	return result;
}

/* Brings the slots in line with the databases that exist. */
static void
SyncSlots(List *dbs)
{
	ListCell   *lc;

	LWLockAcquire(workers->lock, LW_EXCLUSIVE);
	for (int i = 0; i < workers->nslots; i++)
		workers->slots[i].seen = false;
	foreach(lc, dbs)
	{
		DbSeen	   *d = lfirst(lc);
		InvDbSlot  *slot = FindSlot(d->oid);

		if (slot == NULL)
		{
			for (int i = 0; i < workers->nslots && slot == NULL; i++)
			{
				if (!workers->slots[i].in_use)
					slot = &workers->slots[i];
			}
			if (slot == NULL)
			{
				ereport(WARNING,
						(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
						 errmsg("inventory launcher cannot serve database \"%s\"",
								NameStr(d->name)),
						 errdetail("Every one of the %d worker slots is taken.", workers->nslots),
						 errhint("Raise max_worker_processes.")));
				continue;
			}
			memset(slot, 0, sizeof(InvDbSlot));
			slot->in_use = true;
			slot->dboid = d->oid;
			handles[slot - workers->slots] = NULL;
		}
		slot->datname = d->name;
		slot->seen = true;
	}
	for (int i = 0; i < workers->nslots; i++)
	{
		InvDbSlot  *slot = &workers->slots[i];

		if (slot->in_use && !slot->seen && slot->pid == 0)
		{
			slot->in_use = false;
			handles[i] = NULL;
		}
	}
	LWLockRelease(workers->lock);
}

static bool
WorkerAlive(int i)
{
	pid_t		pid;
	BgwHandleStatus status;

	if (handles[i] == NULL)
		return false;
	status = GetBackgroundWorkerPid(handles[i], &pid);
	return status == BGWH_STARTED || status == BGWH_NOT_YET_STARTED;
}

/*
 * Starts the worker of slot i, unless one was started less than
 * RESTART_DELAY_MS ago; then returns how many milliseconds to wait.
 */
static long
StartWorker(int i, Oid dboid, const char *datname)
{
	BackgroundWorker bgw;
	TimestampTz now = GetCurrentTimestamp();
	TimestampTz allowed = TimestampTzPlusMilliseconds(last_start[i], RESTART_DELAY_MS);

	if (now < allowed)
		return TimestampDifferenceMilliseconds(now, allowed) + 1;
	last_start[i] = now;

	memset(&bgw, 0, sizeof(bgw));
	bgw.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	bgw.bgw_start_time = BgWorkerStart_RecoveryFinished;
	bgw.bgw_restart_time = BGW_NEVER_RESTART;	/* the launcher does it */
	snprintf(bgw.bgw_library_name, BGW_MAXLEN, "inventory");
	snprintf(bgw.bgw_function_name, BGW_MAXLEN, "inventory_worker_main");
	snprintf(bgw.bgw_name, BGW_MAXLEN, "inventory worker for database %s", datname);
	snprintf(bgw.bgw_type, BGW_MAXLEN, "inventory worker");
	bgw.bgw_main_arg = Int32GetDatum(i);
	memcpy(bgw.bgw_extra, &dboid, sizeof(Oid));
	bgw.bgw_notify_pid = MyProcPid;

	if (!RegisterDynamicBackgroundWorker(&bgw, &handles[i]))
	{
		handles[i] = NULL;
		ereport(WARNING,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("could not start the inventory worker for database \"%s\"", datname),
				 errhint("Raise max_worker_processes.")));
	}
	return 0;
}

/*
 * Starts a worker for every slot that should have one and has none.  A
 * worker is there when its handle says so or, for workers started by an
 * earlier launcher, when one is attached to the slot.  Returns how long the
 * launcher may sleep: less than its nap when a start had to wait.
 */
static long
StartWorkers(void)
{
	long		wait = LAUNCHER_NAPTIME_MS;

	for (int i = 0; i < workers->nslots; i++)
	{
		InvDbSlot  *slot = &workers->slots[i];
		bool		alive = WorkerAlive(i);
		bool		wanted;
		Oid			dboid;
		NameData	datname;

		LWLockAcquire(workers->lock, LW_EXCLUSIVE);
		alive = alive || slot->pid != 0;
		if (slot->in_use && slot->probe && !alive)
		{
			slot->absent = false;
			slot->probe = false;
		}
		wanted = slot->in_use && !slot->absent && slot->pauses == 0 && !alive;
		dboid = slot->dboid;
		datname = slot->datname;
		LWLockRelease(workers->lock);

		if (wanted)
		{
			long		delay = StartWorker(i, dboid, NameStr(datname));

			if (delay > 0 && delay < wait)
				wait = delay;
		}
	}
	return wait;
}

static void
LauncherDetach(int code, Datum arg)
{
	LWLockAcquire(workers->lock, LW_EXCLUSIVE);
	workers->launcher_pid = 0;
	workers->launcher_latch = NULL;
	LWLockRelease(workers->lock);
}

PGDLLEXPORT void inventory_launcher_main(Datum main_arg);

void
inventory_launcher_main(Datum main_arg)
{
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnection(NULL, NULL, 0);
	pgstat_report_appname("inventory launcher");

	handles = MemoryContextAllocZero(TopMemoryContext,
									 workers->nslots * sizeof(BackgroundWorkerHandle *));
	last_start = MemoryContextAllocZero(TopMemoryContext,
										workers->nslots * sizeof(TimestampTz));

	LWLockAcquire(workers->lock, LW_EXCLUSIVE);
	workers->launcher_pid = MyProcPid;
	workers->launcher_latch = MyLatch;
	/* a new launcher knows no worker: look at every database afresh */
	for (int i = 0; i < workers->nslots; i++)
		workers->slots[i].absent = false;
	LWLockRelease(workers->lock);
	before_shmem_exit(LauncherDetach, (Datum) 0);

	ereport(LOG, (errmsg("inventory launcher started")));

	for (;;)
	{
		List	   *dbs;
		long		nap;

		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}

		dbs = ScanDatabases();
		SyncSlots(dbs);
		list_free_deep(dbs);
		nap = StartWorkers();
		pgstat_report_activity(STATE_IDLE, NULL);

		(void) WaitLatch(MyLatch,
						 WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 nap, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
}

/* ---- a database's worker reports here ---- */

static void
WorkerDetach(int code, Datum arg)
{
	LWLockAcquire(workers->lock, LW_EXCLUSIVE);
	my_slot->pid = 0;
	if (workers->launcher_latch)
		SetLatch(workers->launcher_latch);
	LWLockRelease(workers->lock);
}

void
WorkerAttach(int slotno, Oid dboid)
{
	InvDbSlot  *slot;

	if (slotno < 0 || slotno >= workers->nslots)
		elog(ERROR, "inventory: invalid worker slot %d", slotno);
	slot = &workers->slots[slotno];
	LWLockAcquire(workers->lock, LW_EXCLUSIVE);
	if (!slot->in_use || slot->dboid != dboid || slot->pid != 0)
	{
		LWLockRelease(workers->lock);
		ereport(LOG,
				(errmsg("inventory worker slot %d is no longer for this database", slotno)));
		proc_exit(0);
	}
	slot->pid = MyProcPid;
	slot->started_at = GetCurrentTimestamp();
	my_slot = slot;
	LWLockRelease(workers->lock);
	before_shmem_exit(WorkerDetach, (Datum) 0);
}

/* Should the worker leave so a statement can have the database alone? */
bool
WorkerStopRequested(void)
{
	bool		stop;

	LWLockAcquire(workers->lock, LW_SHARED);
	stop = my_slot->pauses > 0;
	LWLockRelease(workers->lock);
	return stop;
}

/* Every time the worker wakes up, busy or not. */
void
WorkerReportWake(bool enabled)
{
	LWLockAcquire(workers->lock, LW_EXCLUSIVE);
	my_slot->enabled = enabled;
	my_slot->last_wake = GetCurrentTimestamp();
	LWLockRelease(workers->lock);
}

void
WorkerReportRound(int64 expired, int64 folded, TimestampTz oldest_overdue)
{
	LWLockAcquire(workers->lock, LW_EXCLUSIVE);
	my_slot->rounds++;
	my_slot->expired += expired;
	my_slot->folded += folded;
	my_slot->oldest_overdue = oldest_overdue;
	my_slot->last_run = GetCurrentTimestamp();
	LWLockRelease(workers->lock);
}

/* The extension is not in this database: do not start me again. */
void
WorkerReportAbsent(void)
{
	LWLockAcquire(workers->lock, LW_EXCLUSIVE);
	my_slot->absent = true;
	LWLockRelease(workers->lock);
}

/* ---- inventory.worker_status ---- */

PG_FUNCTION_INFO_V1(inventory_worker_status);
Datum
inventory_worker_status(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	TimestampTz now = GetCurrentTimestamp();

	InitMaterializedSRF(fcinfo, 0);
	if (workers == NULL)
		return (Datum) 0;

	LWLockAcquire(workers->lock, LW_SHARED);
	for (int i = 0; i < workers->nslots; i++)
	{
		InvDbSlot  *s = &workers->slots[i];
		Datum		v[11];
		bool		n[11];
		const char *state;

		if (!s->in_use || (s->absent && s->pid == 0))
			continue;
		memset(n, 0, sizeof(n));
		if (s->pauses > 0)
			state = "paused";
		else if (s->pid == 0)
			state = "starting";
		else if (!s->enabled)
			state = "disabled";
		else
			state = "running";

		v[0] = ObjectIdGetDatum(s->dboid);
		v[1] = CStringGetTextDatum(NameStr(s->datname));
		v[2] = Int32GetDatum(s->pid);
		n[2] = (s->pid == 0);
		v[3] = CStringGetTextDatum(state);
		v[4] = TimestampTzGetDatum(s->started_at);
		n[4] = (s->started_at == 0);
		v[5] = TimestampTzGetDatum(s->last_run);
		n[5] = (s->last_run == 0);
		v[6] = Int64GetDatum(s->rounds);
		v[7] = Int64GetDatum(s->expired);
		v[8] = Int64GetDatum(s->folded);
		/* lag: how long the oldest reservation still overdue has waited */
		v[9] = DirectFunctionCall2(timestamp_mi, TimestampTzGetDatum(now),
								   TimestampTzGetDatum(s->oldest_overdue ? s->oldest_overdue : now));
		v[10] = TimestampTzGetDatum(s->last_wake);
		n[10] = (s->last_wake == 0);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, v, n);
	}
	LWLockRelease(workers->lock);
	return (Datum) 0;
}
