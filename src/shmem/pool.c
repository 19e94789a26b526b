/*
 * pool.c
 *	  The shared state of the background workers: one entry per database
 *	  that has the extension (or may have it), with the time its work is
 *	  next due, and a bounded pool of worker slots.
 *
 * The model is autovacuum's: a launcher and at most inventory.max_workers
 * workers, whatever the number of databases.  A database's work -- expiring
 * a PENDING reservation at its expires_at, folding settled movements -- is
 * due at a known time, kept here where the launcher sees it.  A backend
 * that commits such work lowers its database's due time (PoolNoteDue); the
 * launcher sleeps until the earliest due time, then sends a worker there.
 * The worker takes the database's due time (it is now responsible for
 * everything due so far), works, computes the next due time from the
 * tables and puts it back, and leaves -- or stays while more work falls due
 * within inventory.expire_interval and no other database waits for a slot.
 * An idle database costs nothing.
 *
 * Locking contract
 * ----------------
 * pool->lock, an LWLock, protects the database entries and the worker
 * slots: hold it shared to read them, exclusive to change them -- to take
 * or free an entry or a slot, assign a worker, count a pause, or record a
 * worker's report.
 * PoolDb.due, an atomic, is lowered without the lock: by backends at
 * commit (PoolNoteDue) and by workers at the end of a round, always by a
 * compare-and-swap that only lowers it; only the worker of the database
 * raises it, by taking it (PoolVisitBegin) -- after which its fresh reads
 * of the tables see every commit that lowered it before, and every later
 * commit lowers it again.  A backend finds its entry without the lock by a
 * remembered index whose dboid it checks first; should the entry be reused
 * for another database in between, it lowers that database's due time,
 * which costs one early visit and nothing else.
 * PoolDb.notify_due, an atomic, is when notes for LISTEN inventory_stock
 * fall due (shmem/cache_notify.c), kept apart so that the worker can tell
 * between any two of its transactions, by one read, whether to send:
 * lowered like due, by a commit that noted a crossing of zero (which
 * lowers due too, so that a worker comes) and by the worker for notes it
 * could not send yet; taken by the worker with an atomic exchange before
 * it reads the notes, so that a crossing noted after its read lowers it
 * again.  The back-off of failed sends (notify_retry_at, notify_failing)
 * is written by the worker in the database alone.
 * pool->launcher_latch and launcher_wake are read without the lock: setting
 * the latch of a launcher that has just exited wakes nobody who minds.  The
 * launcher sets launcher_wake to POOL_NOTHING_DUE before it plans and to
 * its wake time only just before it sleeps, so a commit that lowers a due
 * time while it plans always sets its latch.
 */
#include "postgres.h"

#include "access/xact.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/timestamp.h"

#include "inventory.h"
#include "shmem/pool.h"

typedef struct PoolDb
{
	Oid			dboid;			/* InvalidOid: the entry is free */
	NameData	datname;
	bool		probe;			/* not known yet to have the extension */
	bool		absent;			/* a worker found no extension there */
	uint32		generation;		/* bumped by CREATE and DROP EXTENSION */
	int			pauses;			/* statements that need it unconnected */
	int			slot;			/* the worker in it, or -1 */
	pg_atomic_uint64 due;		/* TimestampTz; POOL_NOTHING_DUE: none */
	pg_atomic_uint64 notify_due;	/* notes to send: TimestampTz, or
									 * POOL_NOTHING_DUE */
	pg_atomic_uint32 bell;		/* rows committed to the change feed since
								 * LISTEN inventory_changes was last rung */
	TimestampTz retry_at;		/* no worker before this, after one failed */
	TimestampTz oldest_overdue; /* left overdue by the last round, or 0 */
	TimestampTz last_visit;		/* when the last visit ended, or 0 */
	int64		visits;
	int64		expired;
	int64		folded;
	PoolVerify	verify;			/* the last background verify */
	ReconcileCounts reconciled; /* what the reconciler's answers did */
	/* LISTEN inventory_stock: written by the worker in the database */
	TimestampTz notify_retry_at;	/* after a failed send, none before this; 0: none failed */
	int			notify_failing; /* sends failed in a row */
	int64		notify_failures;	/* sends failed since the server started */
	TimestampTz edges_until;	/* sale windows' edges sent up to here */
	int64		feed_lag_usecs; /* the change feed's oldest row held back */
} PoolDb;

typedef struct PoolSlot
{
	Oid			dboid;			/* InvalidOid: the slot is free */
	pid_t		pid;			/* 0 until the worker attaches */
	Latch	   *latch;			/* the worker's, once it attaches */
	TimestampTz started_at;
} PoolSlot;

typedef struct PoolShared
{
	LWLock	   *lock;
	Latch	   *launcher_latch;
	pg_atomic_uint64 launcher_wake; /* when the launcher looks next */
	bool		waiting;		/* work is due that found no free slot */
	int			nslots;
	int			ndbs;
	PoolSlot	slots[FLEXIBLE_ARRAY_MEMBER];
} PoolShared;

