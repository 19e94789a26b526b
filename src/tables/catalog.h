/*
 * catalog.h
 *	  Where this database keeps the extension's relations.
 */
#ifndef INVENTORY_CATALOG_H
#define INVENTORY_CATALOG_H

#include "postgres.h"

#include "access/htup.h"
#include "access/tupdesc.h"

typedef struct InvCatalog
{
	Oid			schema;
	Oid			sku_rel;
	Oid			ledger_rel;
	Oid			ledger_key_index;	/* UNIQUE (order_id, batch_id) */
	Oid			ledger_sku_index;	/* (sku, folded) */
	Oid			sku_key_index;	/* inventory.sku's primary key */
	Oid			ledger_buyer_index; /* (buyer_id, sku); InvalidOid in 0.1 */
	Oid			result_type;	/* inventory.result */
	Oid			result_rel;		/* its pg_class entry */
	Oid			restore_state_rel;	/* InvalidOid before 0.3 */
	Oid			reconcile_wait_rel; /* InvalidOid before 0.3 */
	Oid			change_rel;		/* the change feed; InvalidOid before 0.3 */
	Oid			change_key_index;	/* its primary key (xid, seq) */

	/* column numbers of inventory.ledger */
	AttrNumber	l_order_id;
	AttrNumber	l_batch_id;
	AttrNumber	l_kind;
	AttrNumber	l_sku;
	AttrNumber	l_qty;
	AttrNumber	l_counted;
	AttrNumber	l_state;
	AttrNumber	l_created_at;
	AttrNumber	l_expires_at;
	AttrNumber	l_settled_at;
	AttrNumber	l_folded;
	AttrNumber	l_buyer_id;		/* InvalidAttrNumber in 0.1 */
	AttrNumber	l_settled_by;	/* InvalidAttrNumber before 0.3 */

	/* column numbers of inventory.sku */
	AttrNumber	s_sku;
	AttrNumber	s_on_hand;
	AttrNumber	s_version;
	/* the rules; InvalidAttrNumber in a 0.1 schema not updated yet */
	AttrNumber	s_max_per_buyer;
	AttrNumber	s_sale_starts;
	AttrNumber	s_sale_ends;

	uint64		epoch;			/* grows whenever the above may have changed */
} InvCatalog;

extern const InvCatalog *InvGetCatalog(void);
extern Oid	InvSchemaOwner(void);
extern text *CatalogNotNullText(HeapTuple tup, TupleDesc desc, AttrNumber att,
								const char *column);
extern text *CatalogNotNullDatum(Datum d, bool isnull, const char *column);

#endif							/* INVENTORY_CATALOG_H */
