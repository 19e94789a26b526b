/*
 * metrics.c
 *	  Counters per database of what callers were told -- each call's
 *	  answers by status -- and of the movements that committed, for
 *	  monitoring tools.  They are monotonic since the server started, as
 *	  pg_stat_database's are, so that Prometheus never takes a total going
 *	  down for a reset.
 *
 * Counting must cost the reserve path nothing that scales with cores, so
 * no counter is shared by the backends that write it: every backend has a
 * slot of its own (indexed by its pgprocno), which only it writes, and a
 * database's total is the sum of the slots in it plus what the backends
 * that have left folded into the database's entry.  A reader sums them.
 *
 * Locking contract
 * ----------------
 * metrics->lock, an LWLock, protects the database entries, each slot's
 * dboid, and the moves of counts from a slot to an entry.  A backend
 * increments the counters of its own slot without it: the counters are
 * atomics written only by their owner (a plain load and store, no locked
 * instruction), so a reader sees each one whole.  A backend takes the lock
 * exclusive to claim its slot for its database at its first count, and at
 * exit to fold its slot into its database's entry and zero it.  A reader
 * takes it shared to sum entries and slots: no fold can run meanwhile, so
 * no count is seen twice or missed, and since a slot's counters only grow
 * while it is claimed, a total read later is never smaller.  A crash
 * restart clears shared memory and every counter with it, which Prometheus
 * takes for the reset it is.
 */
#include "postgres.h"

#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "utils/guc.h"

#include "inventory.h"
#include "shmem/metrics.h"
#include "shmem/pool.h"

typedef struct MetricsCounters
{
	pg_atomic_uint64 told[INV_NUM_CALLS][INV_NUM_STATUSES];
	pg_atomic_uint64 committed[INV_NUM_MOVEMENTS];
} MetricsCounters;

typedef struct MetricsSlotData
{
	Oid			dboid;			/* InvalidOid: not claimed */
	MetricsCounters c;
} MetricsSlotData;

/* a slot is one backend's: padded so that no two share a cache line */
typedef union MetricsSlot
{
	MetricsSlotData s;
	char		pad[TYPEALIGN(PG_CACHE_LINE_SIZE, sizeof(MetricsSlotData))];
} MetricsSlot;

typedef struct MetricsShared
{
	LWLock	   *lock;
} MetricsShared;

const char *const inv_call_names[INV_NUM_CALLS] = {
	"reserve", "reserve_now", "reserve_many", "reserve_cart", "confirm",
	"cancel", "extend", "confirm_order", "cancel_order", "restock", "adjust",
	"withdraw"
};

const char *const inv_status_names[INV_NUM_STATUSES] = {
	"ok", "duplicate", "unknown_sku", "not_on_sale", "buyer_required",
	"version_conflict", "insufficient", "limit_exceeded", "cart_refused",
	"not_found", "confirmed", "cancelled", "expired"
};

const char *const inv_movement_names[INV_NUM_MOVEMENTS] = {
	"reserve", "confirm", "cancel", "expire", "extend", "restock",
	"stocktake", "withdraw"
};

#define S(x) (1 << INV_STATUS_##x)
#define RESERVE_ANSWERS (S(OK) | S(DUPLICATE) | S(UNKNOWN_SKU) | S(NOT_ON_SALE) | \
						 S(BUYER_REQUIRED) | S(INSUFFICIENT) | S(LIMIT_EXCEEDED))
#define CONFIRM_ANSWERS (S(OK) | S(DUPLICATE) | S(NOT_FOUND) | S(CANCELLED) | S(EXPIRED))
#define CANCEL_ANSWERS (S(OK) | S(DUPLICATE) | S(NOT_FOUND) | S(CONFIRMED) | S(EXPIRED))

/* what each call can answer (docs/api.md, "Outcomes") */
static const uint32 call_answers[INV_NUM_CALLS] = {
	[INV_CALL_RESERVE] = RESERVE_ANSWERS | S(VERSION_CONFLICT),
	[INV_CALL_RESERVE_NOW] = RESERVE_ANSWERS,
	[INV_CALL_RESERVE_MANY] = RESERVE_ANSWERS | S(VERSION_CONFLICT),
	[INV_CALL_RESERVE_CART] = RESERVE_ANSWERS | S(CART_REFUSED),
	[INV_CALL_CONFIRM] = CONFIRM_ANSWERS,
	[INV_CALL_CANCEL] = CANCEL_ANSWERS,
	[INV_CALL_EXTEND] = S(OK) | S(NOT_FOUND) | S(CONFIRMED) | S(CANCELLED) | S(EXPIRED),
	[INV_CALL_CONFIRM_ORDER] = CONFIRM_ANSWERS,
	[INV_CALL_CANCEL_ORDER] = CANCEL_ANSWERS,
	[INV_CALL_RESTOCK] = S(OK) | S(DUPLICATE),
	[INV_CALL_ADJUST] = S(OK) | S(DUPLICATE) | S(UNKNOWN_SKU) | S(VERSION_CONFLICT) | S(INSUFFICIENT),
	[INV_CALL_WITHDRAW] = S(OK) | S(DUPLICATE) | S(UNKNOWN_SKU) | S(INSUFFICIENT),
};

