/*
 * express_batch.h
 *	  The express lane's items, written by its writer.  See express_batch.c.
 */
#ifndef INVENTORY_EXPRESS_BATCH_H
#define INVENTORY_EXPRESS_BATCH_H

#include "postgres.h"

#include "shmem/express.h"
#include "tables/ledger_table.h"

extern void ExpressWriteItem(const ExpressItem *item, LedgerWriter *writer,
							 ExpressReply *reply);

#endif							/* INVENTORY_EXPRESS_BATCH_H */
