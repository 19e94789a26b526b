/*
 * express.h
 *	  The express lane's queues in shared memory: one slot per backend, one
 *	  lane (a queue and its writer) per database.  See express.c.
 */
#ifndef INVENTORY_EXPRESS_H
#define INVENTORY_EXPRESS_H

#include "postgres.h"

#include "access/xlogdefs.h"
#include "datatype/timestamp.h"

#include "inventory.h"

/* settings */
extern int	inv_max_express_writers;
extern int	inv_express_idle_timeout;	/* ms */

/* What a caller asks the writer to write. */
typedef struct ExpressItem
{
	int64		qty;
	int32		batch_id;
	int64		max_per_buyer;	/* the SKU's limit at admission; 0: none */
	TimestampTz created_at;		/* the caller's statement time */
	TimestampTz expires_at;
	int			sku_len;
	int			order_len;
	int			buyer_len;		/* -1: no buyer */
	char		sku[INV_SKU_MAXLEN + 1];
	char		order_id[INV_ORDER_ID_MAXLEN + 1];
	char		buyer_id[INV_ORDER_ID_MAXLEN + 1];
} ExpressItem;

/* How the writer answered an item. */
typedef enum ExpressAnswer
{
	EXPRESS_WRITTEN,			/* committed at lsn; its hold went with it */
	EXPRESS_REFUSED,			/* status says why; the hold is the caller's */
	EXPRESS_KEY_BUSY,			/* wait for the key, then queue again */
	EXPRESS_BUYER_BUSY,			/* wait for the buyer's lock, then again */
	EXPRESS_TABLE_BUSY,			/* wait for the ledger's lock, then again */
	EXPRESS_FAILED,				/* an error, for this item alone */
	EXPRESS_NO_WRITER			/* none: reserve in the caller's transaction */
} ExpressAnswer;

#define EXPRESS_STATUS_LEN	32
#define EXPRESS_TEXT_LEN	256

typedef struct ExpressReply
{
	ExpressAnswer answer;
	XLogRecPtr	lsn;			/* EXPRESS_WRITTEN: the batch's commit */
	char		status[EXPRESS_STATUS_LEN];
	/* EXPRESS_FAILED: the error */
	int			sqlerrcode;
	char		message[EXPRESS_TEXT_LEN];
	char		detail[EXPRESS_TEXT_LEN];
	char		hint[EXPRESS_TEXT_LEN];
} ExpressReply;

/* What the caller must do after ExpressEnqueue(). */
typedef enum ExpressQueued
{
	EXPRESS_QUEUED,				/* sleep: ExpressSleep() */
	EXPRESS_START_WRITER,		/* start the lane's writer, then sleep */
	EXPRESS_NO_LANE				/* no lane free: reserve in own transaction */
} ExpressQueued;

/* One lane, as the statistics show it. */
typedef struct ExpressLaneInfo
{
	Oid			dboid;
	int			writer_pid;		/* 0: starting */
	int			queued;
	int64		batches;
	int64		rows;
	int64		max_batch;
	int64		sent_back;
	int64		failed;
	TimestampTz started_at;
} ExpressLaneInfo;

extern void ExpressInit(void);
extern Size ExpressShmemSize(void);
extern void ExpressShmemInit(void);

/* callers */
extern ExpressItem *ExpressMyItem(void);
extern ExpressQueued ExpressEnqueue(int *lane);
extern void ExpressWriterNotStarted(int lane);
extern void ExpressSleep(ExpressReply *reply);
extern void ExpressWaitDurable(XLogRecPtr lsn);
extern void ExpressFlushCommitted(void);
extern int64 ExpressFallbacks(void);
extern void ExpressCountFallback(void);

/* writers */
extern int	ExpressSlotCount(void);
extern bool ExpressWriterAttach(int lane, Oid dboid);
extern int	ExpressTakeQueue(int lane, int *items, int max_items);
extern bool ExpressWriterMayLeave(int lane);
extern void ExpressPublishCommit(XLogRecPtr lsn);
extern void ExpressWriterDetach(int lane, Oid dboid, bool attached);
extern void ExpressPause(Oid dboid);
extern void ExpressResume(Oid dboid);
extern const ExpressItem *ExpressItemOf(int slot);
extern void ExpressReplyTo(int lane, int slot, const ExpressReply *reply);
extern void ExpressAnswerBatch(int lane, const int *slots, const ExpressReply *replies,
							   int n, XLogRecPtr commit_lsn);

/* statistics */
extern int	ExpressLanes(ExpressLaneInfo *info, int max);

#endif							/* INVENTORY_EXPRESS_H */
