/*
 * keyfilter.c
 *	  Knows, in shared memory, which keys are certainly absent from the
 *	  ledger, so that a refused reserve answers without reading the key's
 *	  index, and an admitted one descends it once, to insert.
 *
 * A Bloom filter over the keys (order_id, batch_id) of every database's
 * ledger, blocked by 64-bit words: a key sets KEY_HASHES bits of one word.
 * It answers "certainly absent" or "maybe present"; a maybe is looked up
 * in the key's index as before.  Bits are only ever set, so the filter is
 * exact where it must be -- a key in the ledger is never said absent --
 * as long as every key's bits are set before its row can be seen:
 *	- every new ledger row, whoever writes it (a call, an INSERT, a
 *	  restore's COPY), passes the trigger, which sets the key's bits before
 *	  the row lands (KeyFilterAdd);
 *	- after a start -- a restart, a crash, the promotion of a standby,
 *	  whose replay passes no trigger -- the filter knows no database.  A
 *	  database's keys are added by a scan of its ledger (KeyFilterRebuild:
 *	  the worker's first visit, or inventory.key_filter_rebuild()), and only
 *	  then is the database ready.  A row committed before the scan's
 *	  snapshot is in the scan; any later one set its own bits.  Until its
 *	  database is ready, KeyFilterMaybe() says maybe.
 * Keys deleted from the ledger, rows of aborted transactions and the keys
 * of other databases leave bits behind: they cost a lookup, never a wrong
 * answer.  As the filter fills, more keys are said maybe (the view
 * inventory.key_filter shows how full it is); a restart empties it.
 *
 * A caller that skips the lookup of a key it is about to write asks while
 * it holds the key's lock (LedgerLockKey), so a call with the same key that
 * set the bits before it has committed or rolled back by then.  A refusal
 * asks without the lock: a call with the same key that has not set its
 * bits yet is answered as if it came later.
 *
 * Locking contract
 * ----------------
 * The bits are set with an atomic OR and read without a lock.  kf->mutex,
 * a spinlock, protects the list of ready databases; a backend remembers
 * that its database's ledger is ready and does not ask again.  The
 * statistics are atomics.
 */
#include "postgres.h"

#include <math.h>

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xlog.h"
#include "common/hashfn.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "port/pg_bitutils.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "inventory.h"
#include "shmem/keyfilter.h"
#include "shmem/pool.h"
#include "tables/catalog.h"

/* bits a key sets in its word */
#define KEY_HASHES		4

typedef struct ReadyDb
{
	Oid			dbid;			/* InvalidOid: free */
	Oid			ledger_rel;
} ReadyDb;

typedef struct KeyFilter
{
	slock_t		mutex;			/* protects ready[] */
	uint64		nwords;
	pg_atomic_uint64 keys_added;
	pg_atomic_uint64 said_absent;
	pg_atomic_uint64 said_maybe;
	pg_atomic_uint64 false_positives;
	int			nready;			/* size of ready[] */
	ReadyDb		ready[FLEXIBLE_ARRAY_MEMBER];
} KeyFilter;

static KeyFilter *kf = NULL;
static pg_atomic_uint64 *kf_words = NULL;

/* this backend knows that its database's ledger with this OID is ready */
static Oid	ready_here = InvalidOid;

int			inv_key_filter_size = 8192; /* kB */

void
KeyFilterInit(void)
{
	DefineCustomIntVariable("inventory.key_filter_size",
							"Shared memory for the filter that tells keys certainly absent from the ledgers.",
							"A refused reserve whose key the filter says absent reads no index; 0 turns the filter off.",
							&inv_key_filter_size,
							8192, 0, INT_MAX / 1024,
							PGC_POSTMASTER, GUC_UNIT_KB,
							NULL, NULL, NULL);
}

static Size
HeaderSize(void)
{
	return MAXALIGN(add_size(offsetof(KeyFilter, ready),
							 mul_size(inv_max_databases, sizeof(ReadyDb))));
}

static uint64
WordCount(void)
{
	return (uint64) inv_key_filter_size * 1024 / sizeof(pg_atomic_uint64);
}

Size
KeyFilterShmemSize(void)
{
	return add_size(HeaderSize(), mul_size(WordCount(), sizeof(pg_atomic_uint64)));
}

/* Called from the shmem startup hook, with AddinShmemInitLock held. */
void
KeyFilterShmemInit(void)
{
	bool		found;

	kf = ShmemInitStruct("inventory key filter", KeyFilterShmemSize(), &found);
	kf_words = (pg_atomic_uint64 *) ((char *) kf + HeaderSize());
	if (found)
		return;
	SpinLockInit(&kf->mutex);
	kf->nwords = WordCount();
	pg_atomic_init_u64(&kf->keys_added, 0);
	pg_atomic_init_u64(&kf->said_absent, 0);
	pg_atomic_init_u64(&kf->said_maybe, 0);
	pg_atomic_init_u64(&kf->false_positives, 0);
	kf->nready = inv_max_databases;
	memset(kf->ready, 0, inv_max_databases * sizeof(ReadyDb));
	for (uint64 i = 0; i < kf->nwords; i++)
		pg_atomic_init_u64(&kf_words[i], 0);
}

static inline bool
Enabled(void)
{
	return kf != NULL && kf->nwords > 0;
}

/* The key's word, and the bits it sets there. */
static inline pg_atomic_uint64 *
KeyWord(const char *order_id, int len, int32 batch_id, uint64 *mask)
{
	uint64		seed = ((uint64) MyDatabaseId << 32 | (uint32) batch_id) ^
		((uint64) InvGetCatalog()->ledger_rel * UINT64CONST(0x9E3779B97F4A7C15));
	uint64		h = hash_bytes_extended((const unsigned char *) order_id, len, seed);
	uint64		word = ((h >> 32) * kf->nwords) >> 32;

	*mask = 0;
	for (int i = 0; i < KEY_HASHES; i++)
		*mask |= UINT64CONST(1) << ((h >> (6 * i)) & 63);
	return &kf_words[word];
}

