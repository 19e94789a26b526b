/*
 * worker.c
 *	  A visit of a pool worker to a database: expires overdue reservations
 *	  and folds settled movements, round after round, while work is due.
 *
 * The launcher sends a worker to a database when its work falls due
 * (pool.c).  Each round runs two short transactions: one expires up to
 * inventory.expire_batch overdue PENDING reservations (ExpireOverdue, which
 * skips rows a buyer has locked and so never waits for one), the other
 * folds up to inventory.fold_batch settled movements into inventory.sku
 * (FoldSettled), prunes the change feed's rows past their retention
 * (RetainPrune) and reads when the next reservation falls due.  Both write
 * through the tables, so the trigger updates the cache as for any other
 * write.  The worker stays while more work falls due within
 * inventory.expire_interval and no other database waits for a slot, and
 * leaves otherwise; it reloads its settings on SIGHUP and leaves on SIGTERM.
 * Before each round and between any two of its transactions, it sends
 * LISTEN inventory_stock the SKUs that sold out or came back on sale, as
 * noted by commits with inventory.stock_notifications on, and those whose
 * sale window opened or closed (notify.c), in a transaction of its
 * own, so that the commits that made them do not take NOTIFY's
 * cluster-wide lock and no notification waits for a whole round.
 * At most once per inventory.verify_interval a visit also compares the
 * cache with the tables, as inventory.verify() does, and records what it
 * found for inventory.verify_status; a database with no work due gets no
 * visit, and no verify, since nothing there changes.
 * In a database with a reconciler (inventory.set_reconciler()), the first
 * transaction asks it about each overdue order before settling it as it
 * answers (maintenance/reconcile.c).
 * While a restore of its database is under way or stands incomplete, it
 * leaves the database alone.  When the extension is not in its database,
 * it says so and leaves.
 */
#include "postgres.h"

#include "access/xact.h"
#include "commands/dbcommands.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "inventory.h"
#include "maintenance/expire.h"
#include "maintenance/fold.h"
#include "maintenance/reconcile.h"
#include "maintenance/retain.h"
#include "maintenance/verify.h"
#include "shmem/cache.h"
#include "shmem/cache_notify.h"
#include "shmem/cache_restore.h"
#include "shmem/cache_stats.h"
#include "shmem/keyfilter.h"
#include "shmem/pool.h"
#include "tables/stmt.h"
#include "worker/notify.h"
#include "worker/worker.h"

/* SKUs folded together in one statement */
#define FOLD_SKUS	1000

/* rows of the change feed pruned in a round, at most */
#define FEED_PRUNE_ROWS	10000

/* settings */
static int	inv_expire_batch = 1000;
static int	inv_fold_batch = 10000;
static int	inv_verify_interval = 600;	/* seconds */

void
WorkerInit(void)
{
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

	DefineCustomIntVariable("inventory.verify_interval",
							"How often a worker visiting a database compares its cache with its tables.",
							"What it finds is in inventory.verify_status; 0 turns it off.",
							&inv_verify_interval,
							600, 0, INT_MAX / 1000,
							PGC_SIGHUP, GUC_UNIT_S,
							NULL, NULL, NULL);
}

PGDLLEXPORT void inventory_worker_main(Datum main_arg);

static bool
ExtensionPresent(void)
{
	return OidIsValid(get_extension_oid("inventory", true));
}

/*
 * Where the next batch of a backlog starts: when the last round expired a
 * full batch, at the expires_at it reached (see ExpireOverdue); else from
 * the beginning, so that rows a buyer held are tried again.
 */
static TimestampTz expire_from = DT_NOBEGIN;

/*
 * How many overdue reservations a batch expires: inventory.expire_batch,
 * but in a database with inventory.stock_notifications on, halved (down to
 * EXPIRE_ROWS_MIN) after a batch whose transaction took longer than
 * EXPIRE_BATCH_MS and doubled back after a quick one, since a notification
 * waits for the transaction the worker is in.  A batch's time is mostly
 * its commit's WAL, which a checkpoint makes heavier.
 */
static int	expire_rows = 0;

#define EXPIRE_BATCH_MS 50
#define EXPIRE_ROWS_MIN 50

/* The memory of a round's overdue orders, between its transactions. */
static MemoryContext
RoundContext(void)
{
	static MemoryContext round_cxt = NULL;

	if (round_cxt == NULL)
		round_cxt = AllocSetContextCreate(TopMemoryContext, "inventory reconcile round",
										  ALLOCSET_DEFAULT_SIZES);
	MemoryContextReset(round_cxt);
	return round_cxt;
}

