/*
 * express.c
 *	  The express lane's queues in shared memory: reserve_now() callers
 *	  hand their reservation to their database's writer and sleep until its
 *	  batch has committed and the commit is durable.
 *
 * Every backend has one slot (indexed by its pgprocno, so the queues are
 * bounded by max_connections by construction) holding the item it asks
 * for and the writer's reply.  A database with express traffic has a lane:
 * the queue of its slots, its writer (api/reserve_now.c starts one when a
 * call finds none, worker/express_writer.c is the process) and its
 * statistics; there are inventory.max_express_writers lanes.
 *
 * A slot goes through these states:
 *
 *	IDLE -> QUEUED		the caller, ExpressEnqueue()
 *	QUEUED -> TAKEN		the writer, ExpressTakeQueue(): in its batch now
 *	TAKEN -> FLUSH		the writer, ExpressAnswerBatch(): the batch's first
 *						caller, who flushes the batch's commit and wakes
 *						the others (linked by next)
 *	TAKEN -> ANSWERED	the batch's first caller, for the others; the
 *						writer for an item that failed alone; a writer
 *						that leaves, for what it has not written
 *	ANSWERED, FLUSH -> IDLE   the caller, when it has read its reply
 *
 * The caller sleeps on its PGPROC's semaphore, as the followers of
 * ProcArrayGroupClearXid() do, and whoever moves its slot to FLUSH or
 * ANSWERED posts it exactly once.  The semaphore is also used by LWLock
 * waits, so a sleeper absorbs posts that are not its answer and gives them
 * back afterwards.  A caller does not process interrupts while its slot is
 * queued or taken: its hold is the writer's to adopt until it is answered.
 *
 * Locking contract
 * ----------------
 * express->mutex, a spinlock, protects the lanes (their database, writer,
 * queue links and statistics) and the move of a slot into or out of a
 * queue.  It is held for a few instructions only; nobody posts a semaphore
 * or sets a latch while holding it.
 * A slot's item is written by its caller while the slot is IDLE and read
 * by the writer while it is TAKEN; its reply is written by the writer (or
 * the batch's first caller) before the state moves to ANSWERED or FLUSH,
 * with a write barrier between, and read by the caller after it has seen
 * that state, with a read barrier between.
 * express->last_commit, an atomic, is the latest commit LSN of any writer;
 * it only grows.  A writer raises it in its commit callback, before its
 * transaction's locks are released, so that whoever waited on one of them
 * finds the commit there.
 * express->held (the databases where no writer may start now: paused by a
 * statement that needs the database without connections, or whose last
 * writer failed to start less than a second ago) is protected by
 * express->mutex too.
 */
#include "postgres.h"

#include <signal.h>

#include "access/xact.h"
#include "access/xlog.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "port/atomics.h"
#include "replication/syncrep.h"
#include "replication/walsender.h"
#include "replication/walsender_private.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "storage/pg_sema.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/guc.h"
#include "utils/timestamp.h"

#include "fault.h"
#include "shmem/express.h"

#define SLOT_IDLE		0
#define SLOT_QUEUED		1
#define SLOT_TAKEN		2
#define SLOT_FLUSH		3
#define SLOT_ANSWERED	4

typedef struct ExpressSlot
{
	pg_atomic_uint32 state;
	int			next;			/* the queue, or the batch's wake chain; -1: end */
	ExpressItem item;
	ExpressReply reply;
} ExpressSlot;

typedef struct ExpressLane
{
	Oid			dboid;			/* InvalidOid: the lane is free */
	pid_t		writer_pid;		/* 0: starting */
	Latch	   *writer_latch;
	bool		writer_idle;	/* it found the queue empty: set its latch */
	int			head;			/* the queue; -1: empty */
	int			tail;
	int			queued;
	TimestampTz started_at;
	int64		batches;
	int64		rows;
	int64		max_batch;
	int64		sent_back;
	int64		failed;
} ExpressLane;

/*
 * A database where no writer may start now: its callers reserve in their
 * own transactions, where every wait can be ended, instead of sleeping on
 * a writer that cannot connect.
 */
