/*
 * reconciler.c
 *	  Finding a database's reconciler, and what may use it.
 *
 * inventory.set_reconciler(fn) makes the function
 * inventory.reconciler(order_id text, batch_id integer) RETURNS text, a
 * SQL-standard body that calls fn, owned by the role that set it.  That
 * function is the setting: pg_depend ties it to fn (DROP FUNCTION fn is
 * refused, DROP ... CASCADE drops the setting), pg_dump dumps it, and it
 * is found here by its name in the extension's schema.
 *
 * Two backend-local flags say what runs now: an application's reconciler
 * (the cache and the trigger refuse the inventory API and writes to the
 * inventory tables while it does), and the one UPDATE that may confirm a
 * reservation past its expires_at (the trigger allows it then only).
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/dependency.h"
#include "catalog/indexing.h"
#include "catalog/pg_depend.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/syscache.h"

#include "tables/catalog.h"
#include "tables/reconciler.h"
#include "tables/stmt.h"

bool		reconciler_running = false;
static bool late_confirm = false;

void
ReconcilerSetRunning(bool r)
{
	reconciler_running = r;
}

void
ReconcilerRefusal(void)
{
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("a reconciler cannot use the inventory functions or write the inventory tables"),
			 errdetail("The reconciler answers confirm, cancel, expire or wait; the expiry applies the answer."),
			 errhint("Read the application's own tables only.")));
}

bool
LateConfirmAllowed(void)
{
	return late_confirm;
}

/*
 * Runs a statement that may confirm reservations past their expires_at:
 * the expiry applying a reconciler's answer, or a late confirm() while a
 * reconciler is set.  The rows processed.
 */
uint64
RunLateConfirm(InvStmt *stmt, Datum *values)
{
	volatile uint64 n = 0;

	late_confirm = true;
	PG_TRY();
	{
		n = InvStmtRun(stmt, values, NULL, false, 0);
	}
	PG_FINALLY();
	{
		late_confirm = false;
	}
	PG_END_TRY();
	return n;
}

/* The one function that the reconciler's body depends on, or InvalidOid. */
static Oid
ReconcilerTarget(Oid fn)
{
	Relation	rel;
	ScanKeyData key[3];
	SysScanDesc scan;
	HeapTuple	tup;
	Oid			target = InvalidOid;
	int			n = 0;

	rel = table_open(DependRelationId, AccessShareLock);
	ScanKeyInit(&key[0], Anum_pg_depend_classid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(ProcedureRelationId));
	ScanKeyInit(&key[1], Anum_pg_depend_objid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(fn));
	ScanKeyInit(&key[2], Anum_pg_depend_objsubid, BTEqualStrategyNumber, F_INT4EQ,
				Int32GetDatum(0));
	scan = systable_beginscan(rel, DependDependerIndexId, true, NULL, 3, key);
	while (HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		Form_pg_depend d = (Form_pg_depend) GETSTRUCT(tup);

		if (d->refclassid == ProcedureRelationId && d->deptype == DEPENDENCY_NORMAL)
		{
			target = d->refobjid;
			n++;
		}
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return n == 1 ? target : InvalidOid;
}

/*
 * The reconciler of this database, if one is set: false when none is.  A
 * function of that name that is not as set_reconciler() makes it (one
 * call of another function) has no target, which the ask refuses.
 */
bool
ReconcilerFind(Reconciler *r)
{
	Oid			argtypes[2] = {TEXTOID, INT4OID};
	oidvector  *args = buildoidvector(argtypes, 2);
	HeapTuple	tup;

	r->fn = GetSysCacheOid3(PROCNAMEARGSNSP, Anum_pg_proc_oid,
							CStringGetDatum(RECONCILER_NAME),
							PointerGetDatum(args),
							ObjectIdGetDatum(InvGetCatalog()->schema));
	pfree(args);
	if (!OidIsValid(r->fn))
		return false;
	tup = SearchSysCache1(PROCOID, ObjectIdGetDatum(r->fn));
	if (!HeapTupleIsValid(tup))
		return false;			/* dropped meanwhile */
	r->owner = ((Form_pg_proc) GETSTRUCT(tup))->proowner;
	ReleaseSysCache(tup);
	r->target = ReconcilerTarget(r->fn);
	return true;
}

/* Does the function's own configuration set search_path? */
static bool
SetsSearchPath(HeapTuple tup)
{
	bool		isnull;
	Datum		d = SysCacheGetAttr(PROCOID, tup, Anum_pg_proc_proconfig, &isnull);
	ArrayType  *a;
	Datum	   *items;
	int			n;
	bool		found = false;

	if (isnull)
		return false;
	a = DatumGetArrayTypeP(d);
	deconstruct_array(a, TEXTOID, -1, false, TYPALIGN_INT, &items, NULL, &n);
	for (int i = 0; i < n && !found; i++)
	{
		char	   *s = TextDatumGetCString(items[i]);

		found = strncmp(s, "search_path=", strlen("search_path=")) == 0;
		pfree(s);
	}
	return found;
}

/*
 * May role use target as the reconciler?  Its shape: (text, integer)
 * RETURNS text, a plain function with its own SET search_path.  The role:
 * EXECUTE on it and the privileges of its owner; a superuser's function
 * for a superuser only.  Raises the reason when not.
 */
void
ReconcilerCheckTarget(Oid target, Oid role)
{
	HeapTuple	tup;
	Form_pg_proc p;
	char	   *name;
	Oid			owner;

	if (!OidIsValid(target))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("inventory.reconciler is not a reconciler made by inventory.set_reconciler()"),
				 errdetail("Its body must be one call of the application's function."),
				 errhint("Set it again with inventory.set_reconciler().")));
	tup = SearchSysCache1(PROCOID, ObjectIdGetDatum(target));
	if (!HeapTupleIsValid(tup))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_FUNCTION),
				 errmsg("function with OID %u does not exist", target)));
	p = (Form_pg_proc) GETSTRUCT(tup);
	name = format_procedure(target);
	owner = p->proowner;
	if (p->prokind != PROKIND_FUNCTION || p->proretset || p->prorettype != TEXTOID ||
		p->pronargs != 2 || p->proargtypes.values[0] != TEXTOID ||
		p->proargtypes.values[1] != INT4OID)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_FUNCTION_DEFINITION),
				 errmsg("%s cannot be a reconciler", name),
				 errdetail("A reconciler is a function (order_id text, batch_id integer) RETURNS text.")));
	if (!SetsSearchPath(tup))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_FUNCTION_DEFINITION),
				 errmsg("%s cannot be a reconciler: it does not set its own search_path", name),
				 errdetail("A reconciler runs in the expiry, where no search_path of the application's applies."),
				 errhint("ALTER FUNCTION %s SET search_path = ...", name)));
	ReleaseSysCache(tup);
	if (superuser_arg(owner) && !superuser_arg(role))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("only a superuser can make %s, owned by a superuser, the reconciler", name)));
	if (!has_privs_of_role(role, owner))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("role \"%s\" does not have the privileges of the owner of %s",
						GetUserNameFromId(role, false), name),
				 errdetail("A reconciler decides the fate of reservations as that owner's code.")));
	if (pg_proc_aclcheck(target, role, ACL_EXECUTE) != ACLCHECK_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("role \"%s\" may not execute %s",
						GetUserNameFromId(role, false), name)));
	pfree(name);
}
