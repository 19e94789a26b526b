/*
 * express_batch.c
 *	  The express lane's writer writes one queued item of its batch: the
 *	  reservation a reserve_now() caller admitted, as reserve() writes it.
 *
 * The writer never sleeps on a client: it takes the key's lock and the
 * buyer's lock only if they are free now, and reads the key's index dirty
 * for an insert in flight, whose transaction it waits for only if it has
 * ended, rather than wait on the unique index; an item whose key or buyer
 * is busy goes back to its caller, who waits for it in its own backend
 * (reserve_now.c) and queues again.  Whatever else it waits for is bounded
 * by the writer's lock_timeout (express_writer.c).  The caller's hold is
 * adopted by the batch's transaction just before the row that binds it
 * (xact/pending.c), so that the hold has one owner at every moment.
 */
#include "postgres.h"

#include "storage/lmgr.h"
#include "utils/builtins.h"

#include "enforce/rules.h"
#include "fault.h"
#include "movement/express_batch.h"
#include "movement/movement.h"
#include "shmem/cache.h"
#include "shmem/keyfilter.h"
#include "tables/ledger_table.h"
#include "xact/pending.h"

static void
Reply(ExpressReply *reply, ExpressAnswer answer, const char *status)
{
	reply->answer = answer;
	strlcpy(reply->status, status, sizeof(reply->status));
}

/*
 * Writes the item in the writer's open transaction through writer, or
 * says why not, in *reply: EXPRESS_WRITTEN, EXPRESS_REFUSED ("key_taken":
 * its key is in the ledger, which the caller reads itself;
 * "limit_exceeded"), or that its key or buyer is busy.
 */
void
ExpressWriteItem(const ExpressItem *it, LedgerWriter *writer,
				 ExpressReply *reply)
{
	text	   *sku = cstring_to_text_with_len(it->sku, it->sku_len);
	text	   *order_id = cstring_to_text_with_len(it->order_id, it->order_len);
	text	   *buyer_id = it->buyer_len < 0 ? NULL :
		cstring_to_text_with_len(it->buyer_id, it->buyer_len);
	InvKey		key;
	LedgerRow	m;
	LedgerNew	n;
	TransactionId xid;

	memset(reply, 0, sizeof(ExpressReply));
	if (!LedgerTryLockKey(it->order_id, it->order_len, it->batch_id))
	{
		Reply(reply, EXPRESS_KEY_BUSY, "");
		return;
	}
	if (KeyFilterMaybe(it->order_id, it->order_len, it->batch_id))
	{
		if (MovementLookUpKey(order_id, it->batch_id, &m))
		{
			Reply(reply, EXPRESS_REFUSED, "key_taken");
			return;
		}
		xid = LedgerKeyInsertInFlight(it->order_id, it->order_len, it->batch_id);
		if (TransactionIdIsValid(xid))
		{
			/* over just now, or its caller waits for it in its own backend */
			if (!ConditionalXactLockTableWait(xid))
			{
				Reply(reply, EXPRESS_KEY_BUSY, "");
				return;
			}
			if (MovementLookUpKey(order_id, it->batch_id, &m))
			{
				Reply(reply, EXPRESS_REFUSED, "key_taken");
				return;
			}
		}
	}
	if (it->max_per_buyer > 0)
	{
		bool		busy;

		if (!RulesTryAdmitBuyer(sku, buyer_id, it->qty, it->max_per_buyer, &busy))
		{
			if (busy)
				Reply(reply, EXPRESS_BUYER_BUSY, "");
			else
				Reply(reply, EXPRESS_REFUSED, "limit_exceeded");
			return;
		}
	}

	/* the window between the read of the key's index and the insert */
	INV_FAULT_PARK("express-writer-before-insert");
	CacheMakeKey(&key, it->sku, it->sku_len);
	PendingAdopt(&key, it->qty);
	MovementNew(&n, order_id, it->batch_id, INV_KIND_RESERVE, sku, it->qty);
	n.has_expires_at = true;
	n.expires_at = it->expires_at;
	n.has_created_at = true;
	n.created_at = it->created_at;
	n.buyer_id = buyer_id;
	n.rules_checked = true;
	LedgerWriterInsert(writer, &n);
	Reply(reply, EXPRESS_WRITTEN, "ok");
}