#undef S

/* settings */
int			inv_hot_skus = 10;

static MetricsShared *metrics = NULL;
static InvDbMetrics *dbs = NULL;	/* dboid InvalidOid: free */
static MetricsSlot *slots = NULL;	/* indexed by pgprocno */
static MetricsSlot *my_slot = NULL;

void
MetricsInit(void)
{
	DefineCustomIntVariable("inventory.hot_skus",
							"SKUs of each database that inventory.hot_skus shows, at most.",
							"The ones asked for the most since they were loaded; a monitoring tool gets this many series per database, whatever the catalogue's size.",
							&inv_hot_skus,
							10, 0, 100,
							PGC_SUSET, 0,
							NULL, NULL, NULL);
}

static int
SlotCount(void)
{
	return MaxBackends + NUM_AUXILIARY_PROCS;
}

static Size
EntriesSize(void)
{
	return MAXALIGN(mul_size(inv_max_databases, sizeof(InvDbMetrics)));
}

Size
MetricsShmemSize(void)
{
	Size		size = TYPEALIGN(PG_CACHE_LINE_SIZE, sizeof(MetricsShared));

	size = add_size(size, EntriesSize());
	/* room to align the slots on a cache line */
	size = add_size(size, PG_CACHE_LINE_SIZE);
	return add_size(size, mul_size(SlotCount(), sizeof(MetricsSlot)));
}

void
MetricsShmemInit(void)
{
	bool		found;
	char	   *base;

	base = ShmemInitStruct("inventory metrics", MetricsShmemSize(), &found);
	metrics = (MetricsShared *) base;
	dbs = (InvDbMetrics *) (base + TYPEALIGN(PG_CACHE_LINE_SIZE, sizeof(MetricsShared)));
	slots = (MetricsSlot *) TYPEALIGN(PG_CACHE_LINE_SIZE, (char *) dbs + EntriesSize());
	if (found)
		return;
	metrics->lock = &(GetNamedLWLockTranche("inventory"))[INV_LOCK_METRICS].lock;
	memset(dbs, 0, EntriesSize());
	for (int i = 0; i < SlotCount(); i++)
	{
		MetricsCounters *c = &slots[i].s.c;

		slots[i].s.dboid = InvalidOid;
		for (int call = 0; call < INV_NUM_CALLS; call++)
			for (int st = 0; st < INV_NUM_STATUSES; st++)
				pg_atomic_init_u64(&c->told[call][st], 0);
		for (int m = 0; m < INV_NUM_MOVEMENTS; m++)
			pg_atomic_init_u64(&c->committed[m], 0);
	}
}

/* The entry of a database, taken if it has none; NULL when all are taken. */
static InvDbMetrics *
EntryFor(Oid dboid)
{
	InvDbMetrics *free_entry = NULL;

	Assert(LWLockHeldByMeInMode(metrics->lock, LW_EXCLUSIVE));
	for (int i = 0; i < inv_max_databases; i++)
	{
		if (dbs[i].dboid == dboid)
			return &dbs[i];
		if (free_entry == NULL && dbs[i].dboid == InvalidOid)
			free_entry = &dbs[i];
	}
	if (free_entry != NULL)
	{
		memset(free_entry, 0, sizeof(InvDbMetrics));
		free_entry->dboid = dboid;
	}
	return free_entry;
}

static inline void
Bump(pg_atomic_uint64 *counter, uint64 n)
{
	/* only the slot's owner writes it: no locked instruction needed */
	pg_atomic_write_u64(counter, pg_atomic_read_u64(counter) + n);
}

/* At exit: moves the slot's counts into its database's entry. */
static void
FoldSlot(int code, Datum arg)
{
	MetricsSlot *slot = my_slot;
	InvDbMetrics *entry;

	if (slot == NULL)
		return;
	LWLockAcquire(metrics->lock, LW_EXCLUSIVE);
	entry = EntryFor(slot->s.dboid);
	for (int call = 0; call < INV_NUM_CALLS; call++)
		for (int st = 0; st < INV_NUM_STATUSES; st++)
		{
			pg_atomic_uint64 *c = &slot->s.c.told[call][st];

			if (entry != NULL)
				entry->told[call][st] += pg_atomic_read_u64(c);
			pg_atomic_write_u64(c, 0);
		}
	for (int m = 0; m < INV_NUM_MOVEMENTS; m++)
	{
		pg_atomic_uint64 *c = &slot->s.c.committed[m];

		if (entry != NULL)
			entry->committed[m] += pg_atomic_read_u64(c);
		pg_atomic_write_u64(c, 0);
	}
	slot->s.dboid = InvalidOid;
	LWLockRelease(metrics->lock);
	my_slot = NULL;
	if (entry == NULL)
		ereport(LOG,
				(errmsg("inventory: the counters of this session were not kept"),
				 errdetail_plural("The %d entry for databases is taken.",
								  "All %d entries for databases are taken.",
								  inv_max_databases, inv_max_databases),
				 errhint("Read inventory.call_stats to let go of dropped databases' counters, or raise inventory.max_databases.")));
}

