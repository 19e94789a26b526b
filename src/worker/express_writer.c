/*
 * express_writer.c
 *	  The express lane's writer: a dynamic background worker per database
 *	  with reserve_now() traffic, which writes the queued reservations in
 *	  batches, one transaction each.
 *
 * No timer cuts a batch: the writer takes the whole queue whenever it is
 * free, as PostgreSQL's group commit does, so a batch is whatever queued
 * while the last one was being written.  It commits without waiting for
 * the flush (synchronous_commit is off for its transactions, whatever a
 * role or database setting says) and hands the flush to the batch's first
 * caller (shmem/express.c), so that it builds the next batch while this
 * one's WAL goes to disk.  A batch that fails is aborted -- the holds it
 * adopted go back to their callers' slots -- and written again without
 * the item that failed, whose caller alone gets the error.
 *
 * The writer never waits without a bound: the locks of a key, a buyer and
 * the ledger it takes only if they are free now (express_batch.c), and
 * any other lock -- the unique index's wait for another session's insert
 * of the same key, say -- within EXPRESS_LOCK_TIMEOUT, after which the
 * batch is written again without that item, which goes back to its caller
 * to wait in its own backend.  It checks for interrupts between batches
 * and in every wait, so that pg_terminate_backend() ends it and a
 * ProcSignalBarrier (DROP DATABASE waits for every process to absorb one)
 * is absorbed while it idles.
 *
 * A writer starts at the first call that finds its database without one
 * and leaves after inventory.express_idle_timeout without calls, so that a
 * sale never sees it start and stop.  However it leaves, it first answers
 * every item it has not written (EXPRESS_NO_WRITER: the caller reserves in
 * its own transaction), so that no caller sleeps on a writer that is gone.
 * A writer that could not start or connect holds its database's callers in
 * their own transactions for a second (shmem/express.c).
 */
#include "postgres.h"

#include "access/xact.h"
#include "access/xlog.h"
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

#include "fault.h"
#include "movement/express_batch.h"
#include "shmem/express.h"
#include "tables/ledger_table.h"
#include "worker/express_writer.h"

PGDLLEXPORT void inventory_express_writer_main(Datum main_arg);

/* the writer's lane, and the items it has taken and not answered */
static int	my_lane = -1;
static Oid	my_dboid = InvalidOid;
static int *batch = NULL;
static int	nbatch = 0;
static ExpressReply *replies = NULL;
/* the batch has committed at batch_lsn and is being answered */
static bool batch_committed = false;
static XLogRecPtr batch_lsn = InvalidXLogRecPtr;
/* the writer has its lane: it connected to its database */
static bool attached = false;

/*
 * The longest a batch waits for a lock that it cannot take conditionally;
 * the item that waited goes back to its caller.
 */
#define EXPRESS_LOCK_TIMEOUT	"100ms"

/*
 * Starts the writer of a lane that the caller has just taken for its
 * database, and waits until it runs.  False if it could not be started.
 */
bool
ExpressStartWriter(int lane)
{
	BackgroundWorker bgw;
	BackgroundWorkerHandle *handle;
	pid_t		pid;

	memset(&bgw, 0, sizeof(bgw));
	bgw.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	bgw.bgw_start_time = BgWorkerStart_RecoveryFinished;
	bgw.bgw_restart_time = BGW_NEVER_RESTART;
	snprintf(bgw.bgw_library_name, BGW_MAXLEN, "inventory");
	snprintf(bgw.bgw_function_name, BGW_MAXLEN, "inventory_express_writer_main");
	snprintf(bgw.bgw_name, BGW_MAXLEN, "inventory express writer for database %u",
			 MyDatabaseId);
	snprintf(bgw.bgw_type, BGW_MAXLEN, "inventory express writer");
	bgw.bgw_main_arg = Int32GetDatum(lane);
	memcpy(bgw.bgw_extra, &MyDatabaseId, sizeof(Oid));
	bgw.bgw_notify_pid = MyProcPid;

	if (!RegisterDynamicBackgroundWorker(&bgw, &handle))
		return false;
	return WaitForBackgroundWorkerStartup(handle, &pid) == BGWH_STARTED;
}

