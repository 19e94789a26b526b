/*
 * worker.h
 *	  A worker of the pool, visiting one database.  See worker.c.
 */
#ifndef INVENTORY_WORKER_H
#define INVENTORY_WORKER_H

extern void WorkerInit(void);

#endif							/* INVENTORY_WORKER_H */