/* This backend's slot, claimed for its database at the first count. */
static MetricsSlot *
MySlot(void)
{
	if (likely(my_slot != NULL))
		return my_slot;
	if (metrics == NULL || MyProc == NULL || !OidIsValid(MyDatabaseId))
		return NULL;
	LWLockAcquire(metrics->lock, LW_EXCLUSIVE);
	my_slot = &slots[MyProc->pgprocno];
	Assert(my_slot->s.dboid == InvalidOid);
	my_slot->s.dboid = MyDatabaseId;
	LWLockRelease(metrics->lock);
	before_shmem_exit(FoldSlot, (Datum) 0);
	return my_slot;
}

/* The status a call answers, by name. */
InvStatus
MetricsStatus(const char *status)
{
	for (int st = 0; st < INV_NUM_STATUSES; st++)
		if (strcmp(status, inv_status_names[st]) == 0)
			return (InvStatus) st;
	elog(ERROR, "unexpected status \"%s\"", status);
	pg_unreachable();
}

/* A call answered status to its caller n times. */
void
MetricsTold(InvCall call, InvStatus status, int64 n)
{
	MetricsSlot *slot = MySlot();

	if (slot != NULL)
		Bump(&slot->s.c.told[call][status], n);
}

/*
 * This backend's transaction committed these movements.  Runs in the
 * commit callback: it must not fail, so a slot is claimed here only if the
 * transaction's calls have not claimed it already (the workers' and the
 * express writers' commits, which answer nobody).
 */
void
MetricsCommitted(const InvCounters *counts)
{
	MetricsSlot *slot = MySlot();
	pg_atomic_uint64 *c;

	if (slot == NULL)
		return;
	c = slot->s.c.committed;
	for (int m = 0; m < INV_NUM_MOVEMENTS; m++)
		if (counts->moves[m] != 0)
			Bump(&c[m], counts->moves[m]);
}

/* Can the call answer the status?  Readers show these even at zero. */
bool
MetricsCallAnswers(InvCall call, InvStatus status)
{
	return (call_answers[call] & (1 << status)) != 0;
}

/* Adds a slot's counters to a database's copy. */
static void
AddSlot(InvDbMetrics *dst, const MetricsCounters *c)
{
	for (int call = 0; call < INV_NUM_CALLS; call++)
		for (int st = 0; st < INV_NUM_STATUSES; st++)
			dst->told[call][st] += pg_atomic_read_u64(unconstify(pg_atomic_uint64 *, &c->told[call][st]));
	for (int m = 0; m < INV_NUM_MOVEMENTS; m++)
		dst->committed[m] += pg_atomic_read_u64(unconstify(pg_atomic_uint64 *, &c->committed[m]));
}

/*
 * Every database's totals, summed: a palloc'd array, one element per
 * database that has counted since the server started.
 */
InvDbMetrics *
MetricsRead(int *count)
{
	InvDbMetrics *out;
	int			n = 0;

	int			used = 0;

	*count = 0;
	if (metrics == NULL)
		return NULL;
	LWLockAcquire(metrics->lock, LW_SHARED);
	for (int i = 0; i < inv_max_databases; i++)
		if (dbs[i].dboid != InvalidOid)
			used++;
	/* no more databases than entries in use and claimed slots */
	out = palloc0(mul_size(used + SlotCount(), sizeof(InvDbMetrics)));
	for (int i = 0; i < inv_max_databases; i++)
		if (dbs[i].dboid != InvalidOid)
			out[n++] = dbs[i];
	for (int i = 0; i < SlotCount(); i++)
	{
		MetricsSlot *slot = &slots[i];
		int			j;

		if (slot->s.dboid == InvalidOid)
			continue;
		for (j = 0; j < n; j++)
			if (out[j].dboid == slot->s.dboid)
				break;
		if (j == n)
			out[n++].dboid = slot->s.dboid;
		AddSlot(&out[j], &slot->s.c);
	}
	LWLockRelease(metrics->lock);
	*count = n;
	return out;
}

/* The database is gone: frees its entry. */
void
MetricsForget(Oid dboid)
{
	if (metrics == NULL)
		return;
	LWLockAcquire(metrics->lock, LW_EXCLUSIVE);
	for (int i = 0; i < inv_max_databases; i++)
		if (dbs[i].dboid == dboid)
			dbs[i].dboid = InvalidOid;
	LWLockRelease(metrics->lock);
}
