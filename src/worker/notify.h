/*
 * notify.h
 *	  What a worker sends to LISTEN inventory_stock.  See notify.c.
 */
#ifndef INVENTORY_WORKER_NOTIFY_H
#define INVENTORY_WORKER_NOTIFY_H

extern void WorkerNotify(bool all);

#endif							/* INVENTORY_WORKER_NOTIFY_H */