/*
 * The expiry of a round in a database with a reconciler, once its first
 * transaction has read the overdue orders: they are asked about and
 * settled in transactions of RECONCILE_ASKS_PER_XACT orders each, until
 * inventory.reconcile_budget is spent.  Returns the reservations expired;
 * sets *backlog when overdue orders are left.
 */
static int64
WorkerAsk(const ReconcileOrder *orders, int n, bool *backlog)
{
	ReconcileCounts counts = {0};
	TimestampTz deadline = ReconcileDeadline();
	int64		settled = 0;
	int			done = 0;

	while (done < n)
	{
		Reconciler	r;
		int			chunk = Min(n - done, RECONCILE_ASKS_PER_XACT);
		int			handled = 0;

		SetCurrentStatementStartTimestamp();
		StartTransactionCommand();
		PushActiveSnapshot(GetTransactionSnapshot());
		/* set_reconciler(NULL) meanwhile: the next round expires them */
		if (ReconcilerFind(&r))
			handled = ReconcileOrders(&r, orders + done, chunk, deadline, &counts, &settled);
		PopActiveSnapshot();
		CommitTransactionCommand();
		WorkerNotify(false);
		done += handled;
		if (handled < chunk)
			break;
	}
	if (done < n)
		*backlog = true;
	PoolReconcileReport(&counts);
	return counts.expired;
}

/*
 * One round; reports what it did and when work is due next, and returns
 * whether more is due at once (a backlog of expiry, folding or pruning).
 */
static bool
WorkerRound(void)
{
	int64		expired;
	int64		folded = 0;
	int64		pruned = 0;
	TimestampTz next;
	TimestampTz now;
	TimestampTz oldest_overdue = 0;
	bool		restoring;
	bool		backlog;
	bool		more;
	bool		reconciling;
	Reconciler	reconciler;
	ReconcileOrder *orders = NULL;
	int			norders = 0;
	TimestampTz began = 0;

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	if (!ExtensionPresent())
	{
		ereport(DEBUG1,
				(errmsg("inventory worker leaving: the extension is not installed in database \"%s\"",
						get_database_name(MyDatabaseId))));
		PopActiveSnapshot();
		CommitTransactionCommand();
		PoolReportAbsent();
		proc_exit(0);
	}
	/*
	 * Nothing of the database changes until a restore commits (look again
	 * in an interval), nor while one stands incomplete (the restore's end
	 * makes work due).
	 */
	restoring = CacheRestoring(MyDatabaseId);
	if (restoring || CacheRestoreIncomplete(NULL))
	{
		PopActiveSnapshot();
		CommitTransactionCommand();
		PoolVisitRound(0, 0, restoring ?
					   TimestampTzPlusMilliseconds(GetCurrentTimestamp(), inv_expire_interval) :
					   POOL_NOTHING_DUE, 0);
		return false;
	}
	/* after a start, the key filter learns this database's keys first */
	if (!KeyFilterReady())
	{
		pgstat_report_activity(STATE_RUNNING, "inventory: reading the ledger's keys");
		(void) KeyFilterRebuild();
	}
	reconciling = ReconcilerFind(&reconciler);
	if (reconciling)
	{
		/* asked about after this transaction, in transactions of their own */
		pgstat_report_activity(STATE_RUNNING, "inventory: asking the reconciler about overdue reservations");
		norders = ReconcileCandidates(&reconciler, inv_expire_batch, RoundContext(),
									  &orders, &backlog);
	}
	else
	{
		if (!inv_stock_notifications || expire_rows <= 0 || expire_rows > inv_expire_batch)
			expire_rows = inv_expire_batch;
		pgstat_report_activity(STATE_RUNNING, "inventory: expiring overdue reservations");
		began = GetCurrentTimestamp();
		expired = ExpireOverdue(expire_rows, &expire_from);
		backlog = expired >= expire_rows;
		if (!backlog)
			TIMESTAMP_NOBEGIN(expire_from);
	}
	PopActiveSnapshot();
	CommitTransactionCommand();
	if (!reconciling && inv_stock_notifications && expired > 0)
	{
		/* the batch and its commit, not the key filter's first reading */
		long		ms = TimestampDifferenceMilliseconds(began, GetCurrentTimestamp());

		if (ms > EXPIRE_BATCH_MS)
			expire_rows = Max(expire_rows / 2, EXPIRE_ROWS_MIN);
		else if (ms < EXPIRE_BATCH_MS / 2)
			expire_rows = Min(expire_rows * 2, inv_expire_batch);
	}
	WorkerNotify(false);
	if (reconciling)
		expired = WorkerAsk(orders, norders, &backlog);

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	/* a backlog of overdue reservations comes first: fold once it is gone */
	if (!backlog)
	{
		char	  **skus = palloc(FOLD_SKUS * sizeof(char *));
		int			nskus;

		pgstat_report_activity(STATE_RUNNING, "inventory: folding settled movements");
		nskus = CacheSkusToFold(skus, FOLD_SKUS);
		/* an administrator's fold under way: leave it to them this round */
		if (nskus > 0)
			folded = FoldSettled(skus, nskus, inv_fold_batch, false);
		/* and the change feed's rows past their retention */
		pgstat_report_activity(STATE_RUNNING, "inventory: pruning the change feed");
		pruned = RetainPrune(GetCurrentTimestamp(), FEED_PRUNE_ROWS);
	}
	/* after a full batch more is waiting; else, when is the next one due? */
	more = backlog || folded >= inv_fold_batch || pruned >= FEED_PRUNE_ROWS;
	if (more)
		next = 0;
	else
		next = ExpireNextDue();
	PopActiveSnapshot();
	CommitTransactionCommand();
	WorkerNotify(false);

	now = GetCurrentTimestamp();
	if (next == 0)
		next = now;
	else if (next <= now)
	{
		/*
		 * Overdue and not expired: a buyer held its row, or it fell due
		 * since.  Try again in an interval.
		 */
		oldest_overdue = next;
		next = TimestampTzPlusMilliseconds(now, inv_expire_interval);
	}
	pgstat_report_activity(STATE_IDLE, NULL);
	pgstat_report_stat(false);
	PoolVisitRound(expired, folded, next, oldest_overdue);
	return more;
}

