/*
 * feed.c
 *	  The change feed: each new reservation and each settlement, appended to
 *	  inventory.change by the ledger's trigger, for an application to follow
 *	  with inventory.changes() (api/changes.c).
 *
 * With the database's inventory.change_feed on, the trigger appends one
 * row per reservation made and per reservation settled (confirm, cancel,
 * expiry, a reconciler's answer, an UPDATE by hand), in the transaction
 * that writes the ledger, so the row commits or rolls back with it.  Folds
 * write nothing (they change no state), nor do restores (history, not
 * decisions) or other movements (restocks, stocktakes, withdrawals: the
 * router's bucket transfers among them).  The ledger itself is not
 * touched: a settle stays a HOT update.
 *
 * A row holds what the ledger cannot tell later -- the key, the state as
 * written, and when -- and changes() reads the rest from the ledger's row:
 * each byte of it is WAL that every sale writes.  Its key is the
 * top-level transaction's id (xid8) and its place in that transaction: inventory.changes() returns a row only once every
 * transaction with a smaller id has ended, so that a consumer resuming
 * after a row misses nothing and sees nothing twice, whatever order the
 * transactions committed in.
 *
 * The setting is the database's, never a session's: a session with it off
 * would leave holes in the feed (setting.c).  A restore of the ledger
 * starts the feed afresh: its rows are emptied and the feed's id, which
 * every cursor carries, changes, so that a cursor of before is refused
 * rather than read against other history.
 */
#include "postgres.h"

#include "access/transam.h"
#include "access/xact.h"
#include "utils/guc.h"

#include "enforce/feed.h"
#include "setting.h"
#include "shmem/pool.h"
#include "tables/catalog.h"
#include "tables/change_table.h"
#include "tables/stmt.h"
#include "types/state.h"

bool		inv_change_feed = false;

/* the place of the next row in its transaction */
static FullTransactionId seq_xid;
static int32 seq = 0;

static bool
CheckChangeFeed(bool *newval, void **extra, GucSource source)
{
	return SettingOfDatabase("inventory.change_feed", *newval, source,
							 "A session, role or client with another setting than its database's would leave holes in the feed that inventory.changes() reads.");
}

void
FeedInit(void)
{
	DefineCustomBoolVariable("inventory.change_feed",
							 "Whether each new reservation and each settlement is appended to inventory.change, for inventory.changes().",
							 "Set it for a database with ALTER DATABASE ... SET, or for every database in postgresql.conf; "
							 "a session, role or client cannot set it.",
							 &inv_change_feed,
							 false,
							 PGC_SUSET, 0,
							 CheckChangeFeed, NULL, NULL);
}

/* Appends the reservation, as written (made, or settled), to the feed. */
void
FeedAppend(const LedgerRow *row)
{
	FullTransactionId top;

	if (!OidIsValid(InvGetCatalog()->change_rel))
		return;					/* a schema before 0.3 */
	top = GetTopFullTransactionId();
	if (!FullTransactionIdEquals(top, seq_xid))
	{
		seq_xid = top;
		seq = 0;
	}
	ChangeInsert(top, ++seq, row->order_id, row->batch_id, row->state,
				 row->has_settled_at ? row->settled_at : row->created_at);
	/* LISTEN inventory_changes hears of it from a worker, once committed */
	PoolNoteBell();
}

static const char *const feed_restored[] = {
	"DELETE FROM inventory.change",
	"UPDATE inventory.feed SET feed_id = pg_catalog.left(pg_catalog.md5(pg_catalog.random()::text"
	" OPERATOR(pg_catalog.||) pg_catalog.clock_timestamp()::text), 16),"
	" pruned_xid = '0', pruned_seq = 0",
};

/* A restore of the ledger: the feed starts afresh, under a new id. */
void
FeedRestored(void)
{
	if (!OidIsValid(InvGetCatalog()->change_rel))
		return;
	InvSqlRunAsOwner(feed_restored, lengthof(feed_restored));
}
