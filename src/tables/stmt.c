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
	const InvCatalog *cat = InvGetCatalog();
	int			rc;

	if (stmt->plan == NULL || stmt->epoch != cat->epoch)
	{
		SPIPlanPtr	plan;

		if (stmt->plan)
			SPI_freeplan(stmt->plan);
		stmt->plan = NULL;
		plan = SPI_prepare(stmt->sql, stmt->nargs, stmt->argtypes);
		if (plan == NULL)
			elog(ERROR, "could not prepare \"%s\": %s", stmt->sql,
				 SPI_result_code_string(SPI_result));
		SPI_keepplan(plan);
		stmt->plan = plan;
		stmt->epoch = cat->epoch;
	}

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
