/*
 * markers.c
 *	  Markers in the logical decoding stream of a database, for the
 *	  consumers of the tables' changes (a CDC tool reading a pgoutput
 *	  publication, wal2json): which changes are housekeeping or history
 *	  rather than movements.
 *
 * A fold rewrites ledger rows (folded = true) and inventory.sku's base
 * counters, and changes no SKU's stock; a restore inserts rows that are
 * history, written before in another database.  Each is bracketed, in its
 * transaction, by two transactional logical messages with the prefix
 * "inventory", one as the work begins and one as it ends, whose content is
 * a small JSON object:
 *
 *	{"event":"fold","phase":"begin"}
 *	{"event":"fold","phase":"end","rows":120,"skus":3}
 *	{"event":"restore","phase":"begin","table":"inventory.ledger"}
 *	{"event":"restore","phase":"end","table":"inventory.ledger","rows":5000}
 *
 * The changes of the tables between the two are the work's.  The count of
 * a fold is known only once its one statement has run, hence the second
 * message.  A transactional message is decoded in its place within its
 * transaction, and goes with it if the transaction (or its subtransaction)
 * aborts.
 *
 * Only when wal_level is logical (below it nothing can decode them, and
 * they would cost WAL for nothing), and where WAL can be written: on a
 * standby the statement itself fails, with its own error.
 */
#include "postgres.h"

#include "access/xlog.h"
#include "lib/stringinfo.h"
#include "replication/message.h"
#include "utils/json.h"
#include "utils/lsyscache.h"

#include "tables/markers.h"

/* the prefix of every message the extension writes */
#define MARKER_PREFIX "inventory"

static bool
Wanted(void)
{
	return XLogLogicalInfoActive() && XLogInsertAllowed();
}

static void
Begin(StringInfo buf, const char *event, const char *phase)
{
	initStringInfo(buf);
	appendStringInfo(buf, "{\"event\":\"%s\",\"phase\":\"%s\"", event, phase);
}

static void
AppendTable(StringInfo buf, Oid relid)
{
	char	   *nsp = get_namespace_name(get_rel_namespace(relid));
	char	   *rel = get_rel_name(relid);
	char	   *name = psprintf("%s.%s", nsp ? nsp : "?", rel ? rel : "?");

	appendStringInfoString(buf, ",\"table\":");
	escape_json(buf, name);
}

static void
Emit(StringInfo buf)
{
	appendStringInfoChar(buf, '}');
	(void) LogLogicalMessage(MARKER_PREFIX, buf->data, buf->len, true);
	pfree(buf->data);
}

/* A fold begins in this transaction: its changes follow. */
void
MarkFoldBegin(void)
{
	StringInfoData buf;

	if (!Wanted())
		return;
	Begin(&buf, "fold", "begin");
	Emit(&buf);
}

/* The fold has marked rows movements folded into skus SKUs' base rows. */
void
MarkFoldEnd(int64 rows, int64 skus)
{
	StringInfoData buf;

	if (!Wanted())
		return;
	Begin(&buf, "fold", "end");
	appendStringInfo(&buf, ",\"rows\":" INT64_FORMAT ",\"skus\":" INT64_FORMAT, rows, skus);
	Emit(&buf);
}

/* A restore of relid begins in this transaction: its rows follow. */
void
MarkRestoreBegin(Oid relid)
{
	StringInfoData buf;

	if (!Wanted())
		return;
	Begin(&buf, "restore", "begin");
	AppendTable(&buf, relid);
	Emit(&buf);
}

/* The restore of relid has loaded rows rows (negative: not known). */
void
MarkRestoreEnd(Oid relid, int64 rows)
{
	StringInfoData buf;

	if (!Wanted())
		return;
	Begin(&buf, "restore", "end");
	AppendTable(&buf, relid);
	if (rows >= 0)
		appendStringInfo(&buf, ",\"rows\":" INT64_FORMAT, rows);
	Emit(&buf);
}
