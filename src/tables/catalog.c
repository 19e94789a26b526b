/*
 * catalog.c
 *	  Finds the extension's schema, tables, index and type in the current
 *	  database, and remembers them until a relcache invalidation says they
 *	  may have changed (DROP EXTENSION followed by CREATE EXTENSION gives
 *	  them new OIDs); reads a column of their rows.  Callers that keep derived state, such as prepared
 *	  plans, compare the epoch to know when to rebuild it.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "tables/catalog.h"

static InvCatalog catalog;
static bool catalog_valid = false;
static bool callback_registered = false;

static void
InvalidateCatalog(Datum arg, Oid relid)
{
	if (!catalog_valid)
		return;
	if (relid == InvalidOid ||
		relid == catalog.sku_rel ||
		relid == catalog.ledger_rel ||
		relid == catalog.ledger_key_index ||
		relid == catalog.ledger_sku_index ||
		relid == catalog.sku_key_index ||
		relid == catalog.ledger_buyer_index ||
		relid == catalog.result_rel)
	{
		catalog_valid = false;
		catalog.epoch++;
	}
}

static Oid
RequiredRelation(const char *name)
{
	Oid			relid = get_relname_relid(name, catalog.schema);

	if (!OidIsValid(relid))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation \"inventory.%s\" does not exist", name),
				 errhint("Bring the extension's objects in line with the installed library with ALTER EXTENSION inventory UPDATE; dropping the extension would drop its data.")));
	return relid;
}

static AttrNumber
RequiredColumn(Oid relid, const char *name)
{
	AttrNumber	attnum = get_attnum(relid, name);

	if (attnum == InvalidAttrNumber)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("column \"%s\" of relation \"inventory.%s\" does not exist",
						name, get_rel_name(relid)),
				 errhint("Bring the extension's objects in line with the installed library with ALTER EXTENSION inventory UPDATE; dropping the extension would drop its data.")));
	return attnum;
}

const InvCatalog *
InvGetCatalog(void)
{
	if (catalog_valid)
		return &catalog;

	if (!callback_registered)
	{
		CacheRegisterRelcacheCallback(InvalidateCatalog, (Datum) 0);
		callback_registered = true;
	}

	if (!OidIsValid(get_extension_oid("inventory", true)))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("extension \"inventory\" is not installed in this database"),
				 errhint("Run CREATE EXTENSION inventory.")));

	catalog.schema = get_namespace_oid("inventory", false);
	catalog.sku_rel = RequiredRelation("sku");
	catalog.ledger_rel = RequiredRelation("ledger");
	catalog.ledger_key_index = RequiredRelation("ledger_pkey");
	catalog.ledger_sku_index = RequiredRelation("ledger_sku_idx");
	catalog.sku_key_index = RequiredRelation("sku_pkey");
	catalog.ledger_buyer_index = get_relname_relid("ledger_buyer_idx", catalog.schema);
	catalog.restore_state_rel = get_relname_relid("restore_state", catalog.schema);
	catalog.reconcile_wait_rel = get_relname_relid("reconcile_wait", catalog.schema);
	catalog.change_rel = get_relname_relid("change", catalog.schema);
	catalog.change_key_index = get_relname_relid("change_pkey", catalog.schema);
	catalog.result_type = GetSysCacheOid2(TYPENAMENSP, Anum_pg_type_oid,
										  CStringGetDatum("result"),
										  ObjectIdGetDatum(catalog.schema));
	if (!OidIsValid(catalog.result_type))
		elog(ERROR, "type inventory.result does not exist");
	catalog.result_rel = get_typ_typrelid(catalog.result_type);

	catalog.l_order_id = RequiredColumn(catalog.ledger_rel, "order_id");
	catalog.l_batch_id = RequiredColumn(catalog.ledger_rel, "batch_id");
	catalog.l_kind = RequiredColumn(catalog.ledger_rel, "kind");
	catalog.l_sku = RequiredColumn(catalog.ledger_rel, "sku");
	catalog.l_qty = RequiredColumn(catalog.ledger_rel, "qty");
	catalog.l_counted = RequiredColumn(catalog.ledger_rel, "counted");
	catalog.l_state = RequiredColumn(catalog.ledger_rel, "state");
	catalog.l_created_at = RequiredColumn(catalog.ledger_rel, "created_at");
	catalog.l_expires_at = RequiredColumn(catalog.ledger_rel, "expires_at");
	catalog.l_settled_at = RequiredColumn(catalog.ledger_rel, "settled_at");
	catalog.l_folded = RequiredColumn(catalog.ledger_rel, "folded");
	catalog.s_sku = RequiredColumn(catalog.sku_rel, "sku");
	catalog.s_on_hand = RequiredColumn(catalog.sku_rel, "on_hand");
	catalog.s_version = RequiredColumn(catalog.sku_rel, "version");

	/* added in 0.2: a 0.1 schema works without them until it is updated */
	catalog.l_buyer_id = get_attnum(catalog.ledger_rel, "buyer_id");
	catalog.s_max_per_buyer = get_attnum(catalog.sku_rel, "max_per_buyer");
	catalog.s_sale_starts = get_attnum(catalog.sku_rel, "sale_starts");
	catalog.s_sale_ends = get_attnum(catalog.sku_rel, "sale_ends");
	/* added in 0.3 */
	catalog.l_settled_by = get_attnum(catalog.ledger_rel, "settled_by");

	catalog_valid = true;
	return &catalog;
}

/* A text column of one of the extension's rows that must not be NULL. */
text *
CatalogNotNullText(HeapTuple tup, TupleDesc desc, AttrNumber att,
				   const char *column)
{
	bool		isnull;
	Datum		d = heap_getattr(tup, att, desc, &isnull);

	return CatalogNotNullDatum(d, isnull, column);
}

/* The same, from a row already deformed. */
text *
CatalogNotNullDatum(Datum d, bool isnull, const char *column)
{
	if (isnull)
		ereport(ERROR,
				(errcode(ERRCODE_NOT_NULL_VIOLATION),
				 errmsg("%s must not be null", column)));
	return DatumGetTextPP(d);
}

/* The owner of the extension's schema: the role its own DDL and writes run as. */
Oid
InvSchemaOwner(void)
{
	HeapTuple	tup = SearchSysCache1(NAMESPACEOID, ObjectIdGetDatum(InvGetCatalog()->schema));
	Oid			owner;

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for schema %u", InvGetCatalog()->schema);
	owner = ((Form_pg_namespace) GETSTRUCT(tup))->nspowner;
	ReleaseSysCache(tup);
	return owner;
}