static PoolShared *pool = NULL;
static PoolDb *dbs = NULL;

/* in a backend: this transaction's earliest work, and our entry */
static TimestampTz xact_due = POOL_NOTHING_DUE;
static TimestampTz xact_notify_due = POOL_NOTHING_DUE;
static bool xact_bell = false;
static int	my_db = -1;
static TimestampTz my_db_missing_until = 0;
static bool probe_at_commit = false;

/* in a worker: its slot and database entry, and whether a visit is open */
static PoolSlot *my_slot = NULL;
static PoolDb *visit_db = NULL;
static uint32 visit_generation = 0;
static bool visiting = false;

/* a worker that failed is sent back after this long */
#define RETRY_DELAY_MS	1000

/*
 * A failed send of notifications is tried again after this long, doubled
 * at each failure in a row up to the most: a full NOTIFY queue takes a
 * while to empty, and each try costs a transaction and a WARNING.
 */
#define NOTIFY_RETRY_MIN_MS 1000
#define NOTIFY_RETRY_MAX_MS 30000

/* settings */
int			inv_max_workers = 2;
int			inv_max_databases = 1000;
bool		inv_worker_enabled = true;
int			inv_expire_interval = 1000;

static void PoolXactCallback(XactEvent event, void *arg);

/* Defines the workers' settings; registers the transaction callback. */
void
PoolInit(void)
{
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

	RegisterXactCallback(PoolXactCallback, NULL);
}

/* ---- shared memory ---- */

Size
PoolShmemSize(void)
{
	Size		size = add_size(offsetof(PoolShared, slots),
								mul_size(inv_max_workers, sizeof(PoolSlot)));

	return add_size(MAXALIGN(size), mul_size(inv_max_databases, sizeof(PoolDb)));
}

/* Called from the shmem startup hook, with AddinShmemInitLock held. */
void
PoolShmemInit(void)
{
	bool		found;
	Size		head = MAXALIGN(add_size(offsetof(PoolShared, slots),
										 mul_size(inv_max_workers, sizeof(PoolSlot))));

	pool = ShmemInitStruct("inventory pool", PoolShmemSize(), &found);
	dbs = (PoolDb *) ((char *) pool + head);
	if (found)
		return;
	memset(pool, 0, PoolShmemSize());
	pool->lock = &(GetNamedLWLockTranche("inventory"))[INV_LOCK_POOL].lock;
	pool->nslots = inv_max_workers;
	pool->ndbs = inv_max_databases;
	pg_atomic_init_u64(&pool->launcher_wake, (uint64) POOL_NOTHING_DUE);
	for (int i = 0; i < pool->ndbs; i++)
	{
		pg_atomic_init_u64(&dbs[i].due, (uint64) POOL_NOTHING_DUE);
		pg_atomic_init_u64(&dbs[i].notify_due, (uint64) POOL_NOTHING_DUE);
		pg_atomic_init_u32(&dbs[i].bell, 0);
	}
}

static PoolDb *
FindDb(Oid dboid)
{
	for (int i = 0; i < pool->ndbs; i++)
	{
		if (dbs[i].dboid == dboid)
			return &dbs[i];
	}
	return NULL;
}

/*
 * A free entry for a new database; when none is free, one that is only
 * being probed, which the launcher will add again later.  The caller holds
 * the lock exclusively.
 */
static PoolDb *
TakeDb(Oid dboid, const char *datname)
{
	PoolDb	   *db = FindDb(InvalidOid);

	for (int i = 0; db == NULL && i < pool->ndbs; i++)
	{
		if (dbs[i].probe && dbs[i].slot < 0)
			db = &dbs[i];
	}
	if (db == NULL)
		return NULL;
	db->dboid = dboid;
	namestrcpy(&db->datname, datname ? datname : "");
	db->probe = false;
	db->absent = false;
	db->generation++;
	db->pauses = 0;
	db->slot = -1;
	pg_atomic_write_u64(&db->due, (uint64) POOL_NOTHING_DUE);
	pg_atomic_write_u64(&db->notify_due, (uint64) POOL_NOTHING_DUE);
	pg_atomic_write_u32(&db->bell, 0);
	db->retry_at = 0;
	db->oldest_overdue = 0;
	db->last_visit = 0;
	db->visits = db->expired = db->folded = 0;
	memset(&db->verify, 0, sizeof(PoolVerify));
	memset(&db->reconciled, 0, sizeof(ReconcileCounts));
	db->notify_retry_at = 0;
	db->notify_failing = 0;
	db->notify_failures = 0;
	/* the edges before the server knew of the database are not sent */
	db->edges_until = GetCurrentTimestamp();
	db->feed_lag_usecs = 0;
	return db;
}

