/*
 * retain.h
 *	  How long the change feed keeps its rows.  See retain.c.
 */
#ifndef INVENTORY_RETAIN_H
#define INVENTORY_RETAIN_H

#include "postgres.h"

#include "datatype/timestamp.h"

extern void RetainInit(void);
extern int64 RetainPrune(TimestampTz now, int max_rows);

#endif							/* INVENTORY_RETAIN_H */
