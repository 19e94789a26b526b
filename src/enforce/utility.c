/*
 * utility.c
 *	  The statements the extension reacts to, in every backend.
 *
 * - COPY FROM into its tables may be a restore (restore.c), recognised
 *   before the COPY runs and checked when it has loaded every row.
 * - DROP DATABASE, ALTER DATABASE ... RENAME or SET TABLESPACE and
 *   CREATE DATABASE ... TEMPLATE need a database without connections: a
 *   worker and an express writer in it are sent away, and none is sent
 *   there until the statement is over -- once the statement has passed
 *   PostgreSQL's privilege checks, so that one refused disturbs nothing.
 * - CREATE EXTENSION inventory is refused when the workers serve as many
 *   databases as they can track; once it, or DROP EXTENSION inventory (or
 *   DROP SCHEMA inventory CASCADE), commits, a worker looks at the database
 *   again.
 * - ALTER TABLE of inventory.ledger or inventory.sku that adds the
 *   ledger's foreign key (pg_upgrade does), or enables or disables
 *   triggers: their triggers are set back as the extension made them.  Its
 *   own stay enabled, with a WARNING when the statement disabled them:
 *   pg_restore --disable-triggers disables them in a statement of its own,
 *   committed, and any session writing the tables meanwhile -- a worker,
 *   a buyer -- would bypass the cache; the COPY that follows is checked as
 *   a restore anyway.
 * - CREATE and ALTER PUBLICATION, ALTER TABLE of those tables and DROP
 *   INDEX are refused when they would make PostgreSQL refuse every UPDATE
 *   or DELETE of the tables (publication.c).
 * - In an ask of a reconciler, LOCK TABLE of the extension's tables and a
 *   call of its functions are refused (ask_fence.c): this file's hooks
 *   call its checks.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/table.h"
#include "catalog/indexing.h"
#include "catalog/objectaccess.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_database.h"
#include "catalog/namespace.h"
#include "catalog/pg_constraint.h"
#include "catalog/pg_trigger.h"
#include "commands/dbcommands.h"
#include "commands/defrem.h"
#include "commands/extension.h"
#include "commands/tablespace.h"
#include "miscadmin.h"
#include "commands/trigger.h"
#include "nodes/makefuncs.h"
#include "nodes/parsenodes.h"
#include "parser/parse_func.h"
#include "storage/ipc.h"
#include "tcop/utility.h"
#include "utils/acl.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "enforce/ask_fence.h"
#include "enforce/publication.h"
#include "enforce/restore.h"
#include "enforce/utility.h"
#include "shmem/express.h"
#include "shmem/metrics.h"
#include "shmem/pool.h"

static ProcessUtility_hook_type prev_ProcessUtility = NULL;
static object_access_hook_type prev_object_access_hook = NULL;

/* the database this backend's statement pauses, until it ends */
static Oid	paused_db = InvalidOid;
static bool exit_hook_registered = false;

/* A backend that exits in the middle of the statement (FATAL) resumes too. */
static void
ResumeAtExit(int code, Datum arg)
{
	if (OidIsValid(paused_db))
	{
		PoolResume(paused_db);
		ExpressResume(paused_db);
	}
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
	ExpressPause(dboid);
	paused_db = dboid;
}

