/*
 * ledger_row.h
 *	  A ledger row: kinds of movement, what each movement contributes to
 *	  its SKU's counters, its decoded form, valid keys.  See ledger_row.c.
 */
#ifndef INVENTORY_LEDGER_ROW_H
#define INVENTORY_LEDGER_ROW_H

#include "postgres.h"

#include "access/htup.h"
#include "access/tupdesc.h"
#include "datatype/timestamp.h"

#include "tables/counters.h"
#include "types/state.h"

typedef enum InvKind
{
	INV_KIND_RESERVE = 1,		/* a reservation, with a state */
	INV_KIND_RESTOCK,			/* units added */
	INV_KIND_ADJUST,			/* a stocktake: qty is the change of on_hand */
	INV_KIND_WITHDRAW			/* available units taken out of on_hand */
} InvKind;

/* What settled a reservation: the ledger's settled_by, stamped by the trigger. */
typedef enum InvSettledBy
{
	INV_SETTLED_BY_STATEMENT = 1,	/* an UPDATE of the ledger by hand */
	INV_SETTLED_BY_CALL,		/* confirm(), cancel() and their order forms */
	INV_SETTLED_BY_EXPIRY,		/* the expiry: the worker, expire(), a late call */
	INV_SETTLED_BY_RECONCILER	/* the expiry applying a reconciler's answer */
} InvSettledBy;

/*
 * A ledger row, decoded: the one shape in which the code reads a movement,
 * from the trigger, a lookup by key or a load of the cache.  Text fields
 * point into the tuple decoded.
 */
typedef struct LedgerRow
{
	text	   *order_id;
	bool		has_batch_id;
	int32		batch_id;
	InvKind		kind;
	text	   *sku;
	bool		has_qty;
	int64		qty;
	bool		has_counted;
	int64		counted;
	bool		has_state;
	InvState	state;
	bool		has_created_at;
	TimestampTz created_at;
	bool		has_expires_at;
	TimestampTz expires_at;
	bool		has_settled_at;
	TimestampTz settled_at;
	bool		folded;
	text	   *buyer_id;		/* NULL: none */
	text	   *settled_by;		/* NULL: none (or before 0.3) */
} LedgerRow;

extern void LedgerRowInit(void);
extern TimestampTz LedgerDefaultExpiresAt(TimestampTz now);

extern InvKind LedgerParseKind(const char *str, int len);
extern const char *LedgerKindName(InvKind kind);
extern const char *LedgerSettledByName(InvSettledBy by);
extern bool LedgerSettledByValid(text *name);
extern void LedgerEffect(InvKind kind, bool has_state, InvState state,
						 int64 qty, InvEffect *effect);
extern void LedgerRowEffect(const LedgerRow *row, InvEffect *effect);
extern void LedgerDecode(HeapTuple tup, TupleDesc desc, LedgerRow *row);
extern bool LedgerRowIsSettled(const LedgerRow *row);
extern bool LedgerRowIsSku(const LedgerRow *row, text *sku);
extern int	LedgerCompareText(text *a, text *b);

extern void LedgerCheckSku(const char *sku, int len);
extern void LedgerCheckOrderId(const char *order_id, int len);
extern void LedgerCheckBuyerId(const char *buyer_id, int len);

#endif							/* INVENTORY_LEDGER_ROW_H */
