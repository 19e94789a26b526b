/*
 * worker.c
 *	  A database's background worker: expires overdue reservations and
 *	  folds settled movements, round after round.
 *
 * Each round runs two short transactions: one expires up to
 * inventory.expire_batch overdue PENDING reservations (ExpireOverdue, which
 * skips rows a buyer has locked and so never waits for one), the other folds
 * up to inventory.fold_batch settled movements into inventory.sku
 * (FoldSettled).  Both write through the tables, so the trigger updates the
 * cache as for any other write.  Between rounds the worker sleeps on its
 * latch for inventory.expire_interval, or not at all when a batch was full.
 * It reloads its settings on SIGHUP and leaves on SIGTERM; if it dies, the
 * launcher starts it again.  When the extension is not (or no longer) in its
 * database, it says so to the launcher and exits for good.
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
#include "utils/guc.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "api.h"
#include "cache.h"
#include "fold.h"
#include "inventory.h"
#include "launcher.h"
#include "spi.h"

/* SKUs folded together in one statement */
#define FOLD_SKUS	1000

PGDLLEXPORT void inventory_worker_main(Datum main_arg);

static bool
ExtensionPresent(void)
{
	return OidIsValid(get_extension_oid("inventory", true));
}

static InvStmt oldest_overdue = {
	"SELECT pg_catalog.min(expires_at) FROM inventory.ledger"
	" WHERE NOT folded"
	" AND expires_at OPERATOR(pg_catalog.<=) pg_catalog.statement_timestamp()"
	" AND state OPERATOR(pg_catalog.=) 'PENDING'",
	0
};

/* The expires_at of the oldest reservation still overdue, or 0. */
static TimestampTz
OldestOverdue(void)
{
	TimestampTz result = 0;
	int			spi = InvSpiConnect();

	if (InvStmtRun(&oldest_overdue, NULL, NULL, false, 1) == 1)
	{
		bool		isnull;
		Datum		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);

		if (!isnull)
			result = DatumGetTimestampTz(d);
	}
	InvSpiFinish(spi);
	return result;
}

/* One round; returns true when a batch was full and more work is waiting. */
static bool
WorkerRound(void)
{
	int64		expired;
	int64		folded;
	TimestampTz oldest;

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	if (!ExtensionPresent())
	{
		ereport(LOG,
				(errmsg("inventory worker exiting: the extension is not installed in database \"%s\"",
						get_database_name(MyDatabaseId))));
		PopActiveSnapshot();
		CommitTransactionCommand();
		WorkerReportAbsent();
		proc_exit(0);
	}
	pgstat_report_activity(STATE_RUNNING, "inventory: expiring overdue reservations");
	expired = ExpireOverdue(inv_expire_batch);
	PopActiveSnapshot();
	CommitTransactionCommand();

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	folded = 0;
	/* a backlog of overdue reservations comes first: fold once it is gone */
	if (expired < inv_expire_batch)
	{
		char	  **skus = palloc(FOLD_SKUS * sizeof(char *));
		int			nskus;

		pgstat_report_activity(STATE_RUNNING, "inventory: folding settled movements");
		nskus = CacheSkusToFold(skus, FOLD_SKUS);
		/* an administrator's fold under way: leave it to them this round */
		if (nskus > 0)
			folded = FoldSettled(skus, nskus, inv_fold_batch, false);
	}
	oldest = OldestOverdue();
	PopActiveSnapshot();
	CommitTransactionCommand();

	pgstat_report_activity(STATE_IDLE, NULL);
	pgstat_report_stat(false);
	WorkerReportRound(expired, folded, oldest);
	return expired >= inv_expire_batch || folded >= inv_fold_batch;
}

void
inventory_worker_main(Datum main_arg)
{
	int			slotno = DatumGetInt32(main_arg);
	Oid			dboid;

	memcpy(&dboid, MyBgworkerEntry->bgw_extra, sizeof(Oid));

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();

	WorkerAttach(slotno, dboid);
	BackgroundWorkerInitializeConnectionByOid(dboid, InvalidOid, 0);
	pgstat_report_appname("inventory worker");

	for (;;)
	{
		bool		more = false;

		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		if (WorkerStopRequested())
			proc_exit(1);		/* the launcher starts us again later */

		WorkerReportWake(inv_worker_enabled);
		if (inv_worker_enabled)
			more = WorkerRound();

		if (!more)
		{
			(void) WaitLatch(MyLatch,
							 WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
							 inv_expire_interval, PG_WAIT_EXTENSION);
			ResetLatch(MyLatch);
		}
	}
}