typedef struct ExpressHeld
{
	Oid			dboid;			/* InvalidOid: the entry is free */
	int			pauses;			/* statements that need it without connections */
	TimestampTz retry_at;		/* a writer failed to start: none before this */
} ExpressHeld;

/* databases held at once; a full table holds no more (they start writers) */
#define EXPRESS_HELD_DBS	64

/* how long after a writer failed to start its database's calls fall back */
#define EXPRESS_START_RETRY_MS	1000

typedef struct ExpressShared
{
	slock_t		mutex;
	pg_atomic_uint64 last_commit;	/* XLogRecPtr */
	pg_atomic_uint64 fallbacks;
	ExpressHeld held[EXPRESS_HELD_DBS];
	ExpressSlot slots[FLEXIBLE_ARRAY_MEMBER];	/* then the lanes */
} ExpressShared;

static ExpressShared *express = NULL;
static ExpressLane *lanes = NULL;

/* settings */
int			inv_max_express_writers = 4;
int			inv_express_idle_timeout = 60000;

void
ExpressInit(void)
{
	DefineCustomIntVariable("inventory.max_express_writers",
							"Databases whose reserve_now() calls can have a writer at the same time, at most.",
							"Each writer takes one of max_worker_processes while it runs.  0: reserve_now() reserves in the caller's own transaction, as reserve() does.",
							&inv_max_express_writers,
							4, 0, 1024,
							PGC_POSTMASTER, 0,
							NULL, NULL, NULL);
	DefineCustomIntVariable("inventory.express_idle_timeout",
							"Time a reserve_now() writer waits for calls before it leaves.",
							NULL,
							&inv_express_idle_timeout,
							60000, 1000, INT_MAX,
							PGC_SIGHUP, GUC_UNIT_MS,
							NULL, NULL, NULL);
}

/* One slot per process; the most items a writer can have taken at once. */
int
ExpressSlotCount(void)
{
	return MaxBackends + NUM_AUXILIARY_PROCS;
}

Size
ExpressShmemSize(void)
{
	Size		size = offsetof(ExpressShared, slots);

	size = add_size(size, mul_size(ExpressSlotCount(), sizeof(ExpressSlot)));
	size = MAXALIGN(size);
	return add_size(size, mul_size(inv_max_express_writers, sizeof(ExpressLane)));
}

void
ExpressShmemInit(void)
{
	bool		found;
	Size		lanes_at;

	express = ShmemInitStruct("inventory express lane", ExpressShmemSize(), &found);
	lanes_at = MAXALIGN(offsetof(ExpressShared, slots) +
						ExpressSlotCount() * sizeof(ExpressSlot));
	lanes = (ExpressLane *) ((char *) express + lanes_at);
	if (found)
		return;
	SpinLockInit(&express->mutex);
	pg_atomic_init_u64(&express->last_commit, InvalidXLogRecPtr);
	pg_atomic_init_u64(&express->fallbacks, 0);
	memset(express->held, 0, sizeof(express->held));
	for (int i = 0; i < ExpressSlotCount(); i++)
	{
		pg_atomic_init_u32(&express->slots[i].state, SLOT_IDLE);
		express->slots[i].next = -1;
	}
	memset(lanes, 0, inv_max_express_writers * sizeof(ExpressLane));
	for (int i = 0; i < inv_max_express_writers; i++)
		lanes[i].head = lanes[i].tail = -1;
}

/* ---- databases where no writer may start ---- */

/*
 * The entry of dboid, or if make a free one for it (one whose hold has
 * ended by now); the mutex is held.
 */
static ExpressHeld *
HeldEntry(Oid dboid, bool make, TimestampTz now)
{
	ExpressHeld *free_entry = NULL;

	for (int i = 0; i < EXPRESS_HELD_DBS; i++)
	{
		ExpressHeld *h = &express->held[i];

		if (h->dboid == dboid)
			return h;
		if (make && free_entry == NULL &&
			(h->dboid == InvalidOid || (h->pauses == 0 && h->retry_at <= now)))
			free_entry = h;
	}
	if (free_entry != NULL)
	{
		free_entry->dboid = dboid;
		free_entry->pauses = 0;
		free_entry->retry_at = 0;
	}
	return free_entry;
}

