/*
 * stmt.c
 *	  Running the extension's own SQL.
 *
 * The functions run as their owner (SECURITY DEFINER) but in the caller's
 * session, so the SQL they run must not depend on the caller's search_path:
 * it names every table, function and operator with its schema, and it runs
 * with search_path set to pg_catalog, pg_temp for its duration besides.  An
 * object planted in a schema early on the caller's search_path is never
 * looked at.  The setting is made here, around the statements, and not on
 * the functions themselves, where it would cost every call -- including the
 * refusals of a flash sale, which run no SQL at all.
 *
 * Statements are prepared on first use and kept; a new catalog epoch (the
 * extension was dropped and created again) prepares them afresh.
 */
#include "postgres.h"

#include "miscadmin.h"

#include "utils/guc.h"
#include "utils/snapmgr.h"

#include "tables/catalog.h"
#include "tables/stmt.h"

/* Connects to SPI and pins search_path; returns the level to finish with. */
int
InvSpiConnect(void)
{
	int			level;

	SPI_connect();
	level = NewGUCNestLevel();
	(void) set_config_option("search_path", "pg_catalog, pg_temp",
							 PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	return level;
}

void
InvSpiFinish(int level)
{
	AtEOXact_GUC(true, level);
	SPI_finish();
}

/* Prepares the statement, unless it is prepared for the current catalog. */
static void
StmtPrepare(InvStmt *stmt)
{
	const InvCatalog *cat = InvGetCatalog();
	SPIPlanPtr	plan;

	if (stmt->plan != NULL && stmt->epoch == cat->epoch)
		return;
	if (stmt->plan)
		SPI_freeplan(stmt->plan);
	stmt->plan = NULL;
	plan = SPI_prepare_cursor(stmt->sql, stmt->nargs, stmt->argtypes, stmt->options);
	if (plan == NULL)
		elog(ERROR, "could not prepare \"%s\": %s", stmt->sql,
			 SPI_result_code_string(SPI_result));
	SPI_keepplan(plan);
	stmt->plan = plan;
	stmt->epoch = cat->epoch;
}

/*
 * Runs a statement, with a fresh snapshot when latest is true (to read what
 * is committed now, whatever the caller's isolation level), else as a
 * statement of the calling transaction.  The caller is connected.  Returns
 * the number of rows processed; they are in SPI_tuptable.
 */
uint64
InvStmtRun(InvStmt *stmt, Datum *values, const char *nulls, bool latest,
		   long count)
{
	int			rc;

	StmtPrepare(stmt);
	if (latest)
		rc = SPI_execute_snapshot(stmt->plan, values, nulls, GetLatestSnapshot(),
								  InvalidSnapshot, true, false, count);
	else
		rc = SPI_execute_plan(stmt->plan, values, nulls, false, count);
	if (rc < 0)
		elog(ERROR, "could not run \"%s\": %s", stmt->sql,
			 SPI_result_code_string(rc));
	return SPI_processed;
}

/*
 * Runs a statement that writes, on what is committed now: in a REPEATABLE
 * READ transaction, a row committed since its snapshot -- by a transaction
 * the caller waited for -- is found and changed all the same.  The caller
 * holds the lock that orders such writers.  Returns the number of rows
 * processed.
 */
uint64
InvStmtWriteLatest(InvStmt *stmt, Datum *values, const char *nulls)
{
	int			rc;

	StmtPrepare(stmt);
	rc = SPI_execute_snapshot(stmt->plan, values, nulls, GetLatestSnapshot(),
							  InvalidSnapshot, false, true, 0);
	if (rc < 0)
		elog(ERROR, "could not run \"%s\": %s", stmt->sql,
			 SPI_result_code_string(rc));
	return SPI_processed;
}

/*
 * Runs run(arg) as the owner of the extension's schema: the extension's
 * own writes and DDL that the role calling them may not make.
 */
static void
AsSchemaOwner(void (*run) (void *), void *arg)
{
	Oid			save_userid;
	int			save_sec_context;

	GetUserIdAndSecContext(&save_userid, &save_sec_context);
	SetUserIdAndSecContext(InvSchemaOwner(), save_sec_context | SECURITY_LOCAL_USERID_CHANGE);
	PG_TRY();
	{
		run(arg);
	}
	PG_FINALLY();
	{
		SetUserIdAndSecContext(save_userid, save_sec_context);
	}
	PG_END_TRY();
}

typedef struct StmtCall
{
	InvStmt    *stmt;
	Datum	   *values;
	const char *const *sql;
	int			n;
} StmtCall;

static void
RunStmtCall(void *arg)
{
	StmtCall   *c = arg;

	if (c->stmt != NULL)
		InvStmtRun(c->stmt, c->values, NULL, false, 0);
	for (int i = 0; i < c->n; i++)
		if (SPI_execute(c->sql[i], false, 0) < 0)
			elog(ERROR, "could not run \"%s\"", c->sql[i]);
}

/* InvStmtRun() as the owner of the extension's schema. */
void
InvStmtRunAsOwner(InvStmt *stmt, Datum *values)
{
	StmtCall	c = {stmt, values, NULL, 0};

	AsSchemaOwner(RunStmtCall, &c);
}

/* Runs n statements, in order, as the owner of the extension's schema. */
void
InvSqlRunAsOwner(const char *const *sql, int n)
{
	StmtCall	c = {NULL, NULL, sql, n};
	int			level = InvSpiConnect();

	AsSchemaOwner(RunStmtCall, &c);
	InvSpiFinish(level);
}
