/*
 * pool.h
 *	  The shared state of the background workers: the databases they serve,
 *	  when each has work due, and a bounded pool of worker slots.  See the
 *	  locking contract at the top of pool.c.
 */
#ifndef INVENTORY_POOL_H
#define INVENTORY_POOL_H

#include "postgres.h"

#include "datatype/timestamp.h"
#include "nodes/pg_list.h"
#include "utils/hsearch.h"

/* reservations (ledger rows) by what the reconciler's answers did to them */
typedef struct ReconcileCounts
{
	int64		confirmed;
	int64		cancelled;
	int64		expired;
	int64		waited;			/* the reconciler answered wait */
	int64		failed;			/* no answer it could use: they wait too */
	int64		refused;		/* not asked: the function broke a rule */
} ReconcileCounts;

/* when nothing is due */
#define POOL_NOTHING_DUE	DT_NOEND

/* settings */
extern int	inv_max_workers;
extern int	inv_max_databases;
extern bool inv_worker_enabled;
extern int	inv_expire_interval;	/* milliseconds */

extern void PoolInit(void);
extern Size PoolShmemSize(void);
extern void PoolShmemInit(void);

/* in every backend */
extern void PoolNoteDue(TimestampTz when);
extern void PoolNoteNotify(TimestampTz when);
extern void PoolNoteFoldDue(TimestampTz now);
extern void PoolNoteBell(void);
extern void PoolCheckRoom(void);
extern void PoolProbeAtCommit(void);
extern void PoolPause(Oid dboid);
extern void PoolResume(Oid dboid);
extern void PoolForget(Oid dboid);
extern bool PoolStopWorker(Oid dboid);

/* in the launcher */
typedef struct PoolDbName
{
	Oid			dboid;
	NameData	datname;
} PoolDbName;

extern void PoolLauncherAttach(void);
extern void PoolLauncherAwake(void);
extern void PoolSync(List *dbs, HTAB *absent);
extern void PoolForgetAbsent(HTAB *absent);
extern int	PoolSlots(void);
extern bool PoolAssign(TimestampTz now, int *slotno, Oid *dboid, NameData *datname);
extern void PoolUnassign(int slotno, TimestampTz retry_at);
extern void PoolReleaseUnstarted(int slotno);
extern TimestampTz PoolEarliestDue(void);
extern void PoolSetLauncherWake(TimestampTz when, bool waiting);

/* a background verify of a database: when, and what it found */
typedef struct PoolVerify
{
	TimestampTz verified_at;	/* 0: never since the server started */
	int64		checked;		/* SKUs compared */
	int64		differences;	/* what inventory.verify() would have shown */
	int64		skipped;		/* SKUs still busy after the retries */
} PoolVerify;

/* in a worker */
extern Oid	PoolWorkerAttach(int slotno);
extern void PoolVisitBegin(void);
extern void PoolVisitRound(int64 expired, int64 folded, TimestampTz next_due,
						   TimestampTz oldest_overdue);
extern bool PoolWorkerStay(TimestampTz now, TimestampTz *until);
extern bool PoolVerifyDue(TimestampTz now, int interval_ms);
extern void PoolVerifyReport(const PoolVerify *v);
extern void PoolReconcileReport(const ReconcileCounts *c);
extern bool PoolNotifyTake(TimestampTz now, bool all);
extern int	PoolNotifyFailed(TimestampTz now);
extern void PoolNotifySent(TimestampTz next);
extern bool PoolBellPending(void);
extern bool PoolBellTake(void);
extern void PoolBellAgain(void);
extern void PoolFeedLag(int64 usecs);
extern TimestampTz PoolEdgesUntil(void);
extern void PoolEdgesSent(TimestampTz until);
extern void PoolVisitEnd(void);
extern void PoolReportAbsent(void);

/* inventory.worker_status */
typedef struct PoolDbStatus
{
	Oid			dboid;
	NameData	datname;
	const char *state;
	pid_t		pid;
	TimestampTz started_at;		/* of the worker in it, or 0 */
	TimestampTz next_due;		/* or POOL_NOTHING_DUE */
	TimestampTz last_visit;		/* or 0 */
	int64		lag_usecs;
	int64		visits;
	int64		expired;
	int64		folded;
	PoolVerify	verify;
	ReconcileCounts reconciled;
	int64		notify_failures;
	int64		feed_lag_usecs;
} PoolDbStatus;

extern PoolDbStatus *PoolCopyStatus(int *count);

#endif							/* INVENTORY_POOL_H */