/* May a writer start for the database at now?  The mutex is held. */
static bool
WriterMayStart(Oid dboid, TimestampTz now)
{
	ExpressHeld *h = HeldEntry(dboid, false, now);

	return h == NULL || (h->pauses == 0 && h->retry_at <= now);
}

/* A writer for dboid could not be started, or died before it could write. */
static void
NoteStartFailed(Oid dboid)
{
	ExpressHeld *h;
	TimestampTz now = GetCurrentTimestamp();

	SpinLockAcquire(&express->mutex);
	h = HeldEntry(dboid, true, now);
	if (h != NULL)
		h->retry_at = TimestampTzPlusMilliseconds(now, EXPRESS_START_RETRY_MS);
	SpinLockRelease(&express->mutex);
}

/* ---- callers ---- */

static ExpressSlot *
MySlot(void)
{
	return &express->slots[MyProc->pgprocno];
}

/* The caller's item, to fill while its slot is idle. */
ExpressItem *
ExpressMyItem(void)
{
	Assert(pg_atomic_read_u32(&MySlot()->state) == SLOT_IDLE);
	return &MySlot()->item;
}

/*
 * Queues the caller's item in its database's lane, taking a free lane if
 * the database has none (the caller then starts its writer: *lane says
 * which).  The caller must hold interrupts from here to its reply.
 */
ExpressQueued
ExpressEnqueue(int *lane)
{
	ExpressSlot *slot = MySlot();
	int			me = MyProc->pgprocno;
	ExpressLane *l = NULL;
	ExpressQueued result = EXPRESS_QUEUED;
	Latch	   *wake = NULL;
	TimestampTz now = GetCurrentStatementStartTimestamp();

	slot->next = -1;
	SpinLockAcquire(&express->mutex);
	for (int i = 0; i < inv_max_express_writers; i++)
	{
		if (lanes[i].dboid == MyDatabaseId)
		{
			l = &lanes[i];
			*lane = i;
			break;
		}
	}
	if (l == NULL && WriterMayStart(MyDatabaseId, now))
	{
		for (int i = 0; i < inv_max_express_writers; i++)
		{
			if (lanes[i].dboid == InvalidOid)
			{
				l = &lanes[i];
				*lane = i;
				memset(l, 0, sizeof(ExpressLane));
				l->dboid = MyDatabaseId;
				l->head = l->tail = -1;
				result = EXPRESS_START_WRITER;
				break;
			}
		}
	}
	if (l == NULL)
	{
		SpinLockRelease(&express->mutex);
		return EXPRESS_NO_LANE;
	}
	pg_atomic_write_u32(&slot->state, SLOT_QUEUED);
	if (l->tail >= 0)
		express->slots[l->tail].next = me;
	else
		l->head = me;
	l->tail = me;
	l->queued++;
	if (l->writer_idle)
	{
		wake = l->writer_latch;
		l->writer_idle = false;
	}
	SpinLockRelease(&express->mutex);

	if (wake)
		SetLatch(wake);
	return result;
}

/* Detaches the queue of a lane, which the caller holds the mutex of. */
static int
DetachQueue(ExpressLane *l)
{
	int			head = l->head;

	l->head = l->tail = -1;
	l->queued = 0;
	return head;
}

/* Answers every slot of a detached queue: no writer will write them. */
static void
AnswerNoWriter(int head)
{
	while (head >= 0)
	{
		ExpressSlot *s = &express->slots[head];
		int			next = s->next;

		memset(&s->reply, 0, sizeof(ExpressReply));
		s->reply.answer = EXPRESS_NO_WRITER;
		pg_write_barrier();
		pg_atomic_write_u32(&s->state, SLOT_ANSWERED);
		PGSemaphoreUnlock(ProcGlobal->allProcs[head].sem);
		head = next;
	}
}

/*
 * Frees the lane of database dboid, if its writer is writer or has not
 * attached yet, and answers its queue with EXPRESS_NO_WRITER.
 */