static void
FreeDb(PoolDb *db)
{
	db->dboid = InvalidOid;
	db->probe = false;
}

/* Lowers a due time to when; returns whether it did. */
static bool
TimeLower(pg_atomic_uint64 *due, TimestampTz when)
{
	uint64		old = pg_atomic_read_u64(due);

	while ((int64) old > when)
	{
		if (pg_atomic_compare_exchange_u64(due, &old, (uint64) when))
			return true;
	}
	return false;
}

/* Lowers the database's due time to when; returns whether it did. */
static bool
DueLower(PoolDb *db, TimestampTz when)
{
	return TimeLower(&db->due, when);
}

/*
 * When a worker should next go to the database: its due time (at once when
 * it is to be probed), but not before a failed worker's retry time.  The
 * caller holds the lock.
 */
static TimestampTz
NextVisit(PoolDb *db)
{
	TimestampTz due = db->probe ? 0 : (TimestampTz) pg_atomic_read_u64(&db->due);

	return Max(due, db->retry_at);
}

static void
WakeLauncher(void)
{
	Latch	   *latch = pool->launcher_latch;

	if (latch)
		SetLatch(latch);
}

/* ---- in every backend ---- */

/* Work of this transaction falls due at when (applied at commit). */
void
PoolNoteDue(TimestampTz when)
{
	if (when < xact_due)
		xact_due = when;
}

/*
 * This transaction noted a crossing of zero for LISTEN inventory_stock:
 * at commit, the notes of its database are due at when, and so is a visit.
 */
void
PoolNoteNotify(TimestampTz when)
{
	if (when < xact_notify_due)
		xact_notify_due = when;
	PoolNoteDue(when);
}

/*
 * This transaction wrote the change feed: once it commits, a worker rings
 * LISTEN inventory_changes (BellAtCommit).
 */
void
PoolNoteBell(void)
{
	xact_bell = true;
}

/* Settled movements are there to fold: due within expire_interval of now. */
void
PoolNoteFoldDue(TimestampTz now)
{
	PoolNoteDue(TimestampTzPlusMilliseconds(now, inv_expire_interval));
}

/* This database's entry, taken if it has none; NULL when none is free. */
static PoolDb *
MyDb(void)
{
	PoolDb	   *db;

	if (my_db >= 0 && dbs[my_db].dboid == MyDatabaseId)
		return &dbs[my_db];
	/* no entry could be had a moment ago: do not search at every commit */
	if (my_db_missing_until != 0 && GetCurrentTimestamp() < my_db_missing_until)
		return NULL;

	LWLockAcquire(pool->lock, LW_SHARED);
	db = FindDb(MyDatabaseId);
	LWLockRelease(pool->lock);
	if (db == NULL)
	{
		LWLockAcquire(pool->lock, LW_EXCLUSIVE);
		db = FindDb(MyDatabaseId);
		if (db == NULL)
			db = TakeDb(MyDatabaseId, NULL);
		LWLockRelease(pool->lock);
	}
	if (db != NULL)
		my_db = db - dbs;
	else
		my_db_missing_until = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), RETRY_DELAY_MS);
	return db;
}

/*
 * At commit: the database's bell is to ring.  Only the commit that sets it
 * makes its notes due now: the others find it set, and the worker rings
 * it when it may (worker/notify.c), so that a sale wakes nobody.
 */
static void
BellAtCommit(void)
{
	PoolDb	   *db = MyDb();

	if (db != NULL && pg_atomic_read_u32(&db->bell) == 0 &&
		pg_atomic_exchange_u32(&db->bell, 1) == 0)
		PoolNoteNotify(GetCurrentTimestamp());
}

/*
 * At commit: the database's work is due no later than this transaction's,
 * and its notes no later than notify_when.
 */
static void
PublishDue(TimestampTz when, TimestampTz notify_when)
{
	PoolDb	   *db = MyDb();

	int			slot;

	/* before due: a worker woken by due finds the notes due */
	if (db != NULL && notify_when != POOL_NOTHING_DUE)
		(void) TimeLower(&db->notify_due, notify_when);

	/*
	 * The launcher is told only when its plan changes -- and not by a
	 * worker, which is in the database already.  A worker in the database
	 * is woken too, should it sleep past the new due time.
	 */
	if (db == NULL || !DueLower(db, when) || my_slot != NULL)
		return;
	slot = db->slot;
	if (slot >= 0 && pool->slots[slot].latch != NULL)
		SetLatch(pool->slots[slot].latch);
	if (when < (TimestampTz) pg_atomic_read_u64(&pool->launcher_wake))
		WakeLauncher();
}

