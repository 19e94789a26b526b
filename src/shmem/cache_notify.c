/*
 * cache_notify.c
 *	  "Sold out" and "back on sale" as events: NOTIFY inventory_stock.
 *
 * NOTIFY takes a cluster-wide lock at commit, and fails the commit when the
 * notification queue is full, so the transaction that sells the last unit
 * must not notify.  Instead its commit notes in the SKU's cache entry that
 * the committed available (on_hand - reserved) reached zero or came back
 * above it (EscrowEndTxn, when inventory.stock_notifications is on for the
 * database), and makes its database's notes, and work, due at once
 * (pool.c).  A worker in that database -- between any two of its
 * transactions -- then takes the notes, each SKU's latest committed
 * available and version, read when it sends, so a listener always gets
 * the latest state, and sends them in a transaction of its own.  A SKU
 * is sent at most once per inventory.stock_notify_interval: a crossing
 * sooner after the last one waits for the interval to pass, and crossings
 * meanwhile make one notification.  An entry with a note to send is not
 * evicted.
 *
 * The setting is the database's (ALTER DATABASE) or the server's
 * (postgresql.conf, ALTER SYSTEM), never a session's: each commit notes by
 * its own session's value, so one session, role or client with another
 * value than its database's would leave the listeners with a stale state
 * (setting.c).
 *
 * Under the locking contract at the top of cache.c: the notes are fields
 * of the entry, under its spinlock.  A crossing bumps notify_seq; a note is
 * due while it differs from notified_seq, the crossing last sent, so one
 * noted while a worker sent the previous one stays due.
 */
#include "postgres.h"

#include "access/xact.h"
#include "commands/dbcommands.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/timestamp.h"

#include "setting.h"
#include "shmem/cache_internal.h"
#include "shmem/cache_notify.h"
#include "shmem/pool.h"
#include "tables/catalog.h"

bool		inv_stock_notifications = false;
int			inv_stock_notify_interval = 100;

/* the database's setting, never a session's: see the top of this file */
static bool
CheckStockNotifications(bool *newval, void **extra, GucSource source)
{
	return SettingOfDatabase("inventory.stock_notifications", *newval, source,
							 "A session, role or client with another setting than its database's would leave the listeners of inventory_stock with a stale state.");
}

void
CacheNotifyInit(void)
{
	DefineCustomBoolVariable("inventory.stock_notifications",
							 "Whether a SKU's committed available reaching zero, or coming back above it, is sent to LISTEN inventory_stock.",
							 "Set it for a database with ALTER DATABASE ... SET, or for every database in postgresql.conf; "
							 "a session, role or client cannot set it.  A worker sends the notifications.",
							 &inv_stock_notifications,
							 false,
							 PGC_SUSET, 0,
							 CheckStockNotifications, NULL, NULL);

	DefineCustomIntVariable("inventory.stock_notify_interval",
							"Notifications of one SKU to LISTEN inventory_stock are this far apart, at least.",
							"Crossings of zero meanwhile make one notification, with the latest state.",
							&inv_stock_notify_interval,
							100, 1, 3600 * 1000,
							PGC_SIGHUP, GUC_UNIT_MS,
							NULL, NULL, NULL);
}

/*
 * This database's notes due by now, in a palloc'd array; *next is when
 * the first of the others falls due (POOL_NOTHING_DUE: none).
 */
int
CacheTakeNotes(InvStockNote **notes, TimestampTz now, TimestampTz *next)
{
	Oid			relid = InvGetCatalog()->ledger_rel;
	HASH_SEQ_STATUS status;
	InvEntry   *entry;
	int			size = 16;
	int			n = 0;

	*next = POOL_NOTHING_DUE;
	*notes = palloc(size * sizeof(InvStockNote));
	if (inv_cache == NULL)
		return 0;
	LWLockAcquire(inv_cache->lock, LW_SHARED);
	hash_seq_init(&status, inv_cache_hash);
	while ((entry = hash_seq_search(&status)) != NULL)
	{
		InvStockNote note;
		TimestampTz notified_at;
		bool		pending;
		bool		loading;

		if (entry->key.dbid != MyDatabaseId || entry->key.relid != relid)
			continue;
		SpinLockAcquire(&entry->mutex);
		pending = EntryNotifyDue(entry);
		loading = entry->loading;
		notified_at = entry->notified_at;
		note.available = entry->on_hand - entry->reserved;
		note.version = entry->version;
		note.rules = entry->rules;
		note.seq = entry->notify_seq;
		SpinLockRelease(&entry->mutex);
		if (!pending)
			continue;
		if (loading)
		{
			/* its state is not known yet: look again in an interval */
			*next = Min(*next, TimestampTzPlusMilliseconds(now, inv_stock_notify_interval));
			continue;
		}
		if (notified_at != 0)
		{
			TimestampTz due = TimestampTzPlusMilliseconds(notified_at,
														  inv_stock_notify_interval);

			if (due > now)
			{
				*next = Min(*next, due);
				continue;
			}
		}
		note.key = entry->key;
		if (n == size)
		{
			size *= 2;
			*notes = repalloc(*notes, size * sizeof(InvStockNote));
		}
		(*notes)[n++] = note;
	}
	LWLockRelease(inv_cache->lock);
	return n;
}

/* The notes were sent, at now: each is done unless it crossed again. */
void
CacheNotesSent(const InvStockNote *notes, int n, TimestampTz now)
{
	if (inv_cache == NULL || n == 0)
		return;
	LWLockAcquire(inv_cache->lock, LW_SHARED);
	for (int i = 0; i < n; i++)
	{
		InvEntry   *entry = hash_search(inv_cache_hash, &notes[i].key, HASH_FIND, NULL);

		if (entry == NULL)
			continue;
		SpinLockAcquire(&entry->mutex);
		entry->notified_seq = notes[i].seq;
		entry->notified_at = now;
		SpinLockRelease(&entry->mutex);
	}
	LWLockRelease(inv_cache->lock);
}