static void
GiveUpLane(int lane, Oid dboid, pid_t writer)
{
	ExpressLane *l = &lanes[lane];
	int			head = -1;

	SpinLockAcquire(&express->mutex);
	if (l->dboid == dboid && (l->writer_pid == 0 || l->writer_pid == writer))
	{
		head = DetachQueue(l);
		l->dboid = InvalidOid;
		l->writer_pid = 0;
		l->writer_latch = NULL;
	}
	SpinLockRelease(&express->mutex);
	AnswerNoWriter(head);
}

/*
 * The writer that the caller asked for could not be started: frees the
 * lane and answers its queue, the caller included.
 */
void
ExpressWriterNotStarted(int lane)
{
	NoteStartFailed(MyDatabaseId);
	GiveUpLane(lane, MyDatabaseId, 0);
}

/* Answers the batch's other callers, linked from head. */
static void
WakeChain(int head)
{
	for (int i = head; i >= 0;)
	{
		ExpressSlot *s = &express->slots[i];
		int			next = s->next;

		pg_atomic_write_u32(&s->state, SLOT_ANSWERED);
		PGSemaphoreUnlock(ProcGlobal->allProcs[i].sem);
		i = next;
	}
}

/*
 * Sleeps until the caller's item is answered, and fills *reply.  The first
 * caller of a batch flushes the batch's commit, then wakes the others.
 */
void
ExpressSleep(ExpressReply *reply)
{
	ExpressSlot *slot = MySlot();
	volatile int extra = 0;
	uint32		state;

	pgstat_report_wait_start(PG_WAIT_EXTENSION);
	for (;;)
	{
		PGSemaphoreLock(MyProc->sem);
		state = pg_atomic_read_u32(&slot->state);
		if (state == SLOT_ANSWERED || state == SLOT_FLUSH)
			break;
		extra++;				/* a post meant for an LWLock wait */
	}
	pgstat_report_wait_end();
	pg_read_barrier();
	*reply = slot->reply;

	if (state == SLOT_FLUSH)
	{
		/* the others are woken even if the flush fails: they flush again */
		PG_TRY();
		{
			INV_FAULT("express-flush");
			if (!XLogRecPtrIsInvalid(reply->lsn))
				XLogFlush(reply->lsn);
		}
		PG_FINALLY();
		{
			WakeChain(slot->next);
			while (extra-- > 0)
				PGSemaphoreUnlock(MyProc->sem);
			pg_atomic_write_u32(&slot->state, SLOT_IDLE);
		}
		PG_END_TRY();
		return;
	}
	while (extra-- > 0)
		PGSemaphoreUnlock(MyProc->sem);
	pg_atomic_write_u32(&slot->state, SLOT_IDLE);
}

/* Has the WAL up to lsn reached the synchronous standbys the caller asks for? */
static bool
Replicated(XLogRecPtr lsn)
{
	int			mode;
	bool		done;

	if (!SyncRepRequested() || SyncRepStandbyNames == NULL ||
		SyncRepStandbyNames[0] == '\0')
		return true;
	mode = synchronous_commit == SYNCHRONOUS_COMMIT_REMOTE_WRITE ? SYNC_REP_WAIT_WRITE :
		synchronous_commit == SYNCHRONOUS_COMMIT_REMOTE_APPLY ? SYNC_REP_WAIT_APPLY :
		SYNC_REP_WAIT_FLUSH;
	LWLockAcquire(SyncRepLock, LW_SHARED);
	done = WalSndCtl->lsn[mode] >= lsn;
	LWLockRelease(SyncRepLock);
	return done;
}

/*
 * Waits until the WAL up to an express commit's lsn is durable: flushed,
 * and replicated to the synchronous standbys where the caller's
 * synchronous_commit asks for them, as its own commit would be.  A cancel
 * of the wait for a standby is an error here, not PostgreSQL's warning:
 * the caller must not answer as if it were durable.
 */
void
ExpressWaitDurable(XLogRecPtr lsn)
{
	XLogFlush(lsn);
	SyncRepWaitForLSN(lsn, true);
	if (!Replicated(lsn))
		ereport(ERROR,
				(errcode(ERRCODE_QUERY_CANCELED),
				 errmsg("canceling the wait for synchronous replication of inventory.reserve_now()"),
				 errdetail("The reservation has been committed locally, but might not have been replicated to the standby."),
				 errhint("Call it again with the same key: it answers ok or duplicate, never a second reservation.")));
}