/* A committed CREATE or DROP EXTENSION: look at this database again. */
static void
ProbeMyDb(void)
{
	PoolDb	   *db;

	LWLockAcquire(pool->lock, LW_EXCLUSIVE);
	db = FindDb(MyDatabaseId);
	if (db == NULL)
		db = TakeDb(MyDatabaseId, NULL);
	if (db != NULL)
	{
		db->probe = true;
		db->absent = false;
		/* a worker that looked before this commit must look again */
		db->generation++;
	}
	LWLockRelease(pool->lock);
	WakeLauncher();
}

static void
PoolXactCallback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
			if (pool != NULL && probe_at_commit)
				ProbeMyDb();
			if (pool != NULL && xact_bell)
				BellAtCommit();
			if (pool != NULL && xact_due != POOL_NOTHING_DUE)
				PublishDue(xact_due, xact_notify_due);
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
		case XACT_EVENT_PREPARE:
			break;
		default:
			return;
	}
	xact_due = POOL_NOTHING_DUE;
	xact_notify_due = POOL_NOTHING_DUE;
	xact_bell = false;
	probe_at_commit = false;
}

/*
 * CREATE EXTENSION inventory: refuses when the workers already serve as
 * many databases as they can track.
 */
void
PoolCheckRoom(void)
{
	int			known = 0;
	bool		mine = false;

	if (pool == NULL)
		return;
	LWLockAcquire(pool->lock, LW_SHARED);
	for (int i = 0; i < pool->ndbs; i++)
	{
		if (dbs[i].dboid == MyDatabaseId)
			mine = true;
		else if (OidIsValid(dbs[i].dboid) && !dbs[i].probe)
			known++;
	}
	LWLockRelease(pool->lock);
	if (!mine && known >= inv_max_databases)
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg_plural("inventory serves at most %d database",
							   "inventory serves at most %d databases",
							   inv_max_databases, inv_max_databases),
				 errdetail("Its background workers already serve that many databases with the extension."),
				 errhint("Raise inventory.max_databases and restart the server.")));
}

void
PoolProbeAtCommit(void)
{
	probe_at_commit = true;
}

/* A statement needs the database without connections: send its worker away. */
void
PoolPause(Oid dboid)
{
	PoolDb	   *db;
	pid_t		pid = 0;

	if (pool == NULL)
		return;
	LWLockAcquire(pool->lock, LW_EXCLUSIVE);
	db = FindDb(dboid);
	/* an entry even for a database not known yet, so none is sent there */
	if (db == NULL && (db = TakeDb(dboid, NULL)) != NULL)
		db->probe = true;
	if (db != NULL)
	{
		db->pauses++;
		if (db->slot >= 0)
			pid = pool->slots[db->slot].pid;
	}
	LWLockRelease(pool->lock);
	if (pid != 0)
		kill(pid, SIGTERM);
}

/*
 * Ends the worker that serves the database now, if one does: true if one
 * was told to.  Its ask of a reconciler, if it was in one, counts as
 * failed (maintenance/reconcile.c).
 */
bool
PoolStopWorker(Oid dboid)
{
	PoolDb	   *db;
	bool		stopped = false;

	if (pool == NULL)
		return false;
	LWLockAcquire(pool->lock, LW_SHARED);
	db = FindDb(dboid);
	if (db != NULL && db->slot >= 0 && pool->slots[db->slot].pid != 0)
		stopped = kill(pool->slots[db->slot].pid, SIGTERM) == 0;
	LWLockRelease(pool->lock);
	return stopped;
}

/* The database is gone (DROP DATABASE committed): forget it. */
void
PoolForget(Oid dboid)
{
	PoolDb	   *db;

	if (pool == NULL)
		return;
	LWLockAcquire(pool->lock, LW_EXCLUSIVE);
	db = FindDb(dboid);
	if (db != NULL && db->slot < 0)
		FreeDb(db);
	LWLockRelease(pool->lock);
}

void
PoolResume(Oid dboid)
{
	PoolDb	   *db;

	if (pool == NULL)
		return;
	LWLockAcquire(pool->lock, LW_EXCLUSIVE);
	db = FindDb(dboid);
	if (db != NULL && db->pauses > 0)
		db->pauses--;
	LWLockRelease(pool->lock);
	WakeLauncher();
}

/* ---- in the launcher ---- */

static void
LauncherDetach(int code, Datum arg)
{
	LWLockAcquire(pool->lock, LW_EXCLUSIVE);
	pool->launcher_latch = NULL;
	LWLockRelease(pool->lock);
}

/*
 * A new launcher takes over.  Slots that an earlier launcher assigned to
 * workers that never attached are freed: this launcher has no handle to
 * see whether they ever will, and one that attaches late finds its slot
 * taken and leaves.
 */
