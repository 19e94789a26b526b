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
 * - ALTER TABLE inventory.ledger ADD CONSTRAINT ledger_sku_fkey: the key's
 *   checks are turned off as it is created, whoever creates it.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/table.h"
#include "catalog/indexing.h"
#include "catalog/namespace.h"
#include "catalog/pg_constraint.h"
#include "catalog/pg_trigger.h"
#include "commands/dbcommands.h"
#include "commands/defrem.h"
#include "commands/trigger.h"
#include "nodes/parsenodes.h"
#include "storage/ipc.h"
#include "tcop/utility.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

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

/*
 * inventory.ledger's foreign key to inventory.sku orders pg_dump's output;
 * the trigger enforces what it declares, and PostgreSQL's own checks of it
 * stay disabled: they would lock the SKU's row for every reservation,
 * making it the hot row the design avoids.  The update script disables
 * them after adding the key; pg_upgrade runs no script but creates the key
 * again with its checks enabled, as would a key added again by hand.  So
 * whenever the key is added, its checks are disabled here.
 */
#define SKU_KEY "ledger_sku_fkey"

/* ALTER TABLE inventory.ledger ... ADD CONSTRAINT ledger_sku_fkey FOREIGN KEY */
static bool
IsAddSkuKey(Node *stmt)
{
	AlterTableStmt *alter = (AlterTableStmt *) stmt;
	ListCell   *lc;

	if (!IsA(stmt, AlterTableStmt) || alter->relation == NULL ||
		alter->relation->schemaname == NULL ||
		strcmp(alter->relation->schemaname, "inventory") != 0 ||
		strcmp(alter->relation->relname, "ledger") != 0)
		return false;
	foreach(lc, alter->cmds)
	{
		AlterTableCmd *cmd = lfirst_node(AlterTableCmd, lc);
		Constraint *con = (Constraint *) cmd->def;

		if (cmd->subtype == AT_AddConstraint && con != NULL && IsA(con, Constraint) &&
			con->contype == CONSTR_FOREIGN && con->conname != NULL &&
			strcmp(con->conname, SKU_KEY) == 0)
			return true;
	}
	return false;
}

/* Disables every trigger that checks the key, on both tables. */
static void
DisableSkuKeyChecks(void)
{
	Oid			ledger = get_relname_relid("ledger", get_namespace_oid("inventory", false));
	Oid			key = get_relation_constraint_oid(ledger, SKU_KEY, false);
	Relation	tgrel = table_open(TriggerRelationId, AccessShareLock);
	ScanKeyData skey;
	SysScanDesc scan;
	HeapTuple	tup;
	List	   *rels = NIL;
	List	   *names = NIL;
	ListCell   *lr;
	ListCell   *ln;

	/* pg_trigger has no index on tgconstraint; it is a small catalog */
	ScanKeyInit(&skey, Anum_pg_trigger_tgconstraint, BTEqualStrategyNumber,
				F_OIDEQ, ObjectIdGetDatum(key));
	scan = systable_beginscan(tgrel, InvalidOid, false, NULL, 1, &skey);
	while (HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		Form_pg_trigger tg = (Form_pg_trigger) GETSTRUCT(tup);

		if (tg->tgenabled != TRIGGER_DISABLED)
		{
			rels = lappend_oid(rels, tg->tgrelid);
			names = lappend(names, pstrdup(NameStr(tg->tgname)));
		}
	}
	systable_endscan(scan);
	table_close(tgrel, AccessShareLock);

	forboth(lr, rels, ln, names)
	{
		Relation	rel = table_open(lfirst_oid(lr), ShareRowExclusiveLock);

		EnableDisableTrigger(rel, lfirst(ln), TRIGGER_DISABLED, false,
							 ShareRowExclusiveLock);
		table_close(rel, NoLock);
	}
	CommandCounterIncrement();
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
	if (IsAddSkuKey(stmt))
		DisableSkuKeyChecks();
	if (IsCreateInventory(stmt) || IsDropInventory(stmt))
		PoolProbeAtCommit();
}

void
UtilityInstallHook(void)
{
	prev_ProcessUtility = ProcessUtility_hook;
	ProcessUtility_hook = InvProcessUtility;
}
