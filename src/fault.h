/*
 * fault.h
 *	  Faults injected on purpose, in a build for the tests only.
 *
 * PostgreSQL 15 has no injection points.  A build with
 * -DINV_FAULT_INJECTION (make INVENTORY_FAULTS=1, as scripts/test.sh
 * builds) defines the superuser setting inventory.inject_fault; a place in
 * the code named by it
 *	- raises an ERROR there (INV_FAULT), so that a test can drive an error
 *	  path that nothing else reaches;
 *	- pauses there for FAULT_PAUSE_MS (INV_FAULT_PAUSE);
 *	- or parks there until a test releases it, FAULT_PARK_MAX_MS at most
 *	  (INV_FAULT_PARK): the C functions inventory_fault_parked() (how
 *	  many processes are parked) and inventory_fault_release() (let them
 *	  go), which a test declares as functions of its own, so that a
 *	  window that is otherwise too short to hit stays open for as long as
 *	  the test needs.
 * In any other build the places compile to nothing.
 */
#ifndef INVENTORY_FAULT_H
#define INVENTORY_FAULT_H

#ifdef INV_FAULT_INJECTION
extern void FaultInit(void);
extern Size FaultShmemSize(void);
extern void FaultShmemInit(void);
extern void FaultPoint(const char *name);
extern void FaultPause(const char *name);
extern void FaultPark(const char *name);
#define INV_FAULT(name) FaultPoint(name)
#define INV_FAULT_PAUSE(name) FaultPause(name)
#define INV_FAULT_PARK(name) FaultPark(name)
#define FAULT_PAUSE_MS 3000
#define FAULT_PARK_MAX_MS 120000
#else
#define FaultInit() ((void) 0)
#define FaultShmemSize() ((Size) 0)
#define FaultShmemInit() ((void) 0)
#define INV_FAULT(name) ((void) 0)
#define INV_FAULT_PAUSE(name) ((void) 0)
#define INV_FAULT_PARK(name) ((void) 0)
#endif

#endif							/* INVENTORY_FAULT_H */
