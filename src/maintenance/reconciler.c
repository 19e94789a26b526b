/*
 * reconciler.c
 *	  Finding a database's reconciler, its timing, and the rules a function
 *	  must follow to be asked.
 *
 * inventory.set_reconciler(fn, ...) makes the function
 * inventory.reconciler(order_id, batch_id, timeout, retry, max_asks,
 * max_wait) RETURNS text, a SQL-standard body that calls fn, owned by the
 * role that set it, whose parameter defaults are the timing it was given.
 * That function is the setting: pg_depend ties it to fn (DROP FUNCTION fn
 * is refused, DROP ... CASCADE drops the setting), pg_dump dumps it with
 * its timing, and it is found here by its name in the extension's schema.
 *
 * An ask runs fn as fn's owner, the role whose code runs
 * (maintenance/reconcile.c).  So that no one gains a right through it,
 * fn must be (ReconcilerCheckTrust, when it is set and before every ask,
 * since a restore, an ALTER ... OWNER or a GRANT may change any of it):
 *	- a function (order_id text, batch_id integer) RETURNS text, not in a
 *	  temporary schema;
 *	- owned by a role that is not a superuser: its code would run with
 *	  every right, written by whoever can replace it;
 *	- with its own SET search_path, pg_catalog first and pg_temp last, no
 *	  $user, and only schemas that exist, owned by fn's owner or a
 *	  superuser, where no other role may create objects and no object is
 *	  another role's: an operator or a function planted in a schema on the
 *	  path would run as fn's owner.
 * Whoever sets it must have the privileges of fn's owner and may execute
 * fn (ReconcilerCheckSetter): otherwise an administrator could point the
 * expiry at any role's function and feed it order ids of their choosing.
 *
 * The timing settings are the server's defaults and caps: a superuser sets
 * them, an administrator gives a reconciler less.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/dependency.h"
#include "catalog/indexing.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_conversion.h"
#include "catalog/pg_depend.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "storage/proc.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/catcache.h"
#include "utils/rel.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"
#include "utils/varlena.h"

#include "maintenance/reconciler.h"
#include "tables/catalog.h"

/* the server's defaults and caps */
static int	inv_reconcile_timeout = 1000;	/* ms */
static int	inv_reconcile_retry = 60;	/* s */
static int	inv_reconcile_max_asks = 10;
static int	inv_reconcile_max_wait = 3600;	/* s */

void
ReconcilerInit(void)
{
	DefineCustomIntVariable("inventory.reconcile_timeout",
							"How long one ask of a reconciler may take, at most.",
							"The default and the cap of set_reconciler()'s timeout.  An ask that takes longer is cancelled and counts as failed; one still running a second later is ended by force.",
							&inv_reconcile_timeout,
							1000, 1, INT_MAX,
							PGC_SUSET, GUC_UNIT_MS,
							NULL, NULL, NULL);
	DefineCustomIntVariable("inventory.reconcile_retry",
							"How long an order the reconciler answered wait for waits before it is asked again.",
							"The default of set_reconciler()'s retry.",
							&inv_reconcile_retry,
							60, 1, INT_MAX / 1000,
							PGC_SUSET, GUC_UNIT_S,
							NULL, NULL, NULL);
	DefineCustomIntVariable("inventory.reconcile_max_asks",
							"Asks about an overdue order before it is expired without asking, at most.",
							"The default and the cap of set_reconciler()'s max_asks.",
							&inv_reconcile_max_asks,
							10, 1, 1000000,
							PGC_SUSET, 0,
							NULL, NULL, NULL);
	DefineCustomIntVariable("inventory.reconcile_max_wait",
							"How long past its expires_at an order may wait for its reconciler before it is expired without asking, at most.",
							"The default and the cap of set_reconciler()'s max_wait.",
							&inv_reconcile_max_wait,
							3600, 1, INT_MAX / 1000,
							PGC_SUSET, GUC_UNIT_S,
							NULL, NULL, NULL);
}

/* ---- the timing ---- */

int
ReconcilerTimeout(const Reconciler *r)
{
	return (r->timeout_ms > 0 && r->timeout_ms < inv_reconcile_timeout) ?
		(int) r->timeout_ms : inv_reconcile_timeout;
}

int64
ReconcilerRetry(const Reconciler *r)
{
	return r->retry_ms > 0 ? r->retry_ms : (int64) inv_reconcile_retry * 1000;
}