void
PoolLauncherAttach(void)
{
	LWLockAcquire(pool->lock, LW_EXCLUSIVE);
	pool->launcher_latch = MyLatch;
	for (int i = 0; i < pool->nslots; i++)
	{
		PoolSlot   *s = &pool->slots[i];
		PoolDb	   *db;

		if (!OidIsValid(s->dboid) || s->pid != 0)
			continue;
		db = FindDb(s->dboid);
		if (db != NULL && db->slot == i)
			db->slot = -1;
		s->dboid = InvalidOid;
	}
	LWLockRelease(pool->lock);
	before_shmem_exit(LauncherDetach, (Datum) 0);
}

/*
 * The launcher is about to plan: until it publishes its next wake time,
 * every commit that makes work due wakes it.
 */
void
PoolLauncherAwake(void)
{
	pg_atomic_write_u64(&pool->launcher_wake, (uint64) POOL_NOTHING_DUE);
}

int
PoolSlots(void)
{
	return pool->nslots;
}

/*
 * Brings the entries in line with the databases that exist (dbs, a list of
 * PoolDbName): a database with no entry, and not known to lack the
 * extension (absent, a hash of Oids), gets one to be probed while there is
 * room; the entry of a database that no longer exists is freed.
 */
void
PoolSync(List *list, HTAB *absent)
{
	ListCell   *lc;

	LWLockAcquire(pool->lock, LW_EXCLUSIVE);
	for (int i = 0; i < pool->ndbs; i++)
	{
		bool		exists = false;

		if (!OidIsValid(dbs[i].dboid))
			continue;
		foreach(lc, list)
		{
			PoolDbName *d = lfirst(lc);

			if (d->dboid == dbs[i].dboid)
			{
				dbs[i].datname = d->datname;
				exists = true;
				break;
			}
		}
		if (!exists && dbs[i].slot < 0)
			FreeDb(&dbs[i]);
	}
	foreach(lc, list)
	{
		PoolDbName *d = lfirst(lc);
		PoolDb	   *db;

		if (FindDb(d->dboid) != NULL ||
			hash_search(absent, &d->dboid, HASH_FIND, NULL) != NULL)
			continue;
		if (FindDb(InvalidOid) == NULL)
			break;				/* probed later, once there is room */
		db = TakeDb(d->dboid, NameStr(d->datname));
		db->probe = true;
	}
	LWLockRelease(pool->lock);
}

/*
 * Frees the entries of databases where a worker found no extension, and
 * remembers them in absent; forgets a database there once it has an entry
 * again (CREATE EXTENSION took one).
 */
void
PoolForgetAbsent(HTAB *absent)
{
	HASH_SEQ_STATUS status;
	Oid		   *oid;

	LWLockAcquire(pool->lock, LW_EXCLUSIVE);
	hash_seq_init(&status, absent);
	while ((oid = hash_seq_search(&status)) != NULL)
	{
		PoolDb	   *db = FindDb(*oid);

		if (db != NULL && !db->absent)
			hash_search(absent, oid, HASH_REMOVE, NULL);
	}
	for (int i = 0; i < pool->ndbs; i++)
	{
		if (OidIsValid(dbs[i].dboid) && dbs[i].absent && dbs[i].slot < 0)
		{
			hash_search(absent, &dbs[i].dboid, HASH_ENTER, NULL);
			FreeDb(&dbs[i]);
		}
	}
	LWLockRelease(pool->lock);
}

/*
 * Picks the database whose work has waited longest -- due by now, or to be
 * probed -- with no worker in it and no statement pausing it, and assigns it
 * a free slot.  Returns false when none is due or no slot is free; the
 * launcher publishes with PoolSetLauncherWake() whether work is left waiting.
 */
bool
PoolAssign(TimestampTz now, int *slotno, Oid *dboid, NameData *datname)
{
	PoolDb	   *best = NULL;
	TimestampTz best_due = 0;
	int			slot = -1;

	LWLockAcquire(pool->lock, LW_EXCLUSIVE);
	for (int i = 0; i < pool->nslots && slot < 0; i++)
	{
		if (!OidIsValid(pool->slots[i].dboid))
			slot = i;
	}
	for (int i = 0; i < pool->ndbs; i++)
	{
		PoolDb	   *db = &dbs[i];
		TimestampTz due;

		if (!OidIsValid(db->dboid) || db->slot >= 0 || db->pauses > 0 || db->absent)
			continue;
		due = NextVisit(db);
		if (due > now)
			continue;
		if (best == NULL || due < best_due)
		{
			best = db;
			best_due = due;
		}
	}
	if (best != NULL && slot >= 0)
	{
		PoolSlot   *s = &pool->slots[slot];

		s->dboid = best->dboid;
		s->pid = 0;
		s->latch = NULL;
		s->started_at = now;
		best->slot = slot;
		*slotno = slot;
		*dboid = best->dboid;
		*datname = best->datname;
	}
	LWLockRelease(pool->lock);
	return best != NULL && slot >= 0;
}