/* The trigger: a row with this key is about to land in the ledger. */
void
KeyFilterAdd(const char *order_id, int len, int32 batch_id)
{
	uint64		mask;
	pg_atomic_uint64 *word;

	if (!Enabled())
		return;
	word = KeyWord(order_id, len, batch_id, &mask);
	if ((pg_atomic_read_u64(word) & mask) != mask)
		pg_atomic_fetch_or_u64(word, mask);
	pg_atomic_fetch_add_u64(&kf->keys_added, 1);
}

/* Has this database been scanned since the start?  See the top. */
bool
KeyFilterReady(void)
{
	Oid			ledger_rel;
	bool		ready = false;

	if (!Enabled())
		return false;
	ledger_rel = InvGetCatalog()->ledger_rel;
	if (ready_here == ledger_rel)
		return true;
	SpinLockAcquire(&kf->mutex);
	for (int i = 0; i < kf->nready; i++)
	{
		if (kf->ready[i].dbid == MyDatabaseId)
		{
			ready = (kf->ready[i].ledger_rel == ledger_rel);
			break;
		}
	}
	SpinLockRelease(&kf->mutex);
	if (ready)
		ready_here = ledger_rel;
	return ready;
}

/*
 * May the key be in this database's ledger?  false means certainly not;
 * true, look it up.
 */
bool
KeyFilterMaybe(const char *order_id, int len, int32 batch_id)
{
	uint64		mask;
	pg_atomic_uint64 *word;

	if (!KeyFilterReady())
		return true;
	word = KeyWord(order_id, len, batch_id, &mask);
	if ((pg_atomic_read_u64(word) & mask) == mask)
	{
		pg_atomic_fetch_add_u64(&kf->said_maybe, 1);
		return true;
	}
	pg_atomic_fetch_add_u64(&kf->said_absent, 1);
	return false;
}

/* A key said maybe was not in the ledger after all. */
void
KeyFilterFalsePositive(void)
{
	if (KeyFilterReady())
		pg_atomic_fetch_add_u64(&kf->false_positives, 1);
}

static void
MarkReady(Oid ledger_rel)
{
	int			slot = -1;

	SpinLockAcquire(&kf->mutex);
	for (int i = 0; i < kf->nready; i++)
	{
		if (kf->ready[i].dbid == MyDatabaseId)
		{
			slot = i;
			break;
		}
		if (slot < 0 && !OidIsValid(kf->ready[i].dbid))
			slot = i;
	}
	/* no room: the database keeps looking its keys up, as before */
	if (slot >= 0)
	{
		kf->ready[slot].dbid = MyDatabaseId;
		kf->ready[slot].ledger_rel = ledger_rel;
	}
	SpinLockRelease(&kf->mutex);
}

/*
 * Adds every key of this database's ledger, then marks the database ready.
 * Runs in a transaction; takes no lock but the ledger's AccessShareLock, so
 * buyers never wait for it.  Returns the number of keys read, or -1 when
 * the filter is off or the server is in recovery (replay sets no bits, so
 * a scan then would be incomplete at promotion).
 */
int64
KeyFilterRebuild(void)
{
	const InvCatalog *cat = InvGetCatalog();
	Relation	rel;
	TableScanDesc scan;
	Snapshot	snapshot;
	HeapTuple	tup;
	int64		n = 0;

	if (!Enabled() || RecoveryInProgress())
		return -1;

	snapshot = RegisterSnapshot(GetLatestSnapshot());
	rel = table_open(cat->ledger_rel, AccessShareLock);
	scan = table_beginscan(rel, snapshot, 0, NULL);
	while ((tup = heap_getnext(scan, ForwardScanDirection)) != NULL)
	{
		text	   *order_id = CatalogNotNullText(tup, RelationGetDescr(rel),
												  cat->l_order_id, "order_id");
		bool		isnull;
		Datum		batch_id = heap_getattr(tup, cat->l_batch_id,
											RelationGetDescr(rel), &isnull);

		CHECK_FOR_INTERRUPTS();
		if (!isnull)
			KeyFilterAdd(VARDATA_ANY(order_id), VARSIZE_ANY_EXHDR(order_id),
						 DatumGetInt32(batch_id));
		n++;
	}
	table_endscan(scan);
	table_close(rel, NoLock);
	UnregisterSnapshot(snapshot);

	MarkReady(cat->ledger_rel);
	ready_here = cat->ledger_rel;
	return n;
}

void
KeyFilterGetInfo(KeyFilterInfo *info)
{
	uint64		set = 0;

	memset(info, 0, sizeof(KeyFilterInfo));
	info->hashes = KEY_HASHES;
	if (!Enabled())
		return;
	info->bytes = kf->nwords * sizeof(pg_atomic_uint64);
	for (uint64 i = 0; i < kf->nwords; i++)
		set += pg_popcount64(pg_atomic_read_u64(&kf_words[i]));
	info->fill = (double) set / (kf->nwords * 64);
	info->false_positive_rate = pow(info->fill, KEY_HASHES);
	info->keys_added = pg_atomic_read_u64(&kf->keys_added);
	info->said_absent = pg_atomic_read_u64(&kf->said_absent);
	info->said_maybe = pg_atomic_read_u64(&kf->said_maybe);
	info->false_positives = pg_atomic_read_u64(&kf->false_positives);
	info->ready = KeyFilterReady();
}