int64
ReconcilerMaxAsks(const Reconciler *r)
{
	return (r->max_asks > 0 && r->max_asks < inv_reconcile_max_asks) ?
		r->max_asks : inv_reconcile_max_asks;
}

int64
ReconcilerMaxWait(const Reconciler *r)
{
	int64		cap = (int64) inv_reconcile_max_wait * 1000;

	return (r->max_wait_ms > 0 && r->max_wait_ms < cap) ? r->max_wait_ms : cap;
}

/*
 * Refuses a timing that set_reconciler() was given beyond the server's
 * caps, so that what is set is what applies.
 */
void
ReconcilerCheckTiming(const Reconciler *r)
{
	if (r->timeout_ms > inv_reconcile_timeout)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("timeout is longer than inventory.reconcile_timeout (%d ms)",
						inv_reconcile_timeout),
				 errhint("A superuser sets the server's cap, inventory.reconcile_timeout.")));
	if (r->max_asks > inv_reconcile_max_asks)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("max_asks is more than inventory.reconcile_max_asks (%d)",
						inv_reconcile_max_asks),
				 errhint("A superuser sets the server's cap, inventory.reconcile_max_asks.")));
	if (r->max_wait_ms > (int64) inv_reconcile_max_wait * 1000)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("max_wait is longer than inventory.reconcile_max_wait (%d s)",
						inv_reconcile_max_wait),
				 errhint("A superuser sets the server's cap, inventory.reconcile_max_wait.")));
}

/* ---- finding it ---- */

/* The one function that the setting's body depends on, or InvalidOid. */
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

/* A default of the setting, in ms of an interval or as an integer; 0: none. */
static int64
DefaultValue(Node *expr)
{
	Const	   *c;

	expr = eval_const_expressions(NULL, expr);
	if (!IsA(expr, Const) || ((Const *) expr)->constisnull)
		return 0;
	c = (Const *) expr;
	if (c->consttype == INT4OID)
		return DatumGetInt32(c->constvalue);
	if (c->consttype == INTERVALOID)
	{
		Interval   *i = DatumGetIntervalP(c->constvalue);

		return (i->time + (i->day + (int64) i->month * DAYS_PER_MONTH) * USECS_PER_DAY) / 1000;
	}
	return 0;
}

/* Reads the timing from the setting's parameter defaults. */
static void
ReadTiming(HeapTuple tup, Reconciler *r)
{
	Form_pg_proc p = (Form_pg_proc) GETSTRUCT(tup);
	bool		isnull;
	Datum		d;
	List	   *defaults;

	r->timeout_ms = r->retry_ms = r->max_asks = r->max_wait_ms = 0;
	if (p->pronargs != 6 || p->pronargdefaults != 4)
		return;
	d = SysCacheGetAttr(PROCOID, tup, Anum_pg_proc_proargdefaults, &isnull);
	if (isnull)
		return;
	defaults = castNode(List, stringToNode(TextDatumGetCString(d)));
	if (list_length(defaults) != 4)
		return;
	r->timeout_ms = DefaultValue(list_nth(defaults, 0));
	r->retry_ms = DefaultValue(list_nth(defaults, 1));
	r->max_asks = DefaultValue(list_nth(defaults, 2));
	r->max_wait_ms = DefaultValue(list_nth(defaults, 3));
}

/*
 * The reconciler of this database, if one is set: false when none is.  A
 * function of that name that is not as set_reconciler() makes it (one
 * call of another function) has no target, which the ask refuses.
 */
bool
ReconcilerFind(Reconciler *r)
{
	Oid			schema = InvGetCatalog()->schema;
	CatCList   *list;
	bool		found = false;

	memset(r, 0, sizeof(Reconciler));
	list = SearchSysCacheList1(PROCNAMEARGSNSP, CStringGetDatum(RECONCILER_NAME));
	for (int i = 0; i < list->n_members && !found; i++)
	{
		HeapTuple	tup = &list->members[i]->tuple;
		Form_pg_proc p = (Form_pg_proc) GETSTRUCT(tup);

		if (p->pronamespace != schema)
			continue;
		r->fn = p->oid;
		r->setter = p->proowner;
		ReadTiming(tup, r);
		found = true;
	}
	ReleaseSysCacheList(list);
	if (found)
		r->target = ReconcilerTarget(r->fn);
	return found;
}