/*
 * Makes sure that every commit of the express writers is durable before
 * an answer is read from the ledger: a writer commits without waiting for
 * the flush or the standbys, and another session could otherwise be told
 * of a reservation that a crash or a failover would take back.  One read
 * when all is durable already.
 */
void
ExpressFlushCommitted(void)
{
	XLogRecPtr	lsn = (XLogRecPtr) pg_atomic_read_u64(&express->last_commit);

	if (!XLogRecPtrIsInvalid(lsn) && !RecoveryInProgress())
		ExpressWaitDurable(lsn);
}

int64
ExpressFallbacks(void)
{
	return (int64) pg_atomic_read_u64(&express->fallbacks);
}

void
ExpressCountFallback(void)
{
	pg_atomic_fetch_add_u64(&express->fallbacks, 1);
}

/* ---- writers ---- */

/*
 * A writer's transaction has committed at lsn: called from its commit
 * callback, before its locks are released (ExpressFlushCommitted).
 */
void
ExpressPublishCommit(XLogRecPtr lsn)
{
	uint64		seen = pg_atomic_read_u64(&express->last_commit);

	while (seen < lsn &&
		   !pg_atomic_compare_exchange_u64(&express->last_commit, &seen, lsn))
		;
}

/* The writer of the lane starts: false if the lane is no longer its. */
bool
ExpressWriterAttach(int lane, Oid dboid)
{
	ExpressLane *l = &lanes[lane];
	bool		mine;

	SpinLockAcquire(&express->mutex);
	mine = (l->dboid == dboid && l->writer_pid == 0);
	if (mine)
	{
		l->writer_pid = MyProcPid;
		l->writer_latch = MyLatch;
		l->writer_idle = false;
		l->started_at = GetCurrentTimestamp();
	}
	SpinLockRelease(&express->mutex);
	return mine;
}

/*
 * Takes the lane's whole queue into items (at most max_items, which is
 * never fewer than the slots), marking each slot taken.  An empty queue
 * marks the writer idle, so that the next caller sets its latch.
 */
int
ExpressTakeQueue(int lane, int *items, int max_items)
{
	ExpressLane *l = &lanes[lane];
	int			n = 0;
	int			head;

	SpinLockAcquire(&express->mutex);
	head = DetachQueue(l);
	if (head < 0)
		l->writer_idle = true;
	for (int i = head; i >= 0 && n < max_items; i = express->slots[i].next)
	{
		pg_atomic_write_u32(&express->slots[i].state, SLOT_TAKEN);
		items[n++] = i;
	}
	SpinLockRelease(&express->mutex);
	return n;
}

/* An idle writer may leave if nothing is queued; it frees its lane then. */
bool
ExpressWriterMayLeave(int lane)
{
	ExpressLane *l = &lanes[lane];
	bool		leave;

	SpinLockAcquire(&express->mutex);
	leave = (l->head < 0 && l->writer_pid == MyProcPid);
	if (leave)
		l->dboid = InvalidOid;
	SpinLockRelease(&express->mutex);
	return leave;
}

/*
 * A writer leaves, however it leaves: frees its lane, if it still has it,
 * and answers whatever is queued with EXPRESS_NO_WRITER.  The writer
 * answers the items it had taken itself.
 */
void
ExpressWriterDetach(int lane, Oid dboid, bool attached)
{
	if (!attached)
		NoteStartFailed(dboid);
	GiveUpLane(lane, dboid, MyProcPid);
}

/*
 * A statement needs the database without connections (DROP DATABASE and
 * the like): its writer, if it has one, is asked to leave, and none starts
 * until ExpressResume(), so that a caller never sleeps on a writer that
 * waits to connect.  Its callers are connections too, so none is queued.
 */
