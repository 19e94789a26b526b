/*
 * restore_state.h
 *	  The marker of a restore of the database that is not complete.  See
 *	  restore_state.c.
 */
#ifndef INVENTORY_RESTORE_STATE_H
#define INVENTORY_RESTORE_STATE_H

#include "postgres.h"

#include "datatype/timestamp.h"

extern bool RestoreStateRead(TimestampTz *started_at);
extern void RestoreStateBegin(bool ledger);
extern bool RestoreStateTableDone(bool ledger);
extern const char *RestoreStateMissing(TimestampTz *started_at);
extern bool RestoreStateClear(void);

#endif							/* INVENTORY_RESTORE_STATE_H */