/* ---- the rules ---- */

/* The value of search_path that the function sets itself, or NULL. */
static char *
OwnSearchPath(HeapTuple tup)
{
	bool		isnull;
	Datum		d = SysCacheGetAttr(PROCOID, tup, Anum_pg_proc_proconfig, &isnull);
	Datum	   *items;
	int			n;
	char	   *path = NULL;

	if (isnull)
		return NULL;
	deconstruct_array(DatumGetArrayTypeP(d), TEXTOID, -1, false, TYPALIGN_INT,
					  &items, NULL, &n);
	for (int i = 0; i < n; i++)
	{
		char	   *s = TextDatumGetCString(items[i]);

		if (strncmp(s, "search_path=", strlen("search_path=")) == 0)
			path = s + strlen("search_path=");
	}
	return path;
}

/* The role, other than owner, that may create objects in the schema, if any. */
static const char *
OtherCreator(HeapTuple nsptup, Oid owner)
{
	bool		isnull;
	Datum		d = SysCacheGetAttr(NAMESPACEOID, nsptup, Anum_pg_namespace_nspacl, &isnull);
	Acl		   *acl;
	AclItem    *items;

	/* no ACL: the owner's default privileges alone */
	if (isnull)
		return NULL;
	acl = DatumGetAclP(d);
	/* ACL_DAT() without its test for nulls, which an ACL never has */
	items = (AclItem *) ((char *) acl + ARR_OVERHEAD_NONULLS(ARR_NDIM(acl)));
	for (int i = 0; i < ACL_NUM(acl); i++)
	{
		if (items[i].ai_grantee == owner ||
			!(ACLITEM_GET_PRIVS(items[i]) & ACL_CREATE))
			continue;
		return items[i].ai_grantee == ACL_ID_PUBLIC ? "PUBLIC" :
			GetUserNameFromId(items[i].ai_grantee, false);
	}
	return NULL;
}

/* a catalog of objects that a schema holds, and how to name one */
typedef struct SchemaObjects
{
	Oid			catalog;
	AttrNumber	nsp_attr;
	AttrNumber	owner_attr;
	const char *kind;
} SchemaObjects;

/*
 * The objects a search_path finds by name, as the function's owner runs
 * it: functions, operators, relations, types, conversions, collations.
 */
static const SchemaObjects schema_objects[] = {
	{ProcedureRelationId, Anum_pg_proc_pronamespace, Anum_pg_proc_proowner, "function"},
	{OperatorRelationId, Anum_pg_operator_oprnamespace, Anum_pg_operator_oprowner, "operator"},
	{RelationRelationId, Anum_pg_class_relnamespace, Anum_pg_class_relowner, "relation"},
	{TypeRelationId, Anum_pg_type_typnamespace, Anum_pg_type_typowner, "type"},
	{ConversionRelationId, Anum_pg_conversion_connamespace, Anum_pg_conversion_conowner, "conversion"},
	{CollationRelationId, Anum_pg_collation_collnamespace, Anum_pg_collation_collowner, "collation"},
};

/* schemas whose objects this transaction found safe, for an owner */
#define CHECKED_SCHEMAS 8
static LocalTransactionId checked_lxid = InvalidLocalTransactionId;
static struct
{
	Oid			nsp;
	Oid			owner;
}			checked[CHECKED_SCHEMAS];
static int	nchecked = 0;

/*
 * The owner, other than fn_owner and the superusers, of an object of the
 * schema, and in *what what it is; InvalidOid when there is none.  An
 * object another role made while it could create there -- a function that
 * matches a call better than the owner's -- would run as fn_owner, and its
 * maker could replace it at any time.  A scan of each catalog, so done
 * once a transaction for a schema (the worker asks about many orders in
 * one).
 */