void
ExpressPause(Oid dboid)
{
	pid_t		pid = 0;
	ExpressHeld *h;
	TimestampTz now = GetCurrentTimestamp();

	if (express == NULL)
		return;
	SpinLockAcquire(&express->mutex);
	h = HeldEntry(dboid, true, now);
	if (h != NULL)
		h->pauses++;
	for (int i = 0; i < inv_max_express_writers; i++)
	{
		if (lanes[i].dboid == dboid)
			pid = lanes[i].writer_pid;
	}
	SpinLockRelease(&express->mutex);
	if (pid != 0)
		kill(pid, SIGTERM);
}

void
ExpressResume(Oid dboid)
{
	ExpressHeld *h;

	if (express == NULL)
		return;
	SpinLockAcquire(&express->mutex);
	h = HeldEntry(dboid, false, 0);
	if (h != NULL && h->pauses > 0)
		h->pauses--;
	SpinLockRelease(&express->mutex);
}

const ExpressItem *
ExpressItemOf(int slot)
{
	return &express->slots[slot].item;
}

/*
 * Answers one taken item of the lane at once: an item that failed alone,
 * one sent back after a lock it waited for too long, or one that a leaving
 * writer did not write.
 */
void
ExpressReplyTo(int lane, int slot, const ExpressReply *reply)
{
	ExpressSlot *s = &express->slots[slot];

	if (reply->answer != EXPRESS_NO_WRITER)
	{
		SpinLockAcquire(&express->mutex);
		if (reply->answer == EXPRESS_FAILED)
			lanes[lane].failed++;
		else
			lanes[lane].sent_back++;
		SpinLockRelease(&express->mutex);
	}

	s->reply = *reply;
	pg_write_barrier();
	pg_atomic_write_u32(&s->state, SLOT_ANSWERED);
	PGSemaphoreUnlock(ProcGlobal->allProcs[slot].sem);
}

/*
 * Answers a batch: its items, in slots, get replies; commit_lsn is the
 * batch's commit (invalid if it wrote nothing).  Only the first caller is
 * woken: it flushes the commit and wakes the others.
 */
void
ExpressAnswerBatch(int lane, const int *slots, const ExpressReply *replies,
				   int n, XLogRecPtr commit_lsn)
{
	ExpressLane *l = &lanes[lane];
	int64		rows = 0;
	int64		sent_back = 0;

	if (n == 0)
		return;
	for (int i = 0; i < n; i++)
	{
		ExpressSlot *s = &express->slots[slots[i]];

		s->reply = replies[i];
		s->reply.lsn = commit_lsn;
		s->next = (i + 1 < n) ? slots[i + 1] : -1;
		if (replies[i].answer == EXPRESS_WRITTEN)
			rows++;
		else if (replies[i].answer == EXPRESS_KEY_BUSY ||
				 replies[i].answer == EXPRESS_BUYER_BUSY ||
				 replies[i].answer == EXPRESS_TABLE_BUSY)
			sent_back++;
	}
	SpinLockAcquire(&express->mutex);
	if (rows > 0)
	{
		l->batches++;
		l->rows += rows;
		if (rows > l->max_batch)
			l->max_batch = rows;
	}
	l->sent_back += sent_back;
	SpinLockRelease(&express->mutex);

	pg_write_barrier();
	pg_atomic_write_u32(&express->slots[slots[0]].state, SLOT_FLUSH);
	PGSemaphoreUnlock(ProcGlobal->allProcs[slots[0]].sem);
}

/* ---- statistics ---- */

/* Fills info with the lanes in use, at most max; returns how many. */
int
ExpressLanes(ExpressLaneInfo *info, int max)
{
	int			n = 0;

	SpinLockAcquire(&express->mutex);
	for (int i = 0; i < inv_max_express_writers && n < max; i++)
	{
		ExpressLane *l = &lanes[i];

		if (l->dboid == InvalidOid)
			continue;
		info[n].dboid = l->dboid;
		info[n].writer_pid = l->writer_pid;
		info[n].queued = l->queued;
		info[n].batches = l->batches;
		info[n].rows = l->rows;
		info[n].max_batch = l->max_batch;
		info[n].sent_back = l->sent_back;
		info[n].failed = l->failed;
		info[n].started_at = l->started_at;
		n++;
	}
	SpinLockRelease(&express->mutex);
	return n;
}