/*
 * Compares the cache with the tables when that is due, in a transaction of
 * its own, and records the result; differences are also logged, since
 * they mean the cache does not hold what the tables say.
 */
static void
WorkerVerify(void)
{
	PoolVerify	v;
	VerifyOut	out = {0};

	if (!PoolVerifyDue(GetCurrentTimestamp(), inv_verify_interval * 1000))
		return;
	pgstat_report_activity(STATE_RUNNING, "inventory: verifying the cache");
	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	v.checked = VerifyRun(&out, &v.skipped, NULL);
	v.differences = out.differences;
	if (v.differences > 0)
		ereport(WARNING,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg_plural("the inventory cache of database \"%s\" differs from its tables in %lld place",
							   "the inventory cache of database \"%s\" differs from its tables in %lld places",
							   v.differences,
							   get_database_name(MyDatabaseId), (long long) v.differences),
				 errhint("Run SELECT * FROM inventory.verify() in that database to see them.")));
	PopActiveSnapshot();
	CommitTransactionCommand();
	WorkerNotify(false);
	v.verified_at = GetCurrentTimestamp();
	PoolVerifyReport(&v);
	pgstat_report_activity(STATE_IDLE, NULL);
}

void
inventory_worker_main(Datum main_arg)
{
	Oid			dboid;
	bool		first = true;

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();

	dboid = PoolWorkerAttach(DatumGetInt32(main_arg));
	if (!OidIsValid(dboid))
		proc_exit(0);			/* the database is wanted alone meanwhile */
	BackgroundWorkerInitializeConnectionByOid(dboid, InvalidOid, 0);
	pgstat_report_appname("inventory worker");

	for (;;)
	{
		TimestampTz now;
		TimestampTz until;

		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		if (!inv_worker_enabled)
			break;

		PoolVisitBegin();
		/* once a visit, every note: none is lost with a worker that failed */
		WorkerNotify(first);
		first = false;
		/*
		 * A backlog comes first: the verify reads every unfolded movement
		 * in one transaction, which a backlog makes long, and no note is
		 * sent while it runs.
		 */
		if (!WorkerRound())
			WorkerVerify();

		now = GetCurrentTimestamp();
		if (!PoolWorkerStay(now, &until))
			break;
		if (until > now)
		{
			(void) WaitLatch(MyLatch,
							 WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
							 TimestampDifferenceMilliseconds(now, until),
							 PG_WAIT_EXTENSION);
			ResetLatch(MyLatch);
		}
	}
	PoolVisitEnd();
	proc_exit(0);
}
