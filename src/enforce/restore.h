/*
 * restore.h
 *	  Recognising a restore of the extension's tables.
 */
#ifndef INVENTORY_RESTORE_H
#define INVENTORY_RESTORE_H

#include "postgres.h"

#include "nodes/parsenodes.h"

extern bool RestoreBegin(CopyStmt *stmt);
extern void RestoreFinish(int64 rows);
extern void RestoreReset(void);
extern bool RestoreEndIncomplete(bool check);
extern bool RestoreInProgress(Oid relid);

#endif							/* INVENTORY_RESTORE_H */