/* The worker of slotno could not be started: try again at retry_at. */
void
PoolUnassign(int slotno, TimestampTz retry_at)
{
	PoolSlot   *s = &pool->slots[slotno];
	PoolDb	   *db;

	LWLockAcquire(pool->lock, LW_EXCLUSIVE);
	db = FindDb(s->dboid);
	if (db != NULL && db->slot == slotno)
	{
		db->slot = -1;
		db->retry_at = retry_at;
	}
	s->dboid = InvalidOid;
	s->pid = 0;
	s->latch = NULL;
	LWLockRelease(pool->lock);
}

/*
 * The worker started for slotno has stopped: if it never attached (it
 * failed before, or exited at once), free the slot and send another later.
 */
void
PoolReleaseUnstarted(int slotno)
{
	bool		unstarted;

	LWLockAcquire(pool->lock, LW_SHARED);
	unstarted = OidIsValid(pool->slots[slotno].dboid) && pool->slots[slotno].pid == 0;
	LWLockRelease(pool->lock);
	if (unstarted)
		PoolUnassign(slotno, TimestampTzPlusMilliseconds(GetCurrentTimestamp(), RETRY_DELAY_MS));
}

/* The earliest due time of a database with no worker, to sleep until. */
TimestampTz
PoolEarliestDue(void)
{
	TimestampTz earliest = POOL_NOTHING_DUE;

	LWLockAcquire(pool->lock, LW_SHARED);
	for (int i = 0; i < pool->ndbs; i++)
	{
		PoolDb	   *db = &dbs[i];
		TimestampTz due;

		if (!OidIsValid(db->dboid) || db->slot >= 0 || db->pauses > 0 || db->absent)
			continue;
		due = NextVisit(db);
		earliest = Min(earliest, due);
	}
	LWLockRelease(pool->lock);
	return earliest;
}

void
PoolSetLauncherWake(TimestampTz when, bool waiting)
{
	pg_atomic_write_u64(&pool->launcher_wake, (uint64) when);
	LWLockAcquire(pool->lock, LW_EXCLUSIVE);
	pool->waiting = waiting;
	LWLockRelease(pool->lock);
}

/* ---- in a worker ---- */

/*
 * A worker visit ends, cleanly or not: the slot is free again and the
 * launcher is told.  A visit cut short (an error, pg_terminate_backend,
 * a pause) leaves its work due again soon.
 */
static void
WorkerDetach(int code, Datum arg)
{
	LWLockAcquire(pool->lock, LW_EXCLUSIVE);
	if (visit_db != NULL && visit_db->slot == my_slot - pool->slots)
	{
		/*
		 * A visit cut short leaves its work due, the notes it may have
		 * taken too; try again a little later.
		 */
		if (visiting)
		{
			(void) TimeLower(&visit_db->notify_due, GetCurrentTimestamp());
			(void) DueLower(visit_db, GetCurrentTimestamp());
		}
		if (code != 0 || visiting)
			visit_db->retry_at = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), RETRY_DELAY_MS);
		visit_db->slot = -1;
	}
	my_slot->dboid = InvalidOid;
	my_slot->pid = 0;
	my_slot->latch = NULL;
	LWLockRelease(pool->lock);
	WakeLauncher();
}

/*
 * Takes slotno, which the launcher assigned to this worker, and returns the
 * database to connect to; InvalidOid when the slot is no longer for us or a
 * statement needs the database alone.
 */
Oid
PoolWorkerAttach(int slotno)
{
	PoolSlot   *s;
	PoolDb	   *db;
	Oid			dboid = InvalidOid;

	if (slotno < 0 || slotno >= pool->nslots)
		elog(ERROR, "inventory: invalid worker slot %d", slotno);
	s = &pool->slots[slotno];
	LWLockAcquire(pool->lock, LW_EXCLUSIVE);
	db = OidIsValid(s->dboid) ? FindDb(s->dboid) : NULL;
	if (db != NULL && db->slot == slotno && s->pid == 0)
	{
		s->pid = MyProcPid;
		s->latch = MyLatch;
		s->started_at = GetCurrentTimestamp();
		my_slot = s;
		visit_db = db;
		visit_generation = db->generation;
		if (db->pauses == 0)
			dboid = db->dboid;
	}
	LWLockRelease(pool->lock);
	if (my_slot != NULL)
		before_shmem_exit(WorkerDetach, (Datum) 0);
	return dboid;
}

/*
 * The start of a round: the worker takes what is due in its database.
 * Every commit that made work due before this is visible to the round's
 * fresh reads; every later one lowers the due time again.
 */
