/*
 * api.h
 *	  The pieces of the SQL API that the calls on whole orders (cart.c) and
 *	  on batches (batch.c) share with the calls on one movement (api.c).
 */
#ifndef INVENTORY_API_H
#define INVENTORY_API_H

#include "postgres.h"

#include "api/outcome.h"
#include "tables/ledger_row.h"
#include "tables/ledger_table.h"

extern bool FindKey(text *order_id, int32 batch_id, LedgerRow *m);
extern bool LookUpKey(text *order_id, int32 batch_id, LedgerRow *m);
extern void LockKey(text *order_id, int32 batch_id);
extern void NewMovement(LedgerNew *n, text *order_id, int32 batch_id,
						InvKind kind, text *sku, int64 qty);
extern void ReserveOne(text *sku, int64 qty, text *order_id, int32 batch_id,
					   TimestampTz expires_at, const int64 *expected_version,
					   text *buyer_id, LedgerWriter *writer, Outcome *o);
extern void ReserveAlone(text *sku, int64 qty, text *order_id, int32 batch_id,
						 TimestampTz expires_at, const int64 *expected_version,
						 text *buyer_id, Outcome *o);
extern void SettleReservation(ReservationOp op, text *order_id, int32 batch_id,
							  TimestampTz now, TimestampTz new_expires,
							  Outcome *o);

#endif							/* INVENTORY_API_H */
