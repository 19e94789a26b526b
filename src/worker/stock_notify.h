/*
 * stock_notify.h
 *	  What a worker sends to LISTEN inventory_stock.  See stock_notify.c.
 */
#ifndef INVENTORY_STOCK_NOTIFY_H
#define INVENTORY_STOCK_NOTIFY_H

extern void StockNotify(bool all);

#endif							/* INVENTORY_STOCK_NOTIFY_H */