void
PoolVisitBegin(void)
{
	TimestampTz notify_at;

	pg_atomic_write_u64(&visit_db->due, (uint64) POOL_NOTHING_DUE);

	/*
	 * Notes due later -- the rate limit's, or after a failed send's
	 * back-off -- keep the database due; the round sends those due now.
	 */
	notify_at = (TimestampTz) pg_atomic_read_u64(&visit_db->notify_due);
	if (notify_at != POOL_NOTHING_DUE)
	{
		notify_at = Max(notify_at, visit_db->notify_retry_at);
		if (notify_at > GetCurrentTimestamp())
			(void) DueLower(visit_db, notify_at);
	}
	visiting = true;
	LWLockAcquire(pool->lock, LW_EXCLUSIVE);
	visit_db->probe = false;
	LWLockRelease(pool->lock);
}

/* The end of a round: what it did, and when work is due next. */
void
PoolVisitRound(int64 expired, int64 folded, TimestampTz next_due,
			   TimestampTz oldest_overdue)
{
	(void) DueLower(visit_db, next_due);
	LWLockAcquire(pool->lock, LW_EXCLUSIVE);
	visit_db->expired += expired;
	visit_db->folded += folded;
	visit_db->oldest_overdue = oldest_overdue;
	LWLockRelease(pool->lock);
}

/*
 * Should the worker stay for more work?  Yes while some falls due within
 * inventory.expire_interval, nothing pauses the database, and no other
 * database waits for a slot; *until is then when to look again.
 */
bool
PoolWorkerStay(TimestampTz now, TimestampTz *until)
{
	TimestampTz due = (TimestampTz) pg_atomic_read_u64(&visit_db->due);
	TimestampTz horizon = TimestampTzPlusMilliseconds(now, inv_expire_interval);
	bool		stay;

	LWLockAcquire(pool->lock, LW_SHARED);
	stay = !pool->waiting && visit_db->pauses == 0;
	LWLockRelease(pool->lock);
	*until = Max(now, due);
	return stay && due <= horizon;
}

/* Is the background verify of the worker's database due? */
bool
PoolVerifyDue(TimestampTz now, int interval_ms)
{
	TimestampTz last;

	if (interval_ms <= 0)
		return false;
	LWLockAcquire(pool->lock, LW_SHARED);
	last = visit_db->verify.verified_at;
	LWLockRelease(pool->lock);
	return last == 0 || TimestampDifferenceExceeds(last, now, interval_ms);
}

/* The worker verified its database. */
void
PoolVerifyReport(const PoolVerify *v)
{
	LWLockAcquire(pool->lock, LW_EXCLUSIVE);
	visit_db->verify = *v;
	LWLockRelease(pool->lock);
}

/*
 * What the reconciler's answers did in this database, in a worker's round
 * or an inventory.expire(): added to its counters.
 */
void
PoolReconcileReport(const ReconcileCounts *c)
{
	PoolDb	   *db;

	if (pool == NULL)
		return;
	LWLockAcquire(pool->lock, LW_EXCLUSIVE);
	db = FindDb(MyDatabaseId);
	if (db != NULL)
	{
		db->reconciled.confirmed += c->confirmed;
		db->reconciled.cancelled += c->cancelled;
		db->reconciled.expired += c->expired;
		db->reconciled.waited += c->waited;
		db->reconciled.failed += c->failed;
		db->reconciled.refused += c->refused;
	}
	LWLockRelease(pool->lock);
}

/*
 * Are notes of the worker's database due at now (with all, whether due or
 * not)?  If so, the worker takes them: it reads the notes next, and a
 * crossing noted after that read makes them due again.  Not before the
 * back-off of a failed send has passed, whatever was noted since.  Costs
 * one read of shared memory when nothing is due.
 */
bool
PoolNotifyTake(TimestampTz now, bool all)
{
	if (!all && (TimestampTz) pg_atomic_read_u64(&visit_db->notify_due) > now)
		return false;
	if (now < visit_db->notify_retry_at)
		return false;
	(void) pg_atomic_exchange_u64(&visit_db->notify_due, (uint64) POOL_NOTHING_DUE);
	return true;
}

/*
 * A send of notifications failed at now: counted, and the notes are due
 * again after a back-off, which is returned (milliseconds).
 */
int
PoolNotifyFailed(TimestampTz now)
{
	int			backoff = NOTIFY_RETRY_MIN_MS;

	LWLockAcquire(pool->lock, LW_EXCLUSIVE);
	for (int i = 0; i < visit_db->notify_failing && backoff < NOTIFY_RETRY_MAX_MS; i++)
		backoff *= 2;
	backoff = Min(backoff, NOTIFY_RETRY_MAX_MS);
	visit_db->notify_failing++;
	visit_db->notify_failures++;
	visit_db->notify_retry_at = TimestampTzPlusMilliseconds(now, backoff);
	LWLockRelease(pool->lock);
	(void) TimeLower(&visit_db->notify_due, now);
	(void) DueLower(visit_db, visit_db->notify_retry_at);
	return backoff;
}

/*
 * A send of notifications committed; the notes it left are due at next
 * (POOL_NOTHING_DUE: none).  The next failure backs off afresh.
 */
