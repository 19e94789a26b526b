/*
 * maintenance.h
 *	  The background work on a database's ledger, which the workers do and
 *	  inventory.expire() and inventory.fold() do on demand.
 */
#ifndef INVENTORY_MAINTENANCE_H
#define INVENTORY_MAINTENANCE_H

#include "postgres.h"

#include "datatype/timestamp.h"

extern int64 ExpireOverdue(int64 max_rows, TimestampTz *from);
extern TimestampTz ExpiryNextDue(void);
extern int64 FoldSettled(char **skus, int nskus, int64 max_rows, bool wait);
extern bool FoldInProgress(void);

#endif							/* INVENTORY_MAINTENANCE_H */