static void
Resume(void)
{
	if (OidIsValid(paused_db))
	{
		PoolResume(paused_db);
		ExpressResume(paused_db);
	}
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

/* As dbcommands.c's have_createdb_privilege(), which is static. */
static bool
HasCreatedb(void)
{
	HeapTuple	tup;
	bool		result;

	if (superuser())
		return true;
	tup = SearchSysCache1(AUTHOID, ObjectIdGetDatum(GetUserId()));
	if (!HeapTupleIsValid(tup))
		return false;
	result = ((Form_pg_authid) GETSTRUCT(tup))->rolcreatedb;
	ReleaseSysCache(tup);
	return result;
}

/* Is the database a template (pg_database.datistemplate)? */
static bool
IsTemplate(Oid dboid)
{
	HeapTuple	tup = SearchSysCache1(DATABASEOID, ObjectIdGetDatum(dboid));
	bool		result;

	if (!HeapTupleIsValid(tup))
		return false;
	result = ((Form_pg_database) GETSTRUCT(tup))->datistemplate;
	ReleaseSysCache(tup);
	return result;
}

/*
 * The database that a statement needs without connections and will be
 * allowed to take: PostgreSQL's own checks of the statement (ownership,
 * CREATEDB, a template, a name that is free, a tablespace it may use) are
 * repeated here first, so that one that is refused disturbs no worker and
 * no writer.  DROP DATABASE is paused from the object access hook instead,
 * where dropdb() calls it after its ownership check (InvObjectAccess).
 */
static Oid
DatabaseToPause(Node *stmt)
{
	Oid			dboid = InvalidOid;

	switch (nodeTag(stmt))
	{
		case T_CreatedbStmt:
			{
				CreatedbStmt *c = (CreatedbStmt *) stmt;
				const char *name = OptionString(c->options, "template");

				if (name == NULL || !HasCreatedb() ||
					OidIsValid(get_database_oid(c->dbname, true)))
					break;
				dboid = get_database_oid(name, true);
				if (OidIsValid(dboid) && !IsTemplate(dboid) &&
					!pg_database_ownercheck(dboid, GetUserId()))
					dboid = InvalidOid;
				break;
			}
		case T_AlterDatabaseStmt:
			{
				AlterDatabaseStmt *a = (AlterDatabaseStmt *) stmt;
				const char *space = OptionString(a->options, "tablespace");
				Oid			spcoid;

				if (space == NULL)
					break;
				dboid = get_database_oid(a->dbname, true);
				spcoid = get_tablespace_oid(space, true);
				if (!OidIsValid(dboid) || dboid == MyDatabaseId ||
					!pg_database_ownercheck(dboid, GetUserId()) ||
					!OidIsValid(spcoid) ||
					pg_tablespace_aclcheck(spcoid, GetUserId(), ACL_CREATE) != ACLCHECK_OK)
					dboid = InvalidOid;
				break;
			}
		case T_RenameStmt:
			{
				RenameStmt *r = (RenameStmt *) stmt;

				if (r->renameType != OBJECT_DATABASE)
					break;
				dboid = get_database_oid(r->subname, true);
				if (!OidIsValid(dboid) || dboid == MyDatabaseId ||
					!pg_database_ownercheck(dboid, GetUserId()) || !HasCreatedb() ||
					OidIsValid(get_database_oid(r->newname, true)))
					dboid = InvalidOid;
				break;
			}
		default:
			break;
	}
	return dboid;
}

/*
 * The object access hook: dropdb() calls the drop hook of the database
 * after its ownership check and before it waits for the database's
 * connections to end, so the workers and the writer are sent away here,
 * and come back when the statement ends (InvProcessUtility); a template
 * or the current database is refused just after, so neither is paused.
 * The executor calls the hook as it prepares each function a statement
 * calls: an ask of a reconciler may not call the extension's.
 */
static void
InvObjectAccess(ObjectAccessType access, Oid classId, Oid objectId,
				int subId, void *arg)
{
	if (prev_object_access_hook)
		prev_object_access_hook(access, classId, objectId, subId, arg);
	if (access == OAT_FUNCTION_EXECUTE)
		AskFenceCheckFunction(objectId);
	else if (access == OAT_DROP && classId == DatabaseRelationId &&
			 !OidIsValid(paused_db) && objectId != MyDatabaseId &&
			 !IsTemplate(objectId))
		Pause(objectId);
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
 * The triggers of inventory.ledger and inventory.sku are the extension's
 * one enforcement point and fire ALWAYS, so that no session, a logical
 * replication apply included (session_replication_role = replica), writes
 * past them.  The ledger's foreign key to inventory.sku orders pg_dump's
 * output; the triggers enforce what it declares, and PostgreSQL's own
 * checks of it stay disabled: they would lock the SKU's row for every
 * reservation, making it the hot row the design avoids.
 *
 * The install script makes the triggers ALWAYS; the key's checks are
 * disabled here, after the statement that adds the key -- the update
 * script's, or pg_upgrade's, which runs no script.  ENABLE TRIGGER makes a
 * trigger fire on origin only and, with ALL, enables the key's checks:
 * after it, the states are set back here too.  A trigger someone disabled
 * stays disabled.
 */
#define SKU_KEY "ledger_sku_fkey"

/* inventory.ledger or inventory.sku, however the statement names it */
static bool
IsInventoryTable(RangeVar *rv)
{
	Oid			nsp = get_namespace_oid("inventory", true);
	Oid			relid;

	if (rv == NULL || !OidIsValid(nsp))
		return false;
	relid = RangeVarGetRelid(rv, NoLock, true);
	return OidIsValid(relid) &&
		(relid == get_relname_relid("ledger", nsp) ||
		 relid == get_relname_relid("sku", nsp));
}

/* ALTER TABLE of those tables that adds the key, enables or disables triggers */
static bool
ChangesTriggers(Node *stmt)
{
	AlterTableStmt *alter = (AlterTableStmt *) stmt;
	ListCell   *lc;

	if (!IsA(stmt, AlterTableStmt) || !IsInventoryTable(alter->relation))
		return false;
	foreach(lc, alter->cmds)
	{
		AlterTableCmd *cmd = lfirst_node(AlterTableCmd, lc);
		Constraint *con = (Constraint *) cmd->def;

		switch (cmd->subtype)
		{
			case AT_EnableTrig:
			case AT_EnableReplicaTrig:
			case AT_EnableTrigAll:
			case AT_EnableTrigUser:
			case AT_DisableTrig:
			case AT_DisableTrigAll:
			case AT_DisableTrigUser:
				return true;
			case AT_AddConstraint:
				if (con != NULL && IsA(con, Constraint) &&
					con->contype == CONSTR_FOREIGN && con->conname != NULL &&
					strcmp(con->conname, SKU_KEY) == 0)
					return true;
				break;
			default:
				break;
		}
	}
	return false;
}

/*
 * Sets the triggers of one table as the extension wants them: its own
 * (those of enforce) ALWAYS, the foreign key's checks disabled, another
 * trigger that is enabled ALWAYS.  Returns whether one of its own was
 * disabled.
 */
static bool
KeepTriggers(Oid relid, Oid key, Oid enforce)
{
	bool		ours_disabled = false;
	Relation	tgrel = table_open(TriggerRelationId, AccessShareLock);
	ScanKeyData skey;
	SysScanDesc scan;
	HeapTuple	tup;
	List	   *names = NIL;
	List	   *states = NIL;
	ListCell   *ln;
	ListCell   *ls;

	ScanKeyInit(&skey, Anum_pg_trigger_tgrelid, BTEqualStrategyNumber,
				F_OIDEQ, ObjectIdGetDatum(relid));
	scan = systable_beginscan(tgrel, TriggerRelidNameIndexId, true, NULL, 1, &skey);
	while (HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		Form_pg_trigger tg = (Form_pg_trigger) GETSTRUCT(tup);
		char		want = tg->tgenabled;

		if (OidIsValid(key) && tg->tgconstraint == key)
			want = TRIGGER_DISABLED;
		else if (!tg->tgisinternal && tg->tgfoid == enforce)
		{
			want = TRIGGER_FIRES_ALWAYS;
			if (tg->tgenabled == TRIGGER_DISABLED)
				ours_disabled = true;
		}
		else if (!tg->tgisinternal && tg->tgenabled != TRIGGER_DISABLED)
			want = TRIGGER_FIRES_ALWAYS;
		if (want != tg->tgenabled)
		{
			names = lappend(names, pstrdup(NameStr(tg->tgname)));
			states = lappend_int(states, want);
		}
	}
	systable_endscan(scan);
	table_close(tgrel, AccessShareLock);

	if (names == NIL)
		return false;
	{
		Relation	rel = table_open(relid, ShareRowExclusiveLock);

		forboth(ln, names, ls, states)
			EnableDisableTrigger(rel, lfirst(ln), (char) lfirst_int(ls), false,
								 ShareRowExclusiveLock);
		table_close(rel, NoLock);
	}
	return ours_disabled;
}

static void
KeepTriggerStates(void)
{
	Oid			nsp;
	Oid			ledger;
	Oid			sku;
	Oid			key;
	Oid			enforce;
	bool		kept;

	/* a schema inventory of this database's own, without the extension */
	if (!OidIsValid(get_extension_oid("inventory", true)))
		return;
	nsp = get_namespace_oid("inventory", false);
	ledger = get_relname_relid("ledger", nsp);
	sku = get_relname_relid("sku", nsp);
	/* the key is missing in a schema of version 0.1 */
	key = OidIsValid(ledger) ? get_relation_constraint_oid(ledger, SKU_KEY, true) : InvalidOid;
	enforce = LookupFuncName(list_make2(makeString("inventory"), makeString("enforce")),
							 0, NULL, true);

	kept = KeepTriggers(ledger, key, enforce);
	kept = KeepTriggers(sku, key, enforce) || kept;
	CommandCounterIncrement();
	if (kept)
		ereport(WARNING,
				(errcode(ERRCODE_WARNING),
				 errmsg("the triggers of inventory.ledger and inventory.sku stay enabled"),
				 errdetail("They check every write to the inventory tables and keep the shared-memory cache and the key filter in step with them; with them disabled, other sessions could write past them and oversell."),
				 errhint("A restore needs no disabled triggers: a COPY of a whole inventory table by its owner is checked as a restore.")));
}

/*
 * Statements after which a publication may make the tables unwritable:
 * publications, the tables' replica identity.  (DROP INDEX is checked
 * before it runs: DROP INDEX CONCURRENTLY cannot be undone at its end.)
 */
static bool
MayChangePublishing(Node *stmt)
{
	switch (nodeTag(stmt))
	{
		case T_CreatePublicationStmt:
		case T_AlterPublicationStmt:
			return true;
		case T_AlterTableStmt:
			return IsInventoryTable(((AlterTableStmt *) stmt)->relation);
		default:
			return false;
	}
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
	bool		triggers = ChangesTriggers(stmt);
	bool		publishing = MayChangePublishing(stmt);
	bool		unwritable = publishing && PublicationsBreakTables();

	AskFenceCheckUtility(stmt);
	if (IsCreateInventory(stmt))
		PoolCheckRoom();
	if (IsA(stmt, DropStmt) && ((DropStmt *) stmt)->removeType == OBJECT_INDEX)
		PublicationsCheckDropIndex(((DropStmt *) stmt)->objects);
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
	/* the database DROP DATABASE paused, from InvObjectAccess */
	if (IsA(stmt, DropdbStmt) && OidIsValid(paused_db))
		paused = paused_db;
	Resume();
	if (IsA(stmt, DropdbStmt) && OidIsValid(paused))
	{
		PoolForget(paused);
		MetricsForget(paused);
	}
	if (restore)
		RestoreFinish(qc ? (int64) qc->nprocessed : -1);
	if (triggers)
		KeepTriggerStates();
	if (publishing)
		PublicationsCheck(unwritable);
	if (IsCreateInventory(stmt) || IsDropInventory(stmt))
		PoolProbeAtCommit();
}

void
UtilityInit(void)
{
	prev_ProcessUtility = ProcessUtility_hook;
	ProcessUtility_hook = InvProcessUtility;
	prev_object_access_hook = object_access_hook;
	object_access_hook = InvObjectAccess;
	AskFenceInit();
}