static Oid
OtherObjectOwner(Oid nsp, Oid fn_owner, char **what)
{
	if (checked_lxid != MyProc->lxid)
	{
		checked_lxid = MyProc->lxid;
		nchecked = 0;
	}
	for (int i = 0; i < nchecked; i++)
		if (checked[i].nsp == nsp && checked[i].owner == fn_owner)
			return InvalidOid;

	for (int c = 0; c < (int) lengthof(schema_objects); c++)
	{
		const SchemaObjects *so = &schema_objects[c];
		Relation	rel = table_open(so->catalog, AccessShareLock);
		ScanKeyData key;
		SysScanDesc scan;
		HeapTuple	tup;
		Oid			other = InvalidOid;

		ScanKeyInit(&key, so->nsp_attr, BTEqualStrategyNumber, F_OIDEQ,
					ObjectIdGetDatum(nsp));
		scan = systable_beginscan(rel, InvalidOid, false, NULL, 1, &key);
		while (HeapTupleIsValid(tup = systable_getnext(scan)))
		{
			bool		isnull;
			Oid			owner = DatumGetObjectId(heap_getattr(tup, so->owner_attr,
															  RelationGetDescr(rel), &isnull));

			if (owner == fn_owner || superuser_arg(owner))
				continue;
			other = owner;
			*what = so->catalog == ProcedureRelationId ?
				psprintf("function %s", format_procedure(((Form_pg_proc) GETSTRUCT(tup))->oid)) :
				so->catalog == OperatorRelationId ?
				psprintf("operator %s", format_operator(((Form_pg_operator) GETSTRUCT(tup))->oid)) :
				so->catalog == RelationRelationId ?
				psprintf("relation %s", NameStr(((Form_pg_class) GETSTRUCT(tup))->relname)) :
				so->catalog == TypeRelationId ?
				psprintf("type %s", format_type_be(((Form_pg_type) GETSTRUCT(tup))->oid)) :
				psprintf("a %s", so->kind);
			break;
		}
		systable_endscan(scan);
		table_close(rel, AccessShareLock);
		if (OidIsValid(other))
			return other;
	}
	if (nchecked < CHECKED_SCHEMAS)
	{
		checked[nchecked].nsp = nsp;
		checked[nchecked].owner = fn_owner;
		nchecked++;
	}
	return InvalidOid;
}

/* Raises why a schema on the function's search_path is not safe. */
static void
CheckSchema(const char *fn, const char *schema, Oid fn_owner)
{
	Oid			nsp = get_namespace_oid(schema, true);
	HeapTuple	tup;
	Oid			nsp_owner;
	const char *creator;

	if (!OidIsValid(nsp))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_FUNCTION_DEFINITION),
				 errmsg("%s cannot be a reconciler: schema \"%s\" of its search_path does not exist",
						fn, schema),
				 errdetail("A schema created later under that name, by anyone allowed to, would be searched as the function's owner.")));
	tup = SearchSysCache1(NAMESPACEOID, ObjectIdGetDatum(nsp));
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for namespace %u", nsp);
	nsp_owner = ((Form_pg_namespace) GETSTRUCT(tup))->nspowner;
	if (nsp_owner != fn_owner && !superuser_arg(nsp_owner))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_FUNCTION_DEFINITION),
				 errmsg("%s cannot be a reconciler: schema \"%s\" of its search_path is owned by role \"%s\"",
						fn, schema, GetUserNameFromId(nsp_owner, false)),
				 errdetail("Every schema on a reconciler's search_path is owned by the function's owner or by a superuser."),
				 errhint("Take the schema off the function's search_path and qualify the names it holds, or change its owner.")));
	creator = OtherCreator(tup, nsp_owner);
	ReleaseSysCache(tup);
	if (creator != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_FUNCTION_DEFINITION),
				 errmsg("%s cannot be a reconciler: %s may create objects in schema \"%s\" of its search_path",
						fn, creator, schema),
				 errdetail("An operator or a function created there would run as the reconciler's owner."),
				 errhint("REVOKE CREATE ON SCHEMA %s FROM %s, or take the schema off the function's search_path.",
						 quote_identifier(schema), creator)));
	/* pg_catalog: only superusers create there, as the ACL just said */
	if (nsp != PG_CATALOG_NAMESPACE)
	{
		char	   *what = NULL;
		Oid			other = OtherObjectOwner(nsp, fn_owner, &what);

		if (OidIsValid(other))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_FUNCTION_DEFINITION),
					 errmsg("%s cannot be a reconciler: %s in schema \"%s\" of its search_path is owned by role \"%s\"",
							fn, what, schema, GetUserNameFromId(other, false)),
					 errdetail("An object of another role's on the search_path may stand in for the owner's, and that role can change it at any time."),
					 errhint("Drop it or give it to the function's owner, or take the schema off the function's search_path.")));
	}
}

