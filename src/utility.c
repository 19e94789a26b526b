/*
 * utility.c
 *	  The statements the extension reacts to, in every backend.
 *
 * - COPY FROM into its tables may be a restore (restore.c), recognised
 *   before the COPY runs and checked when it has loaded every row.
 * - DROP DATABASE, ALTER DATABASE ... RENAME or SET TABLESPACE and
 *   CREATE DATABASE ... TEMPLATE need a database without connections: a
 *   worker in it is sent away, and none is sent there until the statement
 *   is over.
 * - CREATE EXTENSION inventory is refused when the workers serve as many
 *   databases as they can track; once it, or DROP EXTENSION inventory (or
 *   DROP SCHEMA inventory CASCADE), commits, a worker looks at the database
 *   again.
 */
#include "postgres.h"

#include "commands/dbcommands.h"
#include "commands/defrem.h"
#include "nodes/parsenodes.h"
#include "storage/ipc.h"
#include "tcop/utility.h"

#include "pool.h"
#include "restore.h"
#include "utility.h"

static ProcessUtility_hook_type prev_ProcessUtility = NULL;

/* the database this backend's statement pauses, until it ends */
static Oid	paused_db = InvalidOid;
static bool exit_hook_registered = false;

/* A backend that exits in the middle of the statement (FATAL) resumes too. */
static void
ResumeAtExit(int code, Datum arg)
{
	if (OidIsValid(paused_db))
		PoolResume(paused_db);
	paused_db = InvalidOid;
}

static void
Pause(Oid dboid)
{
	if (!exit_hook_registered)
	{
		before_shmem_exit(ResumeAtExit, (Datum) 0);
		exit_hook_registered = true;
	}
	PoolPause(dboid);
	paused_db = dboid;
}

static void
Resume(void)
{
	if (OidIsValid(paused_db))
		PoolResume(paused_db);
	paused_db = InvalidOid;
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

static bool
IsCreateInventory(Node *stmt)
{
	return IsA(stmt, CreateExtensionStmt) &&
		strcmp(((CreateExtensionStmt *) stmt)->extname, "inventory") == 0;
}

/* DROP EXTENSION inventory, or DROP SCHEMA inventory ... CASCADE */
static bool
IsDropInventory(Node *stmt)
{
	DropStmt   *drop = (DropStmt *) stmt;
	ListCell   *lc;

	if (!IsA(stmt, DropStmt) ||
		(drop->removeType != OBJECT_EXTENSION && drop->removeType != OBJECT_SCHEMA))
		return false;
	foreach(lc, drop->objects)
	{
		if (strcmp(strVal(lfirst(lc)), "inventory") == 0)
			return true;
	}
	return false;
}

static void
InvProcessUtility(PlannedStmt *pstmt, const char *queryString,
				  bool readOnlyTree, ProcessUtilityContext context,
				  ParamListInfo params, QueryEnvironment *queryEnv,
				  DestReceiver *dest, QueryCompletion *qc)
{
	Node	   *stmt = pstmt->utilityStmt;
	Oid			paused = DatabaseToPause(stmt);
	bool		restore = IsA(stmt, CopyStmt) && RestoreBegin((CopyStmt *) stmt);

	if (IsCreateInventory(stmt))
		PoolCheckRoom();
	if (OidIsValid(paused))
		Pause(paused);
	PG_TRY();
	{
		if (prev_ProcessUtility)
			prev_ProcessUtility(pstmt, queryString, readOnlyTree, context,
								params, queryEnv, dest, qc);
		else
			standard_ProcessUtility(pstmt, queryString, readOnlyTree, context,
									params, queryEnv, dest, qc);
	}
	PG_CATCH();
	{
		Resume();
		if (restore)
			RestoreReset();
		PG_RE_THROW();
	}
	PG_END_TRY();
	Resume();
	if (IsA(stmt, DropdbStmt) && OidIsValid(paused))
		PoolForget(paused);
	if (restore)
		RestoreFinish();
	if (IsCreateInventory(stmt) || IsDropInventory(stmt))
		PoolProbeAtCommit();
}

void
UtilityInstallHook(void)
{
	prev_ProcessUtility = ProcessUtility_hook;
	ProcessUtility_hook = InvProcessUtility;
}
