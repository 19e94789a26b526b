/*
 * change_table.h
 *	  Writing inventory.change, the change feed's rows.  See change_table.c.
 */
#ifndef INVENTORY_CHANGE_TABLE_H
#define INVENTORY_CHANGE_TABLE_H

#include "postgres.h"

#include "access/transam.h"
#include "datatype/timestamp.h"

#include "types/state.h"

extern void ChangeInsert(FullTransactionId xid, int32 seq, text *order_id,
						 int32 batch_id, InvState state, TimestampTz at);

#endif							/* INVENTORY_CHANGE_TABLE_H */
