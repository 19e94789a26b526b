/*
 * fault.h
 *	  Faults injected on purpose, in a build for the tests only.
 *
 * PostgreSQL 15 has no injection points.  A build with
 * -DINV_FAULT_INJECTION (make INVENTORY_FAULTS=1, as scripts/test.sh
 * builds) defines the superuser setting inventory.inject_fault; a place in
 * the code named by it raises an ERROR there, so that the tests can drive
 * an error path that nothing else reaches, or pauses there for
 * FAULT_PAUSE_MS, so that a test can act in a window that is otherwise
 * too short to hit.  In any other build the places compile to nothing.
 */
#ifndef INVENTORY_FAULT_H
#define INVENTORY_FAULT_H

#ifdef INV_FAULT_INJECTION
extern void FaultInit(void);
extern void FaultPoint(const char *name);
extern void FaultPause(const char *name);
#define INV_FAULT(name) FaultPoint(name)
#define INV_FAULT_PAUSE(name) FaultPause(name)
#define FAULT_PAUSE_MS 3000
#else
#define FaultInit() ((void) 0)
#define INV_FAULT(name) ((void) 0)
#define INV_FAULT_PAUSE(name) ((void) 0)
#endif

#endif							/* INVENTORY_FAULT_H */
