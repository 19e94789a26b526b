/*
 * movement.h
 *	  One movement on the tables and the cache, for every call that makes
 *	  one (api/) and the express writer (express_batch.c).  See movement.c.
 */
#ifndef INVENTORY_MOVEMENT_H
#define INVENTORY_MOVEMENT_H

#include "postgres.h"

#include "movement/outcome.h"
#include "tables/ledger_row.h"
#include "tables/ledger_table.h"

extern bool MovementFindKey(text *order_id, int32 batch_id, LedgerRow *m);
extern bool MovementLookUpKey(text *order_id, int32 batch_id, LedgerRow *m);
extern void MovementLockKey(text *order_id, int32 batch_id);
extern void MovementNew(LedgerNew *n, text *order_id, int32 batch_id,
						InvKind kind, text *sku, int64 qty);
extern void MovementReserve(text *sku, int64 qty, text *order_id, int32 batch_id,
					   TimestampTz expires_at, const int64 *expected_version,
					   text *buyer_id, LedgerWriter *writer, Outcome *o);
extern void MovementReserveAlone(text *sku, int64 qty, text *order_id, int32 batch_id,
						 TimestampTz expires_at, const int64 *expected_version,
						 text *buyer_id, Outcome *o);
extern void MovementSettle(ReservationOp op, text *order_id, int32 batch_id,
							  TimestampTz now, TimestampTz new_expires,
							  Outcome *o);

#endif							/* INVENTORY_MOVEMENT_H */