void
PoolNotifySent(TimestampTz next)
{
	if (next != POOL_NOTHING_DUE)
	{
		(void) TimeLower(&visit_db->notify_due, next);
		(void) DueLower(visit_db, next);
	}
	if (visit_db->notify_retry_at == 0)
		return;
	LWLockAcquire(pool->lock, LW_EXCLUSIVE);
	visit_db->notify_retry_at = 0;
	visit_db->notify_failing = 0;
	LWLockRelease(pool->lock);
}

/* Is LISTEN inventory_changes to be rung? */
bool
PoolBellPending(void)
{
	return pg_atomic_read_u32(&visit_db->bell) != 0;
}

/* The bell, taken to be rung: rung once. */
bool
PoolBellTake(void)
{
	return pg_atomic_exchange_u32(&visit_db->bell, 0) != 0;
}

/* A ring that failed: rung again with the next send. */
void
PoolBellAgain(void)
{
	pg_atomic_write_u32(&visit_db->bell, 1);
}

/*
 * How long the oldest row of the visited database's change feed has been
 * held back, at the worker's last send (0: none).
 */
void
PoolFeedLag(int64 usecs)
{
	LWLockAcquire(pool->lock, LW_EXCLUSIVE);
	visit_db->feed_lag_usecs = usecs;
	LWLockRelease(pool->lock);
}

/*
 * Up to when the sale windows' edges of the visited database have been
 * sent to LISTEN inventory_stock; the visiting worker alone moves it.
 */
TimestampTz
PoolEdgesUntil(void)
{
	TimestampTz until;

	LWLockAcquire(pool->lock, LW_SHARED);
	until = visit_db->edges_until;
	LWLockRelease(pool->lock);
	return until;
}

void
PoolEdgesSent(TimestampTz until)
{
	LWLockAcquire(pool->lock, LW_EXCLUSIVE);
	visit_db->edges_until = until;
	LWLockRelease(pool->lock);
}

/* A visit that ends as it should. */
void
PoolVisitEnd(void)
{
	visiting = false;
	LWLockAcquire(pool->lock, LW_EXCLUSIVE);
	visit_db->visits++;
	visit_db->last_visit = GetCurrentTimestamp();
	visit_db->retry_at = 0;
	LWLockRelease(pool->lock);
}

/*
 * The extension is not in this database -- unless a CREATE EXTENSION
 * committed since the worker came, which it may not have seen: then the
 * database is to be probed again.
 */
void
PoolReportAbsent(void)
{
	visiting = false;
	LWLockAcquire(pool->lock, LW_EXCLUSIVE);
	if (visit_db->generation == visit_generation)
	{
		visit_db->absent = true;
		visit_db->probe = false;
	}
	else
		visit_db->probe = true;
	LWLockRelease(pool->lock);
}

/* ---- inventory.worker_status ---- */

PoolDbStatus *
PoolCopyStatus(int *count)
{
	PoolDbStatus *out;
	TimestampTz now = GetCurrentTimestamp();
	int			n = 0;

	*count = 0;
	if (pool == NULL)
		return NULL;
	out = palloc(pool->ndbs * sizeof(PoolDbStatus));
	LWLockAcquire(pool->lock, LW_SHARED);
	for (int i = 0; i < pool->ndbs; i++)
	{
		PoolDb	   *db = &dbs[i];
		PoolDbStatus *s = &out[n];
		TimestampTz due = (TimestampTz) pg_atomic_read_u64(&db->due);
		TimestampTz late_since = 0;

		if (!OidIsValid(db->dboid) || db->probe || db->absent)
			continue;
		s->dboid = db->dboid;
		s->datname = db->datname;
		s->pid = db->slot >= 0 ? pool->slots[db->slot].pid : 0;
		s->started_at = db->slot >= 0 ? pool->slots[db->slot].started_at : 0;
		s->next_due = due;
		s->last_visit = db->last_visit;
		s->visits = db->visits;
		s->expired = db->expired;
		s->folded = db->folded;
		s->verify = db->verify;
		s->reconciled = db->reconciled;
		s->notify_failures = db->notify_failures;
		s->feed_lag_usecs = db->feed_lag_usecs;

		if (db->pauses > 0)
			s->state = "paused";
		else if (db->slot >= 0)
			s->state = "running";
		else if (!inv_worker_enabled)
			s->state = "disabled";
		else if (due <= now)
			s->state = "waiting";
		else
			s->state = "idle";

		/* how long the oldest work due has waited */
		if (db->slot < 0 && due <= now)
			late_since = due;
		if (db->oldest_overdue != 0 && (late_since == 0 || db->oldest_overdue < late_since))
			late_since = db->oldest_overdue;
		s->lag_usecs = late_since != 0 && late_since < now ? now - late_since : 0;
		n++;
	}
	LWLockRelease(pool->lock);
	*count = n;
	return out;
}