/* Raises why the function's own search_path is not safe. */
static void
CheckSearchPath(const char *fn, const char *path, Oid fn_owner)
{
	char	   *raw = pstrdup(path);
	List	   *names;
	ListCell   *lc;
	const char *hint = "ALTER FUNCTION ... SET search_path = pg_catalog, <the owner's schemas>, pg_temp";

	if (!SplitIdentifierString(raw, ',', &names) || names == NIL ||
		strcmp((char *) linitial(names), "pg_catalog") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_FUNCTION_DEFINITION),
				 errmsg("%s cannot be a reconciler: its search_path does not name pg_catalog first", fn),
				 errdetail("Otherwise an operator or a function of another schema could stand in for a built-in one."),
				 errhint("%s", hint)));
	foreach(lc, names)
	{
		const char *schema = (const char *) lfirst(lc);

		if (strcmp(schema, "$user") == 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_FUNCTION_DEFINITION),
					 errmsg("%s cannot be a reconciler: its search_path names $user", fn),
					 errdetail("$user names a different schema for every role that runs it."),
					 errhint("%s", hint)));
		if (strcmp(schema, "pg_temp") == 0 || strncmp(schema, "pg_temp_", 8) == 0)
		{
			if (lnext(names, lc) != NULL)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_FUNCTION_DEFINITION),
						 errmsg("%s cannot be a reconciler: its search_path names pg_temp before another schema", fn),
						 errdetail("A temporary table or view of the session would stand in for the owner's."),
						 errhint("%s", hint)));
			continue;
		}
		CheckSchema(fn, schema, fn_owner);
	}
	if (strcmp((char *) llast(names), "pg_temp") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_FUNCTION_DEFINITION),
				 errmsg("%s cannot be a reconciler: its search_path does not name pg_temp last", fn),
				 errdetail("A schema path without pg_temp searches the session's temporary schema first, for tables and types."),
				 errhint("%s", hint)));
	list_free(names);
	pfree(raw);
}

/*
 * May the function be asked, as its owner?  Raises the rule it breaks
 * (see the top of this file); returns its owner.  When it is set and
 * before every ask.
 */
Oid
ReconcilerCheckTrust(Oid target)
{
	HeapTuple	tup;
	Form_pg_proc p;
	char	   *name;
	char	   *path;
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
	if (isAnyTempNamespace(p->pronamespace))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_FUNCTION_DEFINITION),
				 errmsg("%s cannot be a reconciler: it is a temporary function", name),
				 errdetail("It would vanish with the session that created it.")));
	if (superuser_arg(owner))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("%s cannot be a reconciler: it is owned by superuser \"%s\"",
						name, GetUserNameFromId(owner, false)),
				 errdetail("A reconciler runs as its owner; whoever can replace a superuser's function would run code with every right."),
				 errhint("Give the function to a role with the privileges it needs: ALTER FUNCTION %s OWNER TO ...", name)));
	path = OwnSearchPath(tup);
	ReleaseSysCache(tup);
	if (path == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_FUNCTION_DEFINITION),
				 errmsg("%s cannot be a reconciler: it does not set its own search_path", name),
				 errdetail("A reconciler runs in the expiry, where no search_path of the application's applies."),
				 errhint("ALTER FUNCTION %s SET search_path = pg_catalog, <the owner's schemas>, pg_temp", name)));
	CheckSearchPath(name, path, owner);
	if (pg_proc_aclcheck(target, owner, ACL_EXECUTE) != ACLCHECK_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("%s cannot be a reconciler: its owner \"%s\" may not execute it",
						name, GetUserNameFromId(owner, false))));
	pfree(name);
	return owner;
}

/*
 * May setter make target the reconciler?  The rules of the function, and
 * the privileges of its owner and EXECUTE on it.  Raises the reason when
 * not.
 */
void
ReconcilerCheckSetter(Oid target, Oid setter)
{
	char	   *name;
	Oid			owner;

	owner = ReconcilerCheckTrust(target);
	name = format_procedure(target);
	if (!has_privs_of_role(setter, owner))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("role \"%s\" does not have the privileges of the owner of %s",
						GetUserNameFromId(setter, false), name),
				 errdetail("A reconciler decides the fate of reservations as that owner's code.")));
	if (pg_proc_aclcheck(target, setter, ACL_EXECUTE) != ACLCHECK_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("role \"%s\" may not execute %s",
						GetUserNameFromId(setter, false), name)));
	pfree(name);
}
