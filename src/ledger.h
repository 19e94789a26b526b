/*
 * ledger.h
 *	  The rules of the ledger's data: kinds of movement, what each movement
 *	  contributes to its SKU's counters, valid keys, and lookups by key.
 */
#ifndef INVENTORY_LEDGER_H
#define INVENTORY_LEDGER_H

#include "postgres.h"

#include "access/htup.h"
#include "access/tupdesc.h"
#include "datatype/timestamp.h"

#include "counters.h"
#include "inventory.h"
#include "rules.h"
#include "state.h"

typedef enum InvKind
{
	INV_KIND_RESERVE = 1,		/* a reservation, with a state */
	INV_KIND_RESTOCK,			/* units added */
	INV_KIND_ADJUST,			/* a stocktake: qty is the change of on_hand */
	INV_KIND_WITHDRAW			/* available units taken out of on_hand */
} InvKind;

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
} LedgerRow;

extern InvKind LedgerParseKind(const char *str, int len);
extern const char *LedgerKindName(InvKind kind);
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

/* A movement to write. */
typedef struct LedgerNew
{
	text	   *order_id;
	int32		batch_id;
	InvKind		kind;
	text	   *sku;
	int64		qty;
	bool		has_counted;
	int64		counted;
	bool		has_expires_at;
	TimestampTz expires_at;
	text	   *buyer_id;		/* NULL: none */
	bool		rules_checked;	/* the caller applied the SKU's rules */
} LedgerNew;

extern void LedgerLockKey(const char *order_id, int len, int32 batch_id);
extern bool LedgerFindMovement(const char *order_id, int len, int32 batch_id,
							   LedgerRow *movement);
extern void LedgerInsert(const LedgerNew *movement);
extern bool LedgerInsertRulesChecked(void);
extern bool LedgerReadTruth(const char *sku, InvEffect *truth, int64 *unfolded,
							InvRules *rules);
extern int64 LedgerBuyerHolding(text *sku, text *buyer_id);
extern int	LedgerOrderBatches(text *order_id, int32 **batch_ids);

#endif							/* INVENTORY_LEDGER_H */
