/*
 * launcher.h
 *	  Which databases the background workers serve, and the launcher that
 *	  keeps one worker running in each.
 */
#ifndef INVENTORY_LAUNCHER_H
#define INVENTORY_LAUNCHER_H

#include "postgres.h"

#include "datatype/timestamp.h"

extern Size WorkersShmemSize(void);
extern void WorkersShmemInit(void);
extern void LauncherInstallHooks(void);
extern void LauncherRegister(void);

/* for a database's worker */
extern void WorkerAttach(int slotno, Oid dboid);
extern bool WorkerStopRequested(void);
extern void WorkerReportWake(bool enabled);
extern void WorkerReportRound(int64 expired, int64 folded, TimestampTz oldest_overdue);
extern void WorkerReportAbsent(void);

#endif							/* INVENTORY_LAUNCHER_H */
