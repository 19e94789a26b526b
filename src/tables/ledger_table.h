/*
 * ledger_table.h
 *	  Reading and writing inventory.ledger.  See ledger_table.c.
 */
#ifndef INVENTORY_LEDGER_TABLE_H
#define INVENTORY_LEDGER_TABLE_H

#include "postgres.h"

#include "datatype/timestamp.h"
#include "nodes/execnodes.h"

#include "tables/counters.h"
#include "tables/ledger_row.h"
#include "tables/sku_row.h"

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
	bool		has_created_at; /* else: the statement's start */
	TimestampTz created_at;
	text	   *buyer_id;		/* NULL: none */
	bool		rules_checked;	/* the caller applied the SKU's rules */
} LedgerNew;

extern void LedgerLockKey(const char *order_id, int len, int32 batch_id);
extern bool LedgerKeyLockHeld(const char *order_id, int len, int32 batch_id);
extern bool LedgerLockHeld(void);
extern bool LedgerTryLockKey(const char *order_id, int len, int32 batch_id);
extern TransactionId LedgerKeyInsertInFlight(const char *order_id, int len,
											 int32 batch_id);
extern void LedgerWaitForKey(const char *order_id, int len, int32 batch_id);
extern bool LedgerTryLockForInsert(void);
extern void LedgerWaitForInsert(void);
extern bool LedgerFindMovement(const char *order_id, int len, int32 batch_id,
							   LedgerRow *movement);
extern void LedgerInsert(const LedgerNew *movement);

/* many new movements through one open ledger */
typedef struct LedgerWriter
{
	Relation	rel;			/* NULL: not open yet */
	EState	   *estate;
	ResultRelInfo *rri;
	TupleTableSlot *slot;
} LedgerWriter;

extern void LedgerWriterInit(LedgerWriter *w);
extern void LedgerWriterInsert(LedgerWriter *w, const LedgerNew *movement);
extern void LedgerWriterClose(LedgerWriter *w);
extern bool LedgerInsertRulesChecked(void);
extern bool LedgerReadTruth(const char *sku, InvEffect *truth, int64 *unfolded,
							InvRules *rules);
extern int64 LedgerBuyerHolding(text *sku, text *buyer_id);
extern int	LedgerOrderBatches(text *order_id, int32 **batch_ids);
extern int	LedgerOrderReservations(text *order_id, bool has_batch_id,
									int32 batch_id, LedgerRow **rows);

#endif							/* INVENTORY_LEDGER_TABLE_H */
