/*
 * metrics.h
 *	  Counters per database of what callers were told and what committed,
 *	  monotonic since the server started.  See the locking contract at the
 *	  top of metrics.c.
 */
#ifndef INVENTORY_METRICS_H
#define INVENTORY_METRICS_H

#include "postgres.h"

#include "tables/counters.h"

/* The calls whose answers are counted. */
typedef enum InvCall
{
	INV_CALL_RESERVE,
	INV_CALL_RESERVE_NOW,
	INV_CALL_RESERVE_MANY,
	INV_CALL_RESERVE_CART,
	INV_CALL_CONFIRM,
	INV_CALL_CANCEL,
	INV_CALL_EXTEND,
	INV_CALL_CONFIRM_ORDER,
	INV_CALL_CANCEL_ORDER,
	INV_CALL_RESTOCK,
	INV_CALL_ADJUST,
	INV_CALL_WITHDRAW,
	INV_NUM_CALLS
} InvCall;

/* Every status a call answers (docs/api.md, "Outcomes"). */
typedef enum InvStatus
{
	INV_STATUS_OK,
	INV_STATUS_DUPLICATE,
	INV_STATUS_UNKNOWN_SKU,
	INV_STATUS_NOT_ON_SALE,
	INV_STATUS_BUYER_REQUIRED,
	INV_STATUS_VERSION_CONFLICT,
	INV_STATUS_INSUFFICIENT,
	INV_STATUS_LIMIT_EXCEEDED,
	INV_STATUS_CART_REFUSED,
	INV_STATUS_NOT_FOUND,
	INV_STATUS_CONFIRMED,
	INV_STATUS_CANCELLED,
	INV_STATUS_EXPIRED,
	INV_NUM_STATUSES
} InvStatus;

typedef struct InvDbMetrics
{
	Oid			dboid;
	uint64		told[INV_NUM_CALLS][INV_NUM_STATUSES];
	uint64		committed[INV_NUM_MOVEMENTS];
} InvDbMetrics;

extern const char *const inv_call_names[INV_NUM_CALLS];
extern const char *const inv_status_names[INV_NUM_STATUSES];
extern const char *const inv_movement_names[INV_NUM_MOVEMENTS];

/* settings */
extern int	inv_hot_skus;

extern void MetricsInit(void);
extern Size MetricsShmemSize(void);
extern void MetricsShmemInit(void);

extern InvStatus MetricsStatus(const char *status);
extern void MetricsTold(InvCall call, InvStatus status, int64 n);
extern void MetricsCommitted(const InvCounters *counts);
extern bool MetricsCallAnswers(InvCall call, InvStatus status);
extern InvDbMetrics *MetricsRead(int *count);
extern void MetricsForget(Oid dboid);

#endif							/* INVENTORY_METRICS_H */