/* Answers what the writer has taken and not written, and frees its lane. */
static void
WriterExit(int code, Datum arg)
{
	ExpressReply reply;

	if (my_lane < 0)
		return;
	memset(&reply, 0, sizeof(reply));
	reply.answer = EXPRESS_NO_WRITER;
	ExpressWriterDetach(my_lane, my_dboid, attached);
	/* a batch that committed is answered as such: its holds went with it */
	if (batch_committed)
		ExpressAnswerBatch(my_lane, batch, replies, nbatch, batch_lsn);
	else
	{
		for (int i = 0; i < nbatch; i++)
			ExpressReplyTo(my_lane, batch[i], &reply);
	}
	nbatch = 0;
	my_lane = -1;
}

/*
 * The batch's commit is recorded: publish its LSN before the transaction's
 * locks are released, so that a session waiting on a key's lock finds the
 * commit to flush when it reads the row (ExpressFlushCommitted), and mark
 * the batch committed, so that however the writer exits now its items are
 * answered as written, their holds gone with their rows.
 */
static void
WriterXactCallback(XactEvent event, void *arg)
{
	if (event != XACT_EVENT_COMMIT || nbatch == 0)
		return;
	batch_lsn = XactLastCommitEnd;
	batch_committed = true;
	ExpressPublishCommit(batch_lsn);
}

/*
 * The error of the item that failed, for its caller to raise; a lock that
 * it waited for too long sends it back to wait in its caller's backend.
 */
static void
ReplyFailed(int slot, ErrorData *edata)
{
	ExpressReply reply;

	memset(&reply, 0, sizeof(reply));
	if (edata->sqlerrcode == ERRCODE_LOCK_NOT_AVAILABLE)
	{
		reply.answer = EXPRESS_KEY_BUSY;
		ExpressReplyTo(my_lane, slot, &reply);
		return;
	}
	reply.answer = EXPRESS_FAILED;
	reply.sqlerrcode = edata->sqlerrcode;
	strlcpy(reply.message, edata->message ? edata->message : "", EXPRESS_TEXT_LEN);
	strlcpy(reply.detail, edata->detail ? edata->detail : "", EXPRESS_TEXT_LEN);
	strlcpy(reply.hint, edata->hint ? edata->hint : "", EXPRESS_TEXT_LEN);
	ExpressReplyTo(my_lane, slot, &reply);
}

/* Takes the item at index i out of the batch. */
static void
DropFromBatch(int i)
{
	memmove(&batch[i], &batch[i + 1], (nbatch - i - 1) * sizeof(int));
	nbatch--;
}

/*
 * Writes the batch in one transaction and answers it.  After an error the
 * item that failed is answered alone and the others stay in the batch, to
 * be written again.
 */
