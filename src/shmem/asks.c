/*
 * asks.c
 *	  Asks of a reconciler that were ended by force, kept for the next
 *	  round of their database.
 *
 * A reconciler that runs on past its timeout is ended by force: its
 * process exits (FATAL), and its transaction -- where the ask would have
 * been recorded -- aborts.  So the process notes the ask here as it exits
 * (maintenance/reconcile.c), and the next round of the database, in
 * whatever process, records it as a failed ask, so that the order is not
 * asked again before its retry and is expired once asked enough.  A crash
 * of the server loses the notes with the rest of shared memory; the
 * orders are then asked again, as after any restart.
 *
 * Locking contract
 * ----------------
 * asks->mutex, a spinlock, protects the array; it is held to copy one
 * entry in or out.  asks->count, an atomic, says whether any entry is
 * used, so that a round reads one word when none is.
 */
#include "postgres.h"

#include "port/atomics.h"
#include "storage/shmem.h"
#include "storage/spin.h"

#include "shmem/asks.h"

typedef struct AsksShared
{
	slock_t		mutex;
	pg_atomic_uint32 count;
	uint32		next;			/* where the next note goes, round robin */
	AskEnded	ended[ASKS_ENDED_MAX];
} AsksShared;

static AsksShared *asks = NULL;

Size
AsksShmemSize(void)
{
	return sizeof(AsksShared);
}

void
AsksShmemInit(void)
{
	bool		found;

	asks = ShmemInitStruct("inventory asks ended", AsksShmemSize(), &found);
	if (found)
		return;
	SpinLockInit(&asks->mutex);
	pg_atomic_init_u32(&asks->count, 0);
	asks->next = 0;
	memset(asks->ended, 0, sizeof(asks->ended));
}

/* Notes an ask ended by force; a full array forgets its oldest note. */
void
AsksNoteEnded(const AskEnded *ask)
{
	AskEnded   *slot = NULL;

	if (asks == NULL)
		return;
	SpinLockAcquire(&asks->mutex);
	for (int i = 0; i < ASKS_ENDED_MAX && slot == NULL; i++)
	{
		if (asks->ended[i].dboid == InvalidOid)
			slot = &asks->ended[i];
	}
	if (slot == NULL)
	{
		slot = &asks->ended[asks->next];
		asks->next = (asks->next + 1) % ASKS_ENDED_MAX;
	}
	else
		pg_atomic_fetch_add_u32(&asks->count, 1);
	*slot = *ask;
	SpinLockRelease(&asks->mutex);
}

/* Takes up to max notes of the database into asks; how many. */
int
AsksTakeEnded(Oid dboid, AskEnded *out, int max)
{
	int			n = 0;

	if (asks == NULL || pg_atomic_read_u32(&asks->count) == 0)
		return 0;
	SpinLockAcquire(&asks->mutex);
	for (int i = 0; i < ASKS_ENDED_MAX && n < max; i++)
	{
		if (asks->ended[i].dboid != dboid)
			continue;
		out[n++] = asks->ended[i];
		asks->ended[i].dboid = InvalidOid;
		pg_atomic_fetch_sub_u32(&asks->count, 1);
	}
	SpinLockRelease(&asks->mutex);
	return n;
}
