/*
 * ask_fence.h
 *	  The extension's tables are closed to an ask of a reconciler: read,
 *	  written or locked.  See ask_fence.c.
 */
#ifndef INVENTORY_ASK_FENCE_H
#define INVENTORY_ASK_FENCE_H

#include "postgres.h"

#include "nodes/parsenodes.h"

extern void AskFenceInit(void);
extern void AskFenceCheckUtility(Node *stmt);
extern void AskFenceCheckFunction(Oid funcid);

#endif							/* INVENTORY_ASK_FENCE_H */
