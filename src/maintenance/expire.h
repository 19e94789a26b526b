/*
 * expire.h
 *	  Expiring overdue reservations, which the workers do and
 *	  inventory.expire() does on demand.  See expire.c.
 */
#ifndef INVENTORY_EXPIRE_H
#define INVENTORY_EXPIRE_H

#include "postgres.h"

#include "datatype/timestamp.h"

extern int64 ExpireOverdue(int64 max_rows, TimestampTz *from);
extern TimestampTz ExpireNextDue(void);

#endif							/* INVENTORY_EXPIRE_H */