static void
WriteBatch(MemoryContext cxt)
{
	volatile int current = -1;
	volatile int written = 0;

	batch_committed = false;
	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	PG_TRY();
	{
		LedgerWriter writer;

		PushActiveSnapshot(GetTransactionSnapshot());
		pgstat_report_activity(STATE_RUNNING, "writing a batch of reserve_now() calls");
		if (!LedgerTryLockForInsert())
		{
			/* a LOCK TABLE or CREATE INDEX: its callers wait for it themselves */
			for (int i = 0; i < nbatch; i++)
			{
				memset(&replies[i], 0, sizeof(ExpressReply));
				replies[i].answer = EXPRESS_TABLE_BUSY;
			}
		}
		else
		{
			LedgerWriterInit(&writer);
			for (int i = 0; i < nbatch; i++)
			{
				current = i;
				ExpressWriteItem(ExpressItemOf(batch[i]), &writer, &replies[i]);
				if (replies[i].answer == EXPRESS_WRITTEN)
					written++;
			}
			current = -1;
			LedgerWriterClose(&writer);
		}
		PopActiveSnapshot();
		CommitTransactionCommand();
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		AbortCurrentTransaction();
		MemoryContextSwitchTo(cxt);

		if (edata->sqlerrcode != ERRCODE_LOCK_NOT_AVAILABLE || current < 0)
		{
			/* the error as it was raised, logged, with the batch's fate */
			const char *fate = current >= 0 ?
				psprintf(_("express writer, the reservation of order \"%s\": it fails alone, and the others of its batch are written again"),
						 ExpressItemOf(batch[current])->order_id) :
				_("express writer, a whole batch: each of its reservations fails");

			edata->elevel = LOG;
			edata->context = edata->context ?
				psprintf("%s\n%s", edata->context, fate) : pstrdup(fate);
			ThrowErrorData(edata);
		}
		if (current >= 0)
		{
			ReplyFailed(batch[current], edata);
			DropFromBatch(current);
		}
		else
		{
			while (nbatch > 0)
			{
				ReplyFailed(batch[0], edata);
				DropFromBatch(0);
			}
		}
		FreeErrorData(edata);
		pgstat_report_activity(STATE_IDLE, NULL);
		return;
	}
	PG_END_TRY();

	/* the commit callback marked it committed, before any interrupt */
	Assert(batch_committed);
	INV_FAULT_PAUSE("express-writer-after-commit");
	ExpressAnswerBatch(my_lane, batch, replies, nbatch,
					   written > 0 ? batch_lsn : InvalidXLogRecPtr);
	nbatch = 0;
	batch_committed = false;
	pgstat_report_activity(STATE_IDLE, NULL);
}

void
inventory_express_writer_main(Datum main_arg)
{
	int			lane = DatumGetInt32(main_arg);
	Oid			dboid;
	MemoryContext cxt;
	int			max_items;

	memcpy(&dboid, MyBgworkerEntry->bgw_extra, sizeof(Oid));
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();

	/* from here on, however it exits, its callers are answered */
	my_lane = lane;
	my_dboid = dboid;
	on_shmem_exit(WriterExit, (Datum) 0);

	BackgroundWorkerInitializeConnectionByOid(dboid, InvalidOid, 0);
	pgstat_report_appname("inventory express writer");

	/* its transactions, whatever the role's or the database's settings */
	SetConfigOption("synchronous_commit", "off", PGC_SUSET, PGC_S_OVERRIDE);
	SetConfigOption("default_transaction_read_only", "off", PGC_SUSET, PGC_S_OVERRIDE);
	SetConfigOption("default_transaction_isolation", "read committed", PGC_SUSET, PGC_S_OVERRIDE);
	SetConfigOption("statement_timeout", "0", PGC_SUSET, PGC_S_OVERRIDE);
	SetConfigOption("lock_timeout", EXPRESS_LOCK_TIMEOUT, PGC_SUSET, PGC_S_OVERRIDE);
	SetConfigOption("idle_in_transaction_session_timeout", "0", PGC_SUSET, PGC_S_OVERRIDE);

	if (!ExpressWriterAttach(lane, dboid))
	{
		my_lane = -1;			/* the lane was given up meanwhile */
		proc_exit(0);
	}
	attached = true;
	RegisterXactCallback(WriterXactCallback, NULL);

	cxt = AllocSetContextCreate(TopMemoryContext, "inventory express writer",
								ALLOCSET_DEFAULT_SIZES);
	max_items = ExpressSlotCount();
	batch = MemoryContextAlloc(TopMemoryContext, max_items * sizeof(int));
	replies = MemoryContextAlloc(TopMemoryContext, max_items * sizeof(ExpressReply));

	for (;;)
	{
		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}

		nbatch += ExpressTakeQueue(lane, batch + nbatch, max_items - nbatch);
		if (nbatch == 0)
		{
			int			rc;

			rc = WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						   inv_express_idle_timeout, PG_WAIT_EXTENSION);
			ResetLatch(MyLatch);
			if ((rc & WL_TIMEOUT) && ExpressWriterMayLeave(lane))
			{
				my_lane = -1;
				break;
			}
			continue;
		}

		MemoryContextSwitchTo(cxt);
		WriteBatch(cxt);
		MemoryContextReset(cxt);
	}
	proc_exit(0);
}
